use codomyrmex_mcp::mcp_tool;

#[mcp_tool(blocking)]
async fn fetch(url: String) -> String {
    url
}

#[mcp_tool(blocking = false)]
async fn fine(url: String) -> String {
    url
}

fn main() {}
