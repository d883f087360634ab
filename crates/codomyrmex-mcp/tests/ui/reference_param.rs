use codomyrmex_mcp::{ToolContext, mcp_tool};

#[mcp_tool]
fn shout(text: &str) -> String {
    text.to_uppercase()
}

#[mcp_tool]
fn sum(values: Vec<&u32>, cx: &mut ToolContext) -> u32 {
    let _ = cx;
    values.into_iter().sum()
}

fn main() {}
