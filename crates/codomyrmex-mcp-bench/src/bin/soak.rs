//! A soak test of the Streamable HTTP transport: N concurrent clients on loopback for a while,
//! with a mix of calls of both eras, against a server in a child process whose memory is
//! sampled as it runs.
//!
//! ```text
//! soak [--clients N] [--seconds S] [--sample S] [--slow-ms MS]
//! ```
//!
//! The driver starts this same binary with `--serve` (a server on an ephemeral 127.0.0.1 port
//! with `echo`, `slow` and `progress` tools and two resources; no rate limits), then runs N
//! clients for S seconds. Each client keeps one HTTP/1.1 connection and one legacy session
//! and loops over a weighted mix:
//!
//! | share | call |
//! |---|---|
//! | 25 % | modern `tools/call echo` |
//! | 20 % | legacy `tools/call echo` |
//! | 10 % | modern `tools/list`, 5 % legacy `tools/list` |
//! | 10 % | modern `resources/read` (template), 5 % legacy `resources/read` (static) |
//! | 10 % | modern `tools/call slow` (sleeps `--slow-ms`, default 50), 5 % legacy |
//! | 10 % | modern `tools/call progress` with a progress token (an SSE stream) |
//!
//! Every answer is checked: a non-200 status, a JSON-RPC error, `isError: true` or a wrong
//! echo counts as an error. Every `--sample` seconds (default 10) it prints the calls so far,
//! the rate over the interval and the server's RSS; at the end, calls/s, the error count,
//! latency percentiles overall and per call, and the RSS series. Exits 1 if any call failed.
//! Traffic goes to 127.0.0.1 only, and the run stops by itself.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader as StdBufReader};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use codomyrmex_mcp::ResourceRequest;
use codomyrmex_mcp::engine::Engine;
use codomyrmex_mcp::transport::http::{HttpConfig, HttpServer};
use codomyrmex_mcp::wire::ResourceContents;
use codomyrmex_mcp::{
    McpErrorDetail, McpResourceRegistry, McpServerConfig, McpToolRegistry, ResourceDefinition,
    ResourceTemplateDefinition, ToolContext,
};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

