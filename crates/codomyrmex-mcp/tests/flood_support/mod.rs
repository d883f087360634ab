//! A flood of new sessions (issue #26, finding 11): four clients send `initialize` at full
//! speed, each over one keep-alive connection (raw HTTP/1.1, so that 100,000 requests need
//! no 100,000 ephemeral ports), against one server with the default cap of 10,000 sessions.
//! Every session they open is idle once answered, so every `initialize` must be answered
//! `200`: the least recently used idle session makes room.
//!
//! What is flooded: with `CODOMYRMEX_MCP_FLOOD_BIN` naming a `codomyrmex-mcp` binary (CI
//! passes the release binary it builds), that binary, started as `serve --http` on a free
//! loopback port ([`Served`]); otherwise a server in the test's own process. The binary runs
//! with `--no-rate-limit`: one client address at full speed is what the per-client rate
//! limit is for, and the flood measures session admission, not that limit. Against the
//! binary the check also reads its `GET /metrics` (no refusal counted, the sessions alive)
//! and its log (no refusal logged).
//!
//! How many: `MCP_FLOOD_INITIALIZES`, by default 100,000 against the binary or in a release
//! build (the finding's count), and 50,000 in a debug build's own process (five times the
//! cap, so the table is filled and turned over four times). Fewer than twice the cap is
//! refused: it would not prove the property. The hang guard is [`flood_hang`].
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The default session cap ([`HttpConfig::max_sessions`](codomyrmex_mcp::transport::http::HttpConfig)).
pub const CAP: usize = 10_000;

/// Concurrent clients.
pub const CLIENTS: usize = 4;

/// A guard against a hang, never a performance assertion: generous for a debug build on two
/// cores (about 5 ms of CPU per `initialize` there, server and clients together).
/// `MCP_FLOOD_HANG_SECS` raises it on a machine shared with other work.
pub fn flood_hang() -> Duration {
    let secs = std::env::var("MCP_FLOOD_HANG_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    Duration::from_secs(secs)
}

/// How many `initialize`s to send (see the module docs).
pub fn flood_count() -> usize {
    let default = if cfg!(debug_assertions) && flood_bin().is_none() {
        5 * CAP
    } else {
        100_000
    };
    let n = std::env::var("MCP_FLOOD_INITIALIZES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    assert!(
        n >= 2 * CAP,
        "MCP_FLOOD_INITIALIZES={n}: at least {} are needed to exceed the cap",
        2 * CAP
    );
    n
}

/// What the flood got back.
#[derive(Debug, Default)]
pub struct Flood {
    /// `initialize`s answered `200` with a session id.
    pub ok: usize,
    /// The others: status and body, the first few of them.
    pub refused: Vec<(u16, String)>,
    /// How many were not answered `200` in all.
    pub not_ok: usize,
    /// The first session ids opened (by any client), oldest first.
    pub first: Vec<String>,
    /// The last session id each client opened.
    pub last: Vec<String>,
    pub elapsed: Duration,
}

/// The request bytes of a legacy `initialize` to `addr`.
fn initialize(addr: SocketAddr) -> Vec<u8> {
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"0"}}}"#;
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\naccept: application/json, text/event-stream\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        addr.port(),
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    req
}

/// One response read off a keep-alive connection: status, session id, body. `None` when the
/// server closed the connection first.
async fn response(
    conn: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> Option<(u16, Option<String>, String)> {
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    };
    let length: usize = header("content-length")
        .unwrap_or_else(|| panic!("a response without content-length: {head}"))
        .parse()
        .unwrap();
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = conn.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..head_end + length]).into_owned();
    buf.drain(..head_end + length);
    Some((status, header("mcp-session-id"), body))
}

/// One client: `count` `initialize`s one after the other on a keep-alive connection (opened
/// again if the server closes it).
async fn client(addr: SocketAddr, count: usize, done: Arc<AtomicUsize>) -> Flood {
    let req = initialize(addr);
    let mut out = Flood::default();
    let mut conn: Option<TcpStream> = None;
    let mut buf = Vec::new();
    let mut sent = 0;
    while sent < count {
        if conn.is_none() {
            let c = TcpStream::connect(addr).await.unwrap();
            c.set_nodelay(true).unwrap();
            buf.clear();
            conn = Some(c);
        }
        let Some(stream) = conn.as_mut() else {
            continue;
        };
        if stream.write_all(&req).await.is_err() {
            conn = None;
            continue;
        }
        let Some((status, sid, body)) = response(stream, &mut buf).await else {
            // Closed under us before the answer: the request is sent again.
            conn = None;
            continue;
        };
        sent += 1;
        done.fetch_add(1, Ordering::Relaxed);
        match (status, sid) {
            (200, Some(sid)) => {
                out.ok += 1;
                if out.first.len() < 16 {
                    out.first.push(sid.clone());
                }
                out.last = vec![sid];
            }
            (status, _) => {
                out.not_ok += 1;
                if out.refused.len() < 8 {
                    out.refused.push((status, body));
                }
            }
        }
    }
    out
}

/// [`CLIENTS`] clients sending `total` `initialize`s in all to `addr`, at full speed.
pub async fn flood(addr: SocketAddr, total: usize) -> Flood {
    let started = Instant::now();
    let done = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let share = total / CLIENTS + usize::from(i < total % CLIENTS);
            tokio::spawn(client(addr, share, done.clone()))
        })
        .collect();
    let mut all = Flood::default();
    let hang = flood_hang();
    for c in clients {
        let left = hang.saturating_sub(started.elapsed());
        let Ok(f) = tokio::time::timeout(left, c).await else {
            panic!(
                "hang guard: {} of {total} initializes answered in {hang:?}",
                done.load(Ordering::Relaxed)
            );
        };
        let f = f.expect("a client");
        all.ok += f.ok;
        all.not_ok += f.not_ok;
        all.refused.extend(f.refused);
        all.first.extend(f.first);
        all.last.extend(f.last);
    }
    all.elapsed = started.elapsed();
    all
}

