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

#[mcp_tool]
fn bad_bounds(
    #[arg(min_length = -1)] a: String,
    #[arg(minimum = "one")] b: i32,
    #[arg(minimum = 5, maximum = 1)] c: i32,
    #[arg(min_items = 1.5)] d: Vec<i32>,
) {
    let _ = (a, b, c, d);
}

fn main() {}