struct Options {
    clients: usize,
    seconds: u64,
    sample: u64,
    slow_ms: u64,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        clients: 8,
        seconds: 60,
        sample: 10,
        slow_ms: 50,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let n: u64 = value
            .parse()
            .map_err(|_| format!("{flag}: {value:?} is not a whole number"))?;
        match flag.as_str() {
            "--clients" => o.clients = usize::try_from(n.max(1)).map_err(|e| e.to_string())?,
            "--seconds" => o.seconds = n.max(1),
            "--sample" => o.sample = n.max(1),
            "--slow-ms" => o.slow_ms = n,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--serve") {
        let slow_ms = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(50);
        return serve(slow_ms);
    }
    let options = match parse(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("soak: {e}");
            eprintln!("usage: soak [--clients N] [--seconds S] [--sample S] [--slow-ms MS]");
            return ExitCode::from(2);
        }
    };
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    else {
        eprintln!("soak: no runtime");
        return ExitCode::FAILURE;
    };
    match rt.block_on(drive(options)) {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("soak: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The server (child process)

fn serve(slow_ms: u64) -> ExitCode {
    let Ok(rt) = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    else {
        return ExitCode::FAILURE;
    };
    let outcome = rt.block_on(async move {
        let tools = Arc::new(McpToolRegistry::new());
        tools
            .register(
                "echo",
                json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
                |a: Map<String, Value>| -> Result<Value, McpErrorDetail> {
                    Ok(json!({"text": a.get("text").cloned().unwrap_or(Value::Null)}))
                },
            )
            .map_err(|e| e.to_string())?;
        tools
            .register(
                "slow",
                json!({"type": "object"}),
                move |_: Map<String, Value>| async move {
                    tokio::time::sleep(Duration::from_millis(slow_ms)).await;
                    Ok::<Value, McpErrorDetail>(json!({"slept_ms": slow_ms}))
                },
            )
            .map_err(|e| e.to_string())?;
        tools
            .register(
                "progress",
                json!({"type": "object"}),
                |_: Map<String, Value>, cx: ToolContext| async move {
                    for i in 1..=3u8 {
                        cx.progress(f64::from(i), Some(3.0), Some("working"));
                        tokio::task::yield_now().await;
                    }
                    Ok::<Value, McpErrorDetail>(json!({"steps": 3}))
                },
            )
            .map_err(|e| e.to_string())?;
        let resources = Arc::new(McpResourceRegistry::new());
        resources
            .add_text(
                ResourceDefinition::new("soak://readme", "readme").with_mime_type("text/plain"),
                "A resource read by the soak test.",
            )
            .map_err(|e| e.to_string())?;
        resources
            .add_template(
                ResourceTemplateDefinition::new("soak://items/{id}", "item"),
                |req: ResourceRequest| async move {
                    let id = req.variables.get("id").cloned().unwrap_or_default();
                    Ok(vec![ResourceContents::Text {
                        uri: req.uri,
                        mime_type: Some("text/plain".into()),
                        text: format!("item {id}"),
                        meta: None,
                    }])
                },
                BTreeMap::new(),
            )
            .map_err(|e| e.to_string())?;
        let engine = Engine::new(
            McpServerConfig::new("soak", codomyrmex_mcp::VERSION).with_rate_limit(None),
            tools,
        )
        .with_resources(resources);
        let config = HttpConfig {
            bind: ([127, 0, 0, 1], 0).into(),
            rate_limit: None,
            ..HttpConfig::default()
        };
        let server = HttpServer::new(engine, config);
        let listener = server.bind().await.map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        println!("LISTENING {port}");
        server
            .serve(listener, async {
                // Until the driver closes our stdin.
                let mut sink = Vec::new();
                let _ = tokio::io::stdin().read_to_end(&mut sink).await;
            })
            .await
            .map_err(|e| e.to_string())
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("soak server: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 client

struct Answer {
    status: u16,
    session: Option<String>,
    body: Vec<u8>,
    sse: bool,
}

struct Conn {
    io: BufReader<TcpStream>,
    host: String,
    port: u16,
}

impl Conn {
    async fn connect(port: u16) -> std::io::Result<Self> {
        let stream = TcpStream::connect(("127.0.0.1", port)).await?;
        stream.set_nodelay(true)?;
        Ok(Self {
            io: BufReader::new(stream),
            host: format!("127.0.0.1:{port}"),
            port,
        })
    }

    async fn reconnect(&mut self) -> std::io::Result<()> {
        *self = Self::connect(self.port).await?;
        Ok(())
    }

    async fn post(&mut self, headers: &[(&str, &str)], body: &[u8]) -> std::io::Result<Answer> {
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
            self.host,
            body.len()
        );
        for (k, v) in headers {
            head.push_str(k);
            head.push_str(": ");
            head.push_str(v);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        let stream = self.io.get_mut();
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body).await?;
        self.read_answer().await
    }

    async fn line(&mut self) -> std::io::Result<String> {
        let mut line = String::new();
        if self.io.read_line(&mut line).await? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed",
            ));
        }
        Ok(line)
    }

    async fn read_answer(&mut self) -> std::io::Result<Answer> {
        let bad =
            |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
        let status_line = self.line().await?;
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("status line"))?;
        let (mut length, mut chunked, mut session, mut sse) = (None, false, None, false);
        loop {
            let line = self.line().await?;
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = v.parse::<usize>().ok(),
                "transfer-encoding" => chunked = v.contains("chunked"),
                "mcp-session-id" => session = Some(v.to_owned()),
                "content-type" => sse = v.starts_with("text/event-stream"),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let size_line = self.line().await?;
                let size = usize::from_str_radix(
                    size_line.trim().split(';').next().unwrap_or_default(),
                    16,
                )
                .map_err(|_| bad("chunk size"))?;
                let mut chunk = vec![0; size + 2];
                self.io.read_exact(&mut chunk).await?;
                if size == 0 {
                    break;
                }
                chunk.truncate(size);
                body.extend_from_slice(&chunk);
            }
        } else if let Some(n) = length {
            body.resize(n, 0);
            self.io.read_exact(&mut body).await?;
        } else if status != 202 && status != 204 {
            return Err(bad("a body of unknown length"));
        }
        Ok(Answer {
            status,
            session,
            body,
            sse,
        })
    }
}

