use codomyrmex_mcp::{mcp_prompt, mcp_resource};

#[mcp_prompt(name = "a", name = "b")]
fn named_twice() -> String {
    String::new()
}

#[mcp_prompt(colour = "red")]
fn unknown_prompt_argument() -> String {
    String::new()
}

#[mcp_resource(uri = "x://a", uri = "x://b")]
fn uri_twice() -> String {
    String::new()
}

#[mcp_resource(uri = "x://c", size = 1)]
fn unknown_resource_argument() -> String {
    String::new()
}

fn main() {}
