//! Shared helpers for the HTTP integration tests: a server on an ephemeral loopback port, a
//! raw HTTP/1.1 client over `TcpStream` (so tests can craft hostile requests), an SSE reader,
//! a few tools, and a poll with a hang guard ([`eventually`]).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codomyrmex_mcp::engine::Engine;
use codomyrmex_mcp::transport::http::{HttpConfig, HttpError, HttpServer};
use codomyrmex_mcp::{McpErrorDetail, McpServerConfig, McpToolRegistry, ToolContext};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A generous guard against hangs; never a performance assertion.
pub const HANG: Duration = Duration::from_secs(20);

pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";

/// Counters the test tools write to.
#[derive(Default)]
pub struct Probes {
    /// `wait_cancel` calls that saw their cancellation.
    pub cancelled: AtomicUsize,
    /// `wait_cancel` calls that started.
    pub started: AtomicUsize,
    /// `slow` calls that started.
    pub slow_started: AtomicUsize,
    /// `slow` calls that completed.
    pub finished: AtomicUsize,
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub registry: Arc<McpToolRegistry>,
    pub probes: Arc<Probes>,
    shutdown: Option<oneshot::Sender<()>>,
    pub handle: JoinHandle<Result<(), HttpError>>,
}

impl TestServer {
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }

    /// Starts graceful shutdown; the join handle resolves when it is over.
    pub fn begin_shutdown(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }

    pub async fn stop(mut self) {
        self.begin_shutdown();
        let _ = tokio::time::timeout(HANG, &mut self.handle).await;
    }
}

fn open_schema() -> Value {
    json!({"type": "object"})
}

