//! `codomyrmex-mcp`: an MCP server with built-in tools.
//!
//! `codomyrmex-mcp serve` serves over stdio. Logs go to stderr; stdout carries only MCP
//! messages.

mod builtins;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand};
use codomyrmex_mcp::{McpServer, McpServerConfig, McpToolRegistry};

#[derive(Debug, Parser)]
#[command(
    name = "codomyrmex-mcp",
    version,
    about = "An MCP server with built-in tools"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve MCP over stdio (newline-delimited JSON-RPC on stdin and stdout).
    Serve {
        /// Default tool timeout, in seconds.
        #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        timeout: u64,
        /// Disable the tool-call rate limit (50 calls/s, burst 100 by default).
        #[arg(long)]
        no_rate_limit: bool,
        /// Serve Streamable HTTP at ADDR (endpoint /mcp) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
    },
    /// List the built-in tools with their schemas, as JSON.
    Tools,
}

fn registry() -> Result<Arc<McpToolRegistry>, codomyrmex_mcp::McpRegistrationError> {
    let registry = Arc::new(McpToolRegistry::new());
    builtins::register(&registry)?;
    Ok(registry)
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("CODOMYRMEX_MCP_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let registry = match registry() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("codomyrmex-mcp: {e}");
            return ExitCode::FAILURE;
        }
    };
    match cli.command {
        Command::Tools => {
            let defs = registry.definitions();
            match serde_json::to_string_pretty(&defs) {
                Ok(s) => {
                    println!("{s}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("codomyrmex-mcp: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Serve {
            timeout,
            no_rate_limit,
            http,
        } => {
            let mut config = McpServerConfig::new("codomyrmex-mcp", codomyrmex_mcp::VERSION)
                .with_instructions("Codomyrmex MCP server. Call codomyrmex.list_registered_tools to see what is available.")
                .with_tool_timeout(Duration::from_secs(timeout));
            if no_rate_limit {
                config = config.with_rate_limit(None);
            }
            let server = McpServer::new(config, registry);
            let outcome = match http {
                None => server.serve_stdio().await.map_err(|e| e.to_string()),
                Some(bind) => {
                    let config = codomyrmex_mcp::transport::http::HttpConfig {
                        bind,
                        ..Default::default()
                    };
                    server.serve_http(config).await.map_err(|e| e.to_string())
                }
            };
            match outcome {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("codomyrmex-mcp: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
