//! The README's "A tool in a dozen lines", compiled: the README's Rust block is the text
//! between the `ANCHOR` comments, which the CLI's `guide_samples_tests` compares with it.
//!
//! ```text
//! cargo run --example readme     # a server with one tool, `math.add`, over stdio
//! ```

// ANCHOR: all
use codomyrmex_mcp::{McpServer, McpServerConfig, McpToolRegistry, mcp_tool};

/// Adds two numbers.
#[mcp_tool(name = "math.add", read_only)]
fn add(a: i64, #[arg(default = 1)] b: i64) -> i64 {
    a + b
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tools = McpToolRegistry::discovered()?.into();
    let config = McpServerConfig::new("calc", "1.0.0");
    Ok(McpServer::new(config, tools).serve_stdio().await?)
}
// ANCHOR_END: all
