use codomyrmex_mcp::mcp_tool;

#[mcp_tool(name = "has space")]
fn spaced() {}

#[mcp_tool(readonly, timeout = "soon")]
fn misspelled() {}

#[mcp_tool]
fn twice(#[arg(rename = "b")] a: i32, b: i32) -> i32 {
    a + b
}

#[mcp_tool]
fn destructured((a, b): (i32, i32)) -> i32 {
    a + b
}

fn main() {}
