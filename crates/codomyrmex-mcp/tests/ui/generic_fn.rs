use codomyrmex_mcp::mcp_tool;

#[mcp_tool]
fn first<T: serde::de::DeserializeOwned + schemars::JsonSchema>(items: Vec<T>) -> usize {
    items.len()
}

#[mcp_tool]
fn show(value: impl std::fmt::Display) -> String {
    value.to_string()
}

fn main() {}
