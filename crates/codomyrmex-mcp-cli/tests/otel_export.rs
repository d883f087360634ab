//! The `otel` feature (issue #16, item 7): with `OTEL_EXPORTER_OTLP_ENDPOINT` set, the real
//! binary exports its request spans over OTLP/HTTP, and a request's W3C `traceparent`
//! makes the caller's span their parent. The collector here is a minimal HTTP server that
//! records what it is sent; the check reads the protobuf bytes for the caller's trace id and
//! span id, which an exported child span carries as its `trace_id` and `parent_span_id`.
//!
//! Run with `cargo test -p codomyrmex-mcp-cli --features otel --test otel_export`.
#![cfg(feature = "otel")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_codomyrmex-mcp");
const DEADLINE: Duration = Duration::from_secs(60);
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// What the collector received: (path, body) per request.
type Received = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// A collector on a free port answering every request with an empty `200`.
fn collector() -> (u16, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let received: Received = Arc::default();
    let sink = received.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { break };
            let sink = sink.clone();
            std::thread::spawn(move || serve_collector(conn, &sink));
        }
    });
    (port, received)
}

/// Reads requests off one keep-alive connection until it closes.
fn serve_collector(conn: TcpStream, sink: &Received) {
    let mut writer = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_owned();
        let (mut length, mut chunked) = (0usize, false);
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let lower = line.to_ascii_lowercase();
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                reader.read_line(&mut size).unwrap();
                let size = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0; size + 2];
                reader.read_exact(&mut chunk).unwrap();
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else {
            body.resize(length, 0);
            reader.read_exact(&mut body).unwrap();
        }
        sink.lock().unwrap().push((path, body));
        let _ = writer.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n",
        );
    }
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn request_spans_are_exported_as_children_of_the_callers_span() {
    let (port, received) = collector();
    let dir = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("CODOMYRMEX_MCP_") || k.starts_with("OTEL_") {
            command.env_remove(k);
        }
    }
    let mut child = command
        .args([
            "serve",
            "--root",
            dir.path().to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
        ])
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            format!("http://127.0.0.1:{port}"),
        )
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let server = Server(child);
    let mut lines = stderr.lines();
    let addr = loop {
        let line = lines.next().expect("the server exited").unwrap();
        if let Some(addr) = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.strip_suffix("/mcp"))
        {
            break addr.to_owned();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));

    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }},
    })
    .to_string();
    let mut conn = TcpStream::connect(&addr).unwrap();
    write!(
        conn,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/list\r\ntraceparent: 00-{TRACE_ID}-{PARENT_ID}-01\r\n\
         Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    conn.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");

    let (trace, parent) = (hex(TRACE_ID), hex(PARENT_ID));
    let deadline = Instant::now() + DEADLINE;
    loop {
        {
            let got = received.lock().unwrap();
            if let Some((path, body)) = got.iter().find(|(_, b)| contains(b, &trace)) {
                assert_eq!(path, "/v1/traces");
                assert!(contains(body, &parent), "the caller's span is the parent");
                assert!(contains(body, b"mcp.request"), "the request span");
                assert!(contains(body, b"codomyrmex-mcp"), "the service name");
                break;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no span of trace {TRACE_ID} reached the collector: {} requests",
            received.lock().unwrap().len()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(server);
}