/// The JSON-RPC response in an answer: the body, or the last `message` event of a stream.
fn response_of(a: &Answer) -> Option<Value> {
    if !a.sse {
        return serde_json::from_slice(&a.body).ok();
    }
    codomyrmex_mcp_bench::util::sse_json(&a.body)
        .into_iter()
        .rfind(|v| v.get("result").is_some() || v.get("error").is_some())
}

// ---------------------------------------------------------------------------------------------
// The mix

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    ModernEcho,
    LegacyEcho,
    ModernList,
    LegacyList,
    ModernRead,
    LegacyRead,
    ModernSlow,
    LegacySlow,
    ModernProgress,
}

impl Op {
    const ALL: [Op; 9] = [
        Op::ModernEcho,
        Op::LegacyEcho,
        Op::ModernList,
        Op::LegacyList,
        Op::ModernRead,
        Op::LegacyRead,
        Op::ModernSlow,
        Op::LegacySlow,
        Op::ModernProgress,
    ];

    /// Picks an operation from a number in 0..100, by the documented weights.
    fn pick(n: u64) -> Op {
        match n {
            0..25 => Op::ModernEcho,
            25..45 => Op::LegacyEcho,
            45..55 => Op::ModernList,
            55..60 => Op::LegacyList,
            60..70 => Op::ModernRead,
            70..75 => Op::LegacyRead,
            75..85 => Op::ModernSlow,
            85..90 => Op::LegacySlow,
            _ => Op::ModernProgress,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Op::ModernEcho => "modern tools/call echo",
            Op::LegacyEcho => "legacy tools/call echo",
            Op::ModernList => "modern tools/list",
            Op::LegacyList => "legacy tools/list",
            Op::ModernRead => "modern resources/read",
            Op::LegacyRead => "legacy resources/read",
            Op::ModernSlow => "modern tools/call slow",
            Op::LegacySlow => "legacy tools/call slow",
            Op::ModernProgress => "modern tools/call progress (SSE)",
        }
    }
}

/// xorshift64*: enough randomness for picking calls, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

struct Client {
    conn: Conn,
    session: String,
    next_id: u64,
}

impl Client {
    async fn start(port: u16) -> Result<Self, String> {
        let mut conn = Conn::connect(port).await.map_err(|e| e.to_string())?;
        let session = initialize(&mut conn).await?;
        Ok(Self {
            conn,
            session,
            next_id: 1,
        })
    }

    /// One call; `Err` describes what went wrong.
    async fn call(&mut self, op: Op, rng: &mut Rng) -> Result<(), String> {
        self.next_id += 1;
        let id = self.next_id;
        let text = format!("soak-{}", rng.next() % 1_000_000);
        let (method, mut params, name) = match op {
            Op::ModernEcho | Op::LegacyEcho => (
                "tools/call",
                json!({"name": "echo", "arguments": {"text": text}}),
                Some("echo".to_owned()),
            ),
            Op::ModernList | Op::LegacyList => ("tools/list", json!({}), None),
            Op::ModernRead => {
                let uri = format!("soak://items/{}", rng.next() % 1000);
                ("resources/read", json!({"uri": uri}), Some(uri))
            }
            Op::LegacyRead => (
                "resources/read",
                json!({"uri": "soak://readme"}),
                Some("soak://readme".to_owned()),
            ),
            Op::ModernSlow | Op::LegacySlow => (
                "tools/call",
                json!({"name": "slow", "arguments": {}}),
                Some("slow".to_owned()),
            ),
            Op::ModernProgress => (
                "tools/call",
                json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": id}}),
                Some("progress".to_owned()),
            ),
        };
        let modern = matches!(
            op,
            Op::ModernEcho | Op::ModernList | Op::ModernRead | Op::ModernSlow | Op::ModernProgress
        );
        let mut headers: Vec<(&str, String)> = Vec::new();
        if modern {
            let meta = params
                .as_object_mut()
                .and_then(|p| {
                    p.entry("_meta")
                        .or_insert_with(|| json!({}))
                        .as_object_mut()
                })
                .ok_or("params")?;
            meta.insert(
                "io.modelcontextprotocol/protocolVersion".into(),
                json!(MODERN),
            );
            meta.insert(
                "io.modelcontextprotocol/clientCapabilities".into(),
                json!({}),
            );
            headers.push(("mcp-protocol-version", MODERN.into()));
            headers.push(("mcp-method", method.into()));
            if let Some(n) = name {
                headers.push(("mcp-name", n));
            }
        } else {
            headers.push(("mcp-protocol-version", LEGACY.into()));
            headers.push(("mcp-session-id", self.session.clone()));
        }
        let body = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .map_err(|e| e.to_string())?;
        let refs: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let answer = match self.conn.post(&refs, &body).await {
            Ok(a) => a,
            Err(e) => {
                // Count it, and carry on with a fresh connection.
                let _ = self.conn.reconnect().await;
                return Err(format!("transport: {e}"));
            }
        };
        if answer.status != 200 {
            return Err(format!(
                "HTTP {}: {}",
                answer.status,
                String::from_utf8_lossy(&answer.body)
            ));
        }
        let response = response_of(&answer).ok_or("no JSON-RPC response in the answer")?;
        if response["id"] != json!(id) {
            return Err(format!("answer to another request: {response}"));
        }
        if let Some(e) = response.get("error") {
            return Err(format!("JSON-RPC error: {e}"));
        }
        let result = &response["result"];
        if result["isError"] == json!(true) {
            return Err(format!("tool error: {result}"));
        }
        let ok = match op {
            Op::ModernEcho | Op::LegacyEcho => result["structuredContent"]["text"] == json!(text),
            Op::ModernList | Op::LegacyList => {
                result["tools"].as_array().is_some_and(|t| t.len() == 3)
            }
            Op::ModernRead | Op::LegacyRead => result["contents"][0]["text"].is_string(),
            Op::ModernSlow | Op::LegacySlow => result["structuredContent"]["slept_ms"].is_u64(),
            Op::ModernProgress => result["structuredContent"]["steps"] == json!(3),
        };
        if ok {
            Ok(())
        } else {
            Err(format!("unexpected result: {result}"))
        }
    }
}

