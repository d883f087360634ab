//! The comparison subject over HTTP: the benchmark's `echo(text: string)` tool served by rmcp's
//! Streamable HTTP server (`StreamableHttpService`, nested at `/mcp` in an axum router and
//! served with `axum::serve`, as rmcp's examples and tests do).
//!
//! ```text
//! rmcp_http_echo [--stateless] [--bind ADDR] [--session-idle SECS]
//! ```
//!
//! - default: rmcp's default configuration, session mode (`legacy_session_mode: true`):
//!   `initialize` mints an `Mcp-Session-Id`, every POST is answered with an SSE stream.
//! - `--stateless`: rmcp's stateless JSON mode (`legacy_session_mode: false`,
//!   `json_response: true`): no sessions, plain `application/json` answers.
//! - `--bind ADDR`: the address to listen on (default `127.0.0.1:0`, an ephemeral port). The
//!   bound address is printed on stdout as `LISTENING 127.0.0.1:PORT`.
//! - `--session-idle SECS`: the session manager's idle expiry (`SessionConfig::keep_alive`,
//!   rmcp's default is 300 s), for the idle-sessions case.
//!
//! `TCP_NODELAY` is set on every accepted socket (`ListenerExt::tap_io`): small
//! request/response exchanges must not wait for Nagle and delayed ACKs. rmcp's default
//! Host check allows `127.0.0.1` on any port, so nothing needs configuring for loopback. The
//! process runs until it is killed.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use codomyrmex_mcp_bench::rmcp_subject::Echo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

const USAGE: &str = "usage: rmcp_http_echo [--stateless] [--bind ADDR] [--session-idle SECS]";

struct Options {
    stateless: bool,
    bind: SocketAddr,
    session_idle: Option<Duration>,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        stateless: false,
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        session_idle: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--stateless" => o.stateless = true,
            "--session" => o.stateless = false,
            "--bind" => {
                let v = args.next().ok_or("--bind needs an address")?;
                o.bind = v.parse().map_err(|e| format!("--bind {v:?}: {e}"))?;
            }
            "--session-idle" => {
                let v = args.next().ok_or("--session-idle needs seconds")?;
                let secs: u64 = v
                    .parse()
                    .map_err(|e| format!("--session-idle {v:?}: {e}"))?;
                o.session_idle = Some(Duration::from_secs(secs.max(1)));
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    Ok(o)
}

#[tokio::main]
async fn main() -> ExitCode {
    let options = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("rmcp_http_echo: {e}");
            return ExitCode::from(2);
        }
    };
    match serve(options).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rmcp_http_echo: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(o: Options) -> Result<(), Box<dyn std::error::Error>> {
    let mut sessions = LocalSessionManager::default();
    if let Some(idle) = o.session_idle {
        sessions.session_config.keep_alive = Some(idle);
    }
    let mut config = StreamableHttpServerConfig::default();
    if o.stateless {
        config = config
            .with_legacy_session_mode(false)
            .with_json_response(true);
    }
    let service: StreamableHttpService<Echo, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Echo::new()), Arc::new(sessions), config);
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(o.bind).await?;
    let addr = listener.local_addr()?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "LISTENING {addr}")?;
        out.flush()?;
    }
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router).await?;
    Ok(())
}
