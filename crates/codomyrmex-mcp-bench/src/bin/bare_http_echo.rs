//! The HTTP yardstick: a bare hyper handler that parses the JSON-RPC body and echoes, with no
//! MCP machinery at all.
//!
//! ```text
//! bare_http_echo [--bind ADDR] [--header-timeout]
//! ```
//!
//! Every POST body is parsed into a `serde_json::Value`; `tools/call` is answered with a
//! `CallToolResult`-shaped result holding the `text` argument as a single text content block,
//! `initialize` with a minimal result and an `Mcp-Session-Id` (so the load tool's legacy flow
//! works too), notifications with `202`, anything else with `-32601`. Headers are not checked.
//!
//! hyper's HTTP/1.1 server on tokio's multi-threaded runtime, keep-alive, `TCP_NODELAY` on every
//! accepted socket. It prints `LISTENING ADDR` on stdout once bound (default `127.0.0.1:0`) and
//! runs until it is killed. `--header-timeout` adds hyper's 10 s header-read timeout (on tokio's
//! timer), as codomyrmex-mcp's server has, to measure what that costs.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

static SESSIONS: AtomicU64 = AtomicU64::new(1);

fn answer(request: &Value) -> Option<(Value, Option<String>)> {
    let id = request.get("id")?.clone();
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let params = request.get("params");
    Some(match method {
        "tools/call" => {
            let text = params
                .and_then(|p| p.get("arguments"))
                .and_then(|a| a.get("text"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let reply = json!({
                "jsonrpc": "2.0",
                "id": id,
                "result": {"content": [{"type": "text", "text": text}]},
            });
            (reply, None)
        }
        "initialize" => {
            let version = params
                .and_then(|p| p.get("protocolVersion"))
                .cloned()
                .unwrap_or_else(|| json!("2025-11-25"));
            let reply = json!({
                "jsonrpc": "2.0",
                "id": id,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "bare-http-echo", "version": env!("CARGO_PKG_VERSION")},
                },
            });
            let session = format!("bare-{}", SESSIONS.fetch_add(1, Ordering::Relaxed));
            (reply, Some(session))
        }
        "ping" => (json!({"jsonrpc": "2.0", "id": id, "result": {}}), None),
        _ => (
            json!({
                "jsonrpc": "2.0",
                "id": id,
                "error": {"code": -32601, "message": "Method not found"},
            }),
            None,
        ),
    })
}

fn respond(status: StatusCode, body: Vec<u8>) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    if status != StatusCode::ACCEPTED {
        resp.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    }
    resp
}

async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = match req.into_body().collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return Ok(respond(StatusCode::BAD_REQUEST, Vec::new())),
    };
    let reply = match serde_json::from_slice::<Value>(&body) {
        Ok(request) => answer(&request),
        Err(_) => Some((
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}),
            None,
        )),
    };
    let Some((reply, session)) = reply else {
        return Ok(respond(StatusCode::ACCEPTED, Vec::new()));
    };
    let bytes = serde_json::to_vec(&reply).unwrap_or_default();
    let mut resp = respond(StatusCode::OK, bytes);
    if let Some(s) = session
        && let Ok(v) = HeaderValue::from_str(&s)
    {
        resp.headers_mut().insert("mcp-session-id", v);
    }
    Ok(resp)
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut bind = SocketAddr::from(([127, 0, 0, 1], 0));
    let mut header_timeout = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--bind" => match args.next().map(|a| a.parse()) {
                Some(Ok(a)) => bind = a,
                _ => {
                    eprintln!("bare_http_echo: --bind needs an address");
                    return ExitCode::from(2);
                }
            },
            "--header-timeout" => header_timeout = true,
            _ => {
                eprintln!("usage: bare_http_echo [--bind ADDR] [--header-timeout]");
                return ExitCode::from(2);
            }
        }
    }
    match serve(bind, header_timeout).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bare_http_echo: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(bind: SocketAddr, header_timeout: bool) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(bind).await?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "LISTENING {}", listener.local_addr()?)?;
        out.flush()?;
    }
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(a) => a,
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.keep_alive(true);
            if header_timeout {
                builder
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(std::time::Duration::from_secs(10));
            }
            let _ = builder
                .serve_connection(TokioIo::new(stream), hyper::service::service_fn(handle))
                .await;
        });
    }
}