async fn initialize(conn: &mut Conn) -> Result<String, String> {
    let body = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "soak", "version": "0"}},
    }))
    .map_err(|e| e.to_string())?;
    let a = conn.post(&[], &body).await.map_err(|e| e.to_string())?;
    let session = a
        .session
        .ok_or_else(|| format!("initialize: HTTP {} without a session", a.status))?;
    let note = serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}}),
    )
    .map_err(|e| e.to_string())?;
    let a = conn
        .post(
            &[
                ("mcp-session-id", &session),
                ("mcp-protocol-version", LEGACY),
            ],
            &note,
        )
        .await
        .map_err(|e| e.to_string())?;
    if a.status != 202 {
        return Err(format!("notifications/initialized: HTTP {}", a.status));
    }
    Ok(session)
}

// ---------------------------------------------------------------------------------------------
// The driver

#[derive(Default)]
struct Record {
    /// Latencies in microseconds, by operation.
    latencies: BTreeMap<Op, Vec<u32>>,
    errors: Vec<String>,
    error_count: u64,
}

fn rss_kib(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    // Nearest rank.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    f64::from(sorted[rank.clamp(1, sorted.len()) - 1]) / 1000.0
}

async fn drive(o: Options) -> Result<u64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .args(["--serve", &o.slow_ms.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("starting the server: {e}"))?;
    let pid = child.id();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = StdBufReader::new(stdout).lines();
    let port: u16 = loop {
        match lines.next() {
            Some(Ok(line)) => {
                if let Some(p) = line.strip_prefix("LISTENING ") {
                    break p.trim().parse().map_err(|_| "bad port")?;
                }
            }
            _ => return Err("the server did not start".into()),
        }
    };
    println!(
        "soak: {} clients x {} s against 127.0.0.1:{port} (server pid {pid}), {}-ms slow tool",
        o.clients, o.seconds, o.slow_ms
    );
    let (rss0, _) = rss_kib(pid).unwrap_or_default();

    let calls = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = tokio::task::JoinSet::new();
    for c in 0..o.clients {
        let (calls, errors, stop) = (calls.clone(), errors.clone(), stop.clone());
        clients.spawn(async move {
            let mut record = Record::default();
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (c as u64 + 1).wrapping_mul(0xBF58_476D));
            let mut client = match Client::start(port).await {
                Ok(cl) => cl,
                Err(e) => {
                    record.error_count += 1;
                    record.errors.push(format!("client {c}: {e}"));
                    errors.fetch_add(1, Ordering::Relaxed);
                    return record;
                }
            };
            while !stop.load(Ordering::Relaxed) {
                let op = Op::pick(rng.next() % 100);
                let started = Instant::now();
                let outcome = client.call(op, &mut rng).await;
                let micros = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
                calls.fetch_add(1, Ordering::Relaxed);
                match outcome {
                    Ok(()) => record.latencies.entry(op).or_default().push(micros),
                    Err(e) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        record.error_count += 1;
                        if record.errors.len() < 5 {
                            record.errors.push(format!("{}: {e}", op.name()));
                        }
                    }
                }
            }
            record
        });
    }

    let started = Instant::now();
    let deadline = started + Duration::from_secs(o.seconds);
    let mut series: Vec<(u64, u64, f64, u64)> = Vec::new();
    let mut last_calls = 0;
    let mut last_t = started;
    println!(
        "{:>6}  {:>10}  {:>9}  {:>7}  {:>9}",
        "t (s)", "calls", "calls/s", "errors", "RSS MiB"
    );
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        let wait = Duration::from_secs(o.sample).min(deadline - now);
        tokio::time::sleep(wait).await;
        let n = calls.load(Ordering::Relaxed);
        let t = last_t.elapsed().as_secs_f64();
        #[allow(clippy::cast_precision_loss)]
        let rate = (n - last_calls) as f64 / t.max(1e-9);
        let (rss, _) = rss_kib(pid).unwrap_or_default();
        let elapsed = started.elapsed().as_secs();
        println!(
            "{:>6}  {:>10}  {:>9.0}  {:>7}  {:>9.1}",
            elapsed,
            n,
            rate,
            errors.load(Ordering::Relaxed),
            rss as f64 / 1024.0
        );
        series.push((elapsed, n, rate, rss));
        last_calls = n;
        last_t = Instant::now();
    }
    stop.store(true, Ordering::Relaxed);
    let mut all: BTreeMap<Op, Vec<u32>> = BTreeMap::new();
    let mut samples = Vec::new();
    let mut error_count = 0;
    while let Some(r) = clients.join_next().await {
        let r = r.map_err(|e| format!("a client task failed: {e}"))?;
        error_count += r.error_count;
        samples.extend(r.errors);
        for (op, l) in r.latencies {
            all.entry(op).or_default().extend(l);
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let (rss_end, hwm) = rss_kib(pid).unwrap_or_default();

    let mut everything: Vec<u32> = all.values().flatten().copied().collect();
    everything.sort_unstable();
    let ok = everything.len() as u64;
    let total = ok + error_count;
    println!();
    #[allow(clippy::cast_precision_loss)]
    let rate = total as f64 / wall;
    println!(
        "calls: {total} in {wall:.1} s = {rate:.0} calls/s; errors: {error_count}; latency p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        percentile(&everything, 50.0),
        percentile(&everything, 90.0),
        percentile(&everything, 99.0),
        percentile(&everything, 100.0),
    );
    println!(
        "{:<34} {:>8} {:>9} {:>9} {:>9}",
        "call", "count", "p50 ms", "p99 ms", "max ms"
    );
    for op in Op::ALL {
        let mut l = all.remove(&op).unwrap_or_default();
        l.sort_unstable();
        println!(
            "{:<34} {:>8} {:>9.2} {:>9.2} {:>9.2}",
            op.name(),
            l.len(),
            percentile(&l, 50.0),
            percentile(&l, 99.0),
            percentile(&l, 100.0)
        );
    }
    let rss_values: Vec<u64> = series.iter().map(|s| s.3).collect();
    let min = rss_values.iter().min().copied().unwrap_or_default();
    let max = rss_values.iter().max().copied().unwrap_or_default();
    println!(
        "server RSS: {:.1} MiB at start, {:.1}..{:.1} MiB while running, {:.1} MiB at the end, peak (VmHWM) {:.1} MiB",
        rss0 as f64 / 1024.0,
        min as f64 / 1024.0,
        max as f64 / 1024.0,
        rss_end as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    for e in samples.iter().take(10) {
        println!("error: {e}");
    }
    // Stop the server: closing its stdin starts a graceful shutdown.
    drop(child.stdin.take());
    let status = child.wait().map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("the server exited with {status}"));
    }
    Ok(error_count)
}
