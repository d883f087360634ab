//! `codomyrmex-mcp`: an MCP server with sandboxed built-in tools, and a client for any MCP
//! server.
//!
//! - `serve` serves over stdio (or Streamable HTTP with `--http ADDR`). Logs go to stderr;
//!   stdout carries only MCP messages.
//! - `tools` lists the built-in tools with their schemas.
//! - `config` shows the effective configuration (flags > environment > file >
//!   defaults), secrets redacted.
//! - `client --stdio "CMD ..." | --http URL` lists and calls what a server offers.
//!
//! The user's documentation of the command is the guide's part "The `codomyrmex-mcp`
//! command" (`docs/binary.md`, `docs/client.md`, `docs/gateway.md`); these API docs are the
//! internals'.

// The doc comments of `cli.rs` are clap's `--help` text, where a URL is printed as written:
// rustdoc's `<...>` would show in the terminal.
#![allow(rustdoc::bare_urls)]

mod cli;
mod client_cmd;
mod client_elicit;
mod client_failure;
mod client_input;
mod client_load;
mod client_oauth;
mod client_progress;
mod client_skills;
mod config;
mod gateway;
#[cfg(test)]
mod guide_samples_tests;
mod logging;
#[cfg(feature = "otel")]
mod otel;
mod portable;
mod root_resources;
mod serve;
mod signals;
mod skills;
mod tools;

use std::process::ExitCode;

use cli::{Cli, Command};

/// jemalloc rather than the system allocator: it hands freed memory back to the OS (its
/// background thread purges pages unused for 10 s), so the server's resident memory falls back
/// to its baseline once idle sessions expire; glibc malloc keeps freed pages. Measured in
/// docs/reliability.md; `tests/faults_http.rs` in the library declares the same allocator.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Writes to stdout; a closed pipe (`| head`) is not an error worth a panic.
pub(crate) fn emit(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("codomyrmex-mcp: {message}");
    ExitCode::FAILURE
}

fn main() -> ExitCode {
    // `json.query` evaluates filters in a child process running this program, and each
    // call's children are led by a guard running this program.
    match std::env::args_os().nth(1) {
        Some(a) if a == tools::json::WORKER_ARG => return tools::json::worker_main(),
        Some(a) if a == tools::process::GUARD_ARG => return tools::process::guard_main(),
        _ => {}
    }
    let cli = match cli::parse() {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let _log = match logging::init() {
        Ok(guard) => guard,
        Err(e) => return fail(e),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(e),
    };
    runtime.block_on(run(cli))
}

async fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Serve { server, stdio } => match config::resolve(&server) {
            Err(e) => fail(e),
            Ok(effective) => match serve::serve(effective, stdio).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(e),
            },
        },
        Command::Tools { server, table } => {
            match config::resolve(&server)
                .map_err(|e| e.to_string())
                .and_then(|c| serve::tools(&c, table))
            {
                Ok(text) => {
                    emit(&format!("{}\n", text.trim_end()));
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
        Command::Config {
            server,
            json,
            example,
            ..
        } => {
            if example {
                emit(config::EXAMPLE);
                return ExitCode::SUCCESS;
            }
            let printed = config::resolve(&server)
                .map_err(|e| e.to_string())
                .and_then(|c| if json { c.to_json() } else { c.to_toml() });
            match printed {
                Ok(text) => {
                    emit(&format!("{}\n", text.trim_end()));
                    ExitCode::SUCCESS
                }
                Err(e) => fail(e),
            }
        }
        Command::Client(args) => client_cmd::run(*args).await,
        Command::Gateway(args) => gateway::run(args).await,
    }
}