/// The status of a `tools/list` on session `sid` (`404` once it was evicted).
pub async fn list_status(addr: SocketAddr, sid: &str) -> u16 {
    let body = br#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{}\r\naccept: application/json, text/event-stream\r\ncontent-type: application/json\r\nmcp-session-id: {sid}\r\nmcp-protocol-version: 2025-11-25\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        addr.port(),
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(&req).await.unwrap();
    let mut buf = Vec::new();
    let (status, _, _) =
        tokio::time::timeout(Duration::from_secs(20), response(&mut conn, &mut buf))
            .await
            .expect("an answer in time")
            .expect("an answer");
    status
}

/// Checks the flood's outcome: every `initialize` answered `200`, the oldest sessions
/// evicted, the newest alive, the store at the cap. `stored` is the store's count afterwards.
pub async fn check(addr: SocketAddr, total: usize, flood: &Flood, stored: usize) {
    eprintln!(
        "{total} initializes from {CLIENTS} clients in {:.1?}: {} answered 200, {} not",
        flood.elapsed, flood.ok, flood.not_ok
    );
    assert_eq!(
        flood.not_ok, 0,
        "{} of {total} initializes refused although every older session was idle; first: {:?}",
        flood.not_ok, flood.refused
    );
    assert_eq!(flood.ok, total);
    assert_eq!(stored, CAP, "the store holds the cap, no more, no less");
    // The first sessions of each client were evicted long ago; the last ones live.
    for sid in &flood.first {
        assert_eq!(
            list_status(addr, sid).await,
            404,
            "an old session was evicted"
        );
    }
    for sid in &flood.last {
        assert_eq!(list_status(addr, sid).await, 200, "a new session lives");
    }
}

/// The binary to flood instead of an in-process server: `CODOMYRMEX_MCP_FLOOD_BIN`.
pub fn flood_bin() -> Option<PathBuf> {
    std::env::var_os("CODOMYRMEX_MCP_FLOOD_BIN")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// A `codomyrmex-mcp serve --http` child on a free loopback port, its stderr kept (each line
/// at most 4 KiB, at most 10,000 lines: the log of refusals is rate-limited). Killed on drop.
pub struct Served {
    child: Child,
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    /// Starts `bin` serving its crate's directory (readonly), with `--store store` when given.
    pub fn start(bin: &std::path::Path, store: Option<&str>) -> Self {
        let mut cmd = Command::new(bin);
        cmd.args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--no-rate-limit",
            "--root",
        ])
        .arg(env!("CARGO_MANIFEST_DIR"))
        .env_remove("CODOMYRMEX_MCP_CONFIG")
        .env_remove("CODOMYRMEX_MCP_AUTH_TOKEN")
        .env_remove("CODOMYRMEX_MCP_STORE")
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        if let Some(url) = store {
            cmd.args(["--store", url]);
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let stderr = child.stderr.take().expect("piped stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let kept = log.clone();
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines() {
                let Ok(mut line) = line else { break };
                let mut end = line.len().min(4096);
                while !line.is_char_boundary(end) {
                    end -= 1;
                }
                line.truncate(end);
                if !sent && let Some(rest) = line.split_once("at http://").map(|(_, r)| r) {
                    let addr = rest.trim_end_matches("/mcp").parse::<SocketAddr>();
                    sent = addr_tx.send(addr).is_ok();
                }
                let mut kept = kept.lock().unwrap();
                if kept.len() < 10_000 {
                    kept.push(line);
                }
            }
        });
        let addr = match addr_rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Ok(addr)) => addr,
            other => {
                let _ = child.kill();
                panic!(
                    "{} did not say where it serves ({other:?}); its log: {:?}",
                    bin.display(),
                    log.lock().unwrap()
                )
            }
        };
        Self { child, addr, log }
    }

    /// The lines the binary wrote to stderr so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// The binary's `GET /metrics` text.
    pub async fn metrics(&self) -> String {
        let req = format!(
            "GET /metrics HTTP/1.1\r\nhost: 127.0.0.1:{}\r\nconnection: close\r\n\r\n",
            self.addr.port()
        );
        let mut conn = TcpStream::connect(self.addr).await.unwrap();
        conn.write_all(req.as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let (status, _, body) =
            tokio::time::timeout(Duration::from_secs(20), response(&mut conn, &mut buf))
                .await
                .expect("an answer in time")
                .expect("an answer");
        assert_eq!(status, 200, "GET /metrics: {body}");
        body
    }

    /// The value of the metric line `name` (with its labels, as written), 0 when absent.
    pub fn metric(text: &str, name: &str) -> f64 {
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
            .unwrap_or(0.0)
    }

    /// Checks what the binary reports of the flood: no refusal counted by
    /// `mcp_http_refusals_total` and none logged (a refusal would be logged with its reason,
    /// rate-limited: `refusals.rs`). Returns the sessions alive it reports.
    pub async fn check_reports(&self) -> usize {
        let text = self.metrics().await;
        let refusals: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("mcp_http_refusals_total{") && !l.ends_with(" 0"))
            .collect();
        assert!(refusals.is_empty(), "refusals counted: {refusals:?}");
        let log = self.log();
        let logged: Vec<&String> = log
            .iter()
            .filter(|l| l.contains("refused a request"))
            .collect();
        assert!(logged.is_empty(), "refusals logged: {logged:?}");
        Self::metric(&text, "mcp_http_sessions") as usize
    }
}
