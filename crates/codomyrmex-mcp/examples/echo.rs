//! The benchmark subject: a server with one tool, `echo(text: string)`, which returns the text
//! as a single text content block.
//!
//! ```text
//! cargo run --release --example echo -- --stdio
//! ```

use std::sync::Arc;

use codomyrmex_mcp::registry::ToolOutput;
use codomyrmex_mcp::{ContentBlock, McpServer, McpServerConfig, McpToolRegistry};
use serde_json::{Map, Value, json};

fn echo(args: Map<String, Value>) -> ToolOutput {
    let text = args.get("text").and_then(Value::as_str).unwrap_or_default();
    ToolOutput::content(vec![ContentBlock::text(text)])
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "--stdio".into());
    if mode != "--stdio" {
        eprintln!("usage: echo --stdio");
        return std::process::ExitCode::from(2);
    }
    let registry = Arc::new(McpToolRegistry::new());
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to echo back"}},
        "required": ["text"],
    });
    if let Err(e) = registry.register("echo", schema, echo) {
        eprintln!("echo: {e}");
        return std::process::ExitCode::FAILURE;
    }
    // A benchmark subject must not be throttled.
    let config = McpServerConfig::new("echo", codomyrmex_mcp::VERSION).with_rate_limit(None);
    match McpServer::new(config, registry).serve_stdio().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