/// The test tools: `echo`, `slow`, `progress`, `wait_cancel`, `whoami`.
pub fn registry(probes: &Arc<Probes>) -> Arc<McpToolRegistry> {
    let r = Arc::new(McpToolRegistry::new());
    r.register(
        "echo",
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        |args: Map<String, Value>| -> Result<Value, McpErrorDetail> {
            Ok(json!({"echo": args.get("text").cloned().unwrap_or(Value::Null)}))
        },
    )
    .unwrap();
    let p = probes.clone();
    r.register(
        "slow",
        json!({"type": "object", "properties": {"ms": {"type": "integer"}}}),
        move |args: Map<String, Value>| {
            let p = p.clone();
            async move {
                p.slow_started.fetch_add(1, Ordering::SeqCst);
                let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(300);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                p.finished.fetch_add(1, Ordering::SeqCst);
                Ok::<Value, McpErrorDetail>(json!({"slept": ms}))
            }
        },
    )
    .unwrap();
    r.register(
        "progress",
        open_schema(),
        |_: Map<String, Value>, cx: ToolContext| async move {
            for i in 1..=3 {
                cx.progress(f64::from(i), Some(3.0), Some(&format!("step {i}")));
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok::<Value, McpErrorDetail>(json!({"done": true}))
        },
    )
    .unwrap();
    let p = probes.clone();
    r.register(
        "wait_cancel",
        open_schema(),
        move |_: Map<String, Value>, cx: ToolContext| {
            let p = p.clone();
            async move {
                p.started.fetch_add(1, Ordering::SeqCst);
                // A dropped request drops this future too, so the cancellation is recorded by
                // work spawned with the context's token (the pattern for tools that spawn).
                let token = cx.cancellation_token();
                let watcher = p.clone();
                tokio::spawn(async move {
                    token.cancelled().await;
                    watcher.cancelled.fetch_add(1, Ordering::SeqCst);
                });
                // Report progress first so the response is an SSE stream already open.
                cx.progress(0.0, None, Some("waiting"));
                tokio::select! {
                    () = cx.cancelled() => {}
                    () = tokio::time::sleep(Duration::from_secs(30)) => {}
                }
                Ok::<Value, McpErrorDetail>(json!({"cancelled": cx.is_cancelled()}))
            }
        },
    )
    .unwrap();
    r.register(
        "whoami",
        open_schema(),
        |_: Map<String, Value>, cx: ToolContext| -> Result<Value, McpErrorDetail> {
            Ok(match cx.principal() {
                Some(p) => json!({"subject": p.subject, "scopes": p.scopes}),
                None => json!({"subject": null}),
            })
        },
    )
    .unwrap();
    r
}

/// A server with the test tools and `config` (its bind address is replaced by an ephemeral
/// loopback port unless `keep_bind`).
pub async fn start(config: HttpConfig) -> TestServer {
    let probes = Arc::new(Probes::default());
    let registry = registry(&probes);
    start_with(config, registry, probes).await
}

pub async fn start_with(
    mut config: HttpConfig,
    registry: Arc<McpToolRegistry>,
    probes: Arc<Probes>,
) -> TestServer {
    config.bind = SocketAddr::from(([127, 0, 0, 1], 0));
    let engine = Engine::new(
        McpServerConfig::new("http-tests", "0.0.0").with_rate_limit(None),
        registry.clone(),
    );
    let server = HttpServer::new(engine, config);
    let listener = server.bind().await.expect("bind");
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(async move {
        server
            .serve(listener, async move {
                let _ = rx.await;
            })
            .await
    });
    TestServer {
        addr,
        registry,
        probes,
        shutdown: Some(tx),
        handle,
    }
}

/// The default config for tests: everything default but no rate limit (tests make many
/// requests from one address) unless a test turns it on.
pub fn config() -> HttpConfig {
    HttpConfig {
        rate_limit: None,
        ..HttpConfig::default()
    }
}

// ---------------------------------------------------------------------------------------------
// Requests

#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Req {
    pub fn new(method: &str, path: &str) -> Self {
        Self {
            method: method.into(),
            path: path.into(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn header(mut self, k: &str, v: impl Into<String>) -> Self {
        self.headers.push((k.into(), v.into()));
        self
    }

    pub fn json(mut self, v: &Value) -> Self {
        self.body = serde_json::to_vec(v).unwrap();
        self.header("content-type", "application/json")
    }

    /// The bytes of the request, with `Host` first unless the test set one, and
    /// `Content-Length` when there is a body and none was set.
    pub fn to_bytes(&self, host: &str) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.path);
        let has = |n: &str| self.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
        if !has("host") {
            out.push_str(&format!("host: {host}\r\n"));
        }
        for (k, v) in &self.headers {
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        if !has("content-length") && (!self.body.is_empty() || self.method == "POST") {
            out.push_str(&format!("content-length: {}\r\n", self.body.len()));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&self.body);
        bytes
    }
}

/// A POST of one JSON-RPC request to `/mcp` with the modern `_meta` and headers.
pub fn modern(method: &str, id: i64, mut params: Value) -> Req {
    let obj = params.as_object_mut().unwrap();
    let meta = obj
        .entry("_meta")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .unwrap();
    meta.insert(
        "io.modelcontextprotocol/protocolVersion".into(),
        json!(MODERN),
    );
    meta.insert(
        "io.modelcontextprotocol/clientCapabilities".into(),
        json!({}),
    );
    meta.insert(
        "io.modelcontextprotocol/clientInfo".into(),
        json!({"name": "http-tests", "version": "0"}),
    );
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut req = Req::new("POST", "/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method)
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    if let Some(n) = name {
        req = req.header("mcp-name", n);
    }
    req
}

/// A legacy-era POST (no modern `_meta`).
pub fn legacy(method: &str, id: Option<i64>, params: Value, session: Option<&str>) -> Req {
    let mut body = json!({"jsonrpc": "2.0", "method": method, "params": params});
    if let Some(id) = id {
        body["id"] = json!(id);
    }
    let mut req = Req::new("POST", "/mcp")
        .header("accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(s) = session {
        req = req
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", LEGACY);
    }
    req
}

pub fn initialize_body() -> Value {
    json!({
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "http-tests", "version": "0"},
    })
}

// ---------------------------------------------------------------------------------------------
// Responses

#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): status {} body {:?}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The JSON-RPC error code of the body.
    pub fn error_code(&self) -> i64 {
        let v = self.json();
        assert_eq!(v["jsonrpc"], "2.0", "not a JSON-RPC body: {v}");
        v["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("no error code in {v}"))
    }

    /// The SSE events of a complete body.
    pub fn events(&self) -> Vec<SseEvent> {
        parse_sse(&String::from_utf8_lossy(&self.body)).0
    }
}

#[derive(Debug, Clone)]
pub struct SseEvent {
    pub id: Option<String>,
    pub data: Value,
}

/// Parses complete events out of `text`; returns them and the unparsed rest.
pub fn parse_sse(text: &str) -> (Vec<SseEvent>, String) {
    let mut events = Vec::new();
    let mut rest = text;
    while let Some(end) = rest.find("\n\n") {
        let block = &rest[..end];
        rest = &rest[end + 2..];
        let mut id = None;
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim().to_owned());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
        if !data.is_empty() {
            events.push(SseEvent {
                id,
                data: serde_json::from_str(&data).unwrap_or(Value::String(data)),
            });
        }
    }
    (events, rest.to_owned())
}

/// An open connection whose response head has been read; the body is read on demand.
pub struct Open {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
    chunked: bool,
    remaining: Option<usize>,
    text: String,
    done: bool,
}

impl Open {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Reads the next piece of body; `false` at the end.
    async fn read_more(&mut self) -> bool {
        if self.done {
            return false;
        }
        if self.chunked {
            let mut line = String::new();
            if self.reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                self.done = true;
                return false;
            }
            let size =
                usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16).unwrap_or(0);
            if size == 0 {
                self.done = true;
                return false;
            }
            let mut buf = vec![0u8; size + 2];
            if self.reader.read_exact(&mut buf).await.is_err() {
                self.done = true;
                return false;
            }
            buf.truncate(size);
            self.text.push_str(&String::from_utf8_lossy(&buf));
            true
        } else {
            let want = self.remaining.unwrap_or(usize::MAX).min(8192);
            if want == 0 {
                self.done = true;
                return false;
            }
            let mut buf = vec![0u8; want];
            match self.reader.read(&mut buf).await {
                Ok(0) | Err(_) => {
                    self.done = true;
                    false
                }
                Ok(n) => {
                    if let Some(r) = &mut self.remaining {
                        *r -= n;
                    }
                    self.text.push_str(&String::from_utf8_lossy(&buf[..n]));
                    true
                }
            }
        }
    }

    /// The next SSE event (keep-alive comments skipped), or `None` at the end of the stream.
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.text.find("\n\n") {
                let block: String = self.text.drain(..end + 2).collect();
                if let Some(e) = parse_sse(&block).0.into_iter().next() {
                    return Some(e);
                }
                continue;
            }
            if !self.read_more().await {
                return None;
            }
        }
    }

    /// The data of the next SSE event.
    pub async fn next_message(&mut self) -> Option<Value> {
        self.next_event().await.map(|e| e.data)
    }

    /// Reads the whole body.
    pub async fn body(mut self) -> String {
        while self.read_more().await {}
        self.text
    }

    /// Closes the connection.
    pub fn close(self) {
        drop(self);
    }
}

