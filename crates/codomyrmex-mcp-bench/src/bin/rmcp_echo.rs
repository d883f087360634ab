//! The comparison subject: the benchmark's `echo(text: string)` tool served on stdio by rmcp.
//!
//! ```text
//! cargo run --release -p codomyrmex-mcp-bench --bin rmcp_echo            # rmcp::transport::stdio()
//! cargo run --release -p codomyrmex-mcp-bench --bin rmcp_echo -- --pipes # rmcp::transport::stdio_pipes()
//! ```
//!
//! By default it serves on `rmcp::transport::stdio()`, the stdio server transport that rmcp's
//! README lists (tokio's `stdin()`/`stdout()`, which run every read and write on the blocking
//! pool). `--pipes` uses `rmcp::transport::stdio_pipes()`, which rmcp's documentation offers
//! for when both standard streams are pipes (tokio's non-blocking pipe driver).
//!
//! The server is `codomyrmex_mcp_bench::rmcp_subject::Echo`: its tool router is built once and
//! kept in the server, as rmcp's `#[tool_handler(router = ...)]` documentation shows, rather
//! than rebuilt for every call by the macro's default.

use codomyrmex_mcp_bench::rmcp_subject::Echo;
use rmcp::ServiceExt;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let pipes = match std::env::args().nth(1).as_deref() {
        None | Some("--stdio") => false,
        Some("--pipes") => true,
        Some(_) => {
            eprintln!("usage: rmcp_echo [--stdio | --pipes]");
            return std::process::ExitCode::from(2);
        }
    };
    let served = if pipes {
        Echo::new().serve(rmcp::transport::stdio_pipes()).await
    } else {
        Echo::new().serve(rmcp::transport::stdio()).await
    };
    let running = match served {
        Ok(r) => r,
        Err(e) => {
            eprintln!("rmcp_echo: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match running.waiting().await {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmcp_echo: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
