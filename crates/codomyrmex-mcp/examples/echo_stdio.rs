//! The stdio benchmark subject: the `echo` example's server ([`echo::server`]) on stdio only.
//!
//! ```text
//! cargo run --release --example echo_stdio
//! ```
//!
//! It is what a stdio server built on this crate links: no HTTP stack, as rmcp's stdio subject
//! (`rmcp_echo` in the bench crate) links none of rmcp's. `echo --stdio` serves the same calls
//! from a binary that can also serve HTTP.

#[path = "echo.rs"]
#[allow(dead_code)]
mod echo;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    if std::env::args().len() > 1 {
        eprintln!("usage: echo_stdio");
        return std::process::ExitCode::from(2);
    }
    let outcome = match echo::server() {
        Ok(server) => server.serve_stdio().await.map_err(|e| e.to_string()),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo_stdio: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