async fn read_head(reader: &mut BufReader<TcpStream>) -> Option<(u16, Vec<(String, String)>)> {
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let status: u16 = line.split_whitespace().nth(1)?.parse().ok()?;
    let mut headers = Vec::new();
    loop {
        let mut l = String::new();
        if reader.read_line(&mut l).await.ok()? == 0 {
            return None;
        }
        let l = l.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    Some((status, headers))
}

/// Sends `req` on a new connection and reads the response head.
pub async fn open(addr: SocketAddr, host: &str, req: &Req) -> Option<Open> {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(&req.to_bytes(host)).await.ok()?;
    open_on(stream).await
}

/// Reads a response head from a connection on which a request was sent.
pub async fn open_on(stream: TcpStream) -> Option<Open> {
    let mut reader = BufReader::new(stream);
    let (status, headers) = tokio::time::timeout(HANG, read_head(&mut reader))
        .await
        .expect("response head in time")?;
    let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let chunked = get("transfer-encoding").is_some_and(|v| v.contains("chunked"));
    // 204 and 304 have no body, whatever the headers say.
    let remaining = if status == 204 || status == 304 {
        Some(0)
    } else {
        get("content-length").and_then(|v| v.parse().ok())
    };
    Some(Open {
        status,
        headers,
        reader,
        chunked,
        remaining,
        text: String::new(),
        done: false,
    })
}

/// Sends `req` and reads the whole response.
pub async fn send(addr: SocketAddr, host: &str, req: &Req) -> Resp {
    tokio::time::timeout(HANG, async {
        let open = open(addr, host, req).await.expect("a response");
        let status = open.status;
        let headers = open.headers.clone();
        let body = open.body().await.into_bytes();
        Resp {
            status,
            headers,
            body,
        }
    })
    .await
    .expect("response in time")
}

impl TestServer {
    pub async fn send(&self, req: &Req) -> Resp {
        send(self.addr, &self.host(), req).await
    }

    pub async fn open(&self, req: &Req) -> Open {
        open(self.addr, &self.host(), req)
            .await
            .expect("a response")
    }

    /// Sends `req` on a task of its own, for a call that stays in flight while the test goes
    /// on; the task's result is the whole response.
    pub fn spawn_send(&self, req: Req) -> JoinHandle<Resp> {
        let (addr, host) = (self.addr, self.host());
        tokio::spawn(async move { send(addr, &host, &req).await })
    }

    /// `initialize` + `notifications/initialized`; returns the session id.
    pub async fn legacy_session(&self) -> String {
        legacy_session_at(self.addr, initialize_body()).await
    }
}

/// `initialize` with `params` (answered as JSON) + `notifications/initialized` on the server at
/// `addr`; returns the session id.
pub async fn legacy_session_at(addr: SocketAddr, params: Value) -> String {
    let host = format!("127.0.0.1:{}", addr.port());
    let init = legacy("initialize", Some(1), params, None).header("accept", "application/json");
    let r = send(addr, &host, &init).await;
    assert_eq!(r.status, 200, "{:?}", String::from_utf8_lossy(&r.body));
    let sid = r.header("mcp-session-id").expect("a session id").to_owned();
    let note = legacy("notifications/initialized", None, json!({}), Some(&sid));
    assert_eq!(send(addr, &host, &note).await.status, 202);
    sid
}

/// A legacy request in session `sid` on the server at `addr`, answered as JSON with `200`;
/// the answer.
pub async fn call_json(addr: SocketAddr, sid: &str, id: i64, method: &str, params: Value) -> Value {
    let host = format!("127.0.0.1:{}", addr.port());
    let req = legacy(method, Some(id), params, Some(sid)).header("accept", "application/json");
    let r = send(addr, &host, &req).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()
}

/// Waits (with a hang guard) until `cond` holds; the test fails with `what` if it never does.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + HANG;
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The head and body of the response at the start of `raw` once its `Content-Length` body
/// has all arrived (`None` before); for tests that read responses off a raw socket.
pub fn complete_response(raw: &[u8]) -> Option<(String, String)> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap())
        })
        .expect("a content-length");
    (body.len() >= len).then(|| (head.to_owned(), body.to_owned()))
}

/// Reads until the peer closes or `limit` passes; returns what was read and whether it closed.
pub async fn read_until_close(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return (out, false),
            Ok(Ok(0)) | Ok(Err(_)) => return (out, true),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}
