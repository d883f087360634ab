//! The benchmark subject: a server with one tool, `echo(text: string)`, which returns the text
//! as a single text content block.
//!
//! ```text
//! cargo run --release --example echo -- --stdio
//! cargo run --release --example echo -- --http 127.0.0.1:8080   # serves /mcp
//! ```
//!
//! `echo_stdio` is the same server with stdio only (it builds the server with [`server`]), as
//! rmcp's stdio subject in the bench crate is: a binary that can also serve HTTP links the
//! HTTP stack, and the start-up relocation of its tables and the code pages around what runs
//! count in peak RSS even when only stdio is served.

use std::sync::Arc;

use codomyrmex_mcp::ToolOutput;
use codomyrmex_mcp::{ContentBlock, McpServer, McpServerConfig, McpToolRegistry};
use serde_json::{Map, Value, json};

fn echo(mut args: Map<String, Value>) -> ToolOutput {
    // The arguments are ours: move the text out rather than copy it.
    let text = match args.remove("text") {
        Some(Value::String(text)) => text,
        _ => String::new(),
    };
    ToolOutput::content(vec![ContentBlock::text(text)])
}

/// The benchmark's server: the `echo` tool, no rate limit.
pub fn server() -> Result<McpServer, String> {
    let registry = Arc::new(McpToolRegistry::new());
    let schema = json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to echo back"}},
        "required": ["text"],
    });
    registry
        .register("echo", schema, echo)
        .map_err(|e| e.to_string())?;
    // A benchmark subject must not be throttled.
    let config = McpServerConfig::new("echo", codomyrmex_mcp::VERSION).with_rate_limit(None);
    Ok(McpServer::new(config, registry))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let http: Option<std::net::SocketAddr> = match args.as_slice() {
        [] => None,
        [flag] if flag == "--stdio" => None,
        [flag, addr] if flag == "--http" => match addr.parse() {
            Ok(a) => Some(a),
            Err(e) => {
                eprintln!("echo: invalid address {addr:?}: {e}");
                return std::process::ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: echo [--stdio | --http ADDR]");
            return std::process::ExitCode::from(2);
        }
    };
    let server = match server() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("echo: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let outcome = match http {
        None => server.serve_stdio().await.map_err(|e| e.to_string()),
        Some(bind) => {
            let config = codomyrmex_mcp::transport::http::HttpConfig {
                bind,
                // Nor its HTTP endpoint: every load generator shares one client address.
                rate_limit: None,
                ..Default::default()
            };
            server.serve_http(config).await.map_err(|e| e.to_string())
        }
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
