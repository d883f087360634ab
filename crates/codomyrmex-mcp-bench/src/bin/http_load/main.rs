//! Whole-process Streamable HTTP load against any MCP server command.
//!
//! ```text
//! http_load [OPTIONS] --subject NAME:ERA=COMMAND ... [--case SIZE:CONNS[:N]]...
//! http_load [OPTIONS] --idle NAME=COMMAND ... [--idle-sessions N]
//! ```
//!
//! **Load cases.** For each case and subject it starts the server (a fresh process), opens
//! CONNS keep-alive HTTP/1.1 connections (`TCP_NODELAY`, a minimal hand-rolled client on
//! tokio), runs warm-up calls, then N measured `tools/call` calls of the `echo` tool with a
//! SIZE-byte text, split evenly over the connections, each connection one call at a time.
//! It reports calls/s, p50/p99 latency, the server's CPU per call (utime+stime from
//! `/proc/PID/stat` around the measured calls), the client's CPU per call, the server's peak
//! RSS (`VmHWM`) and the error count.
//!
//! A subject's ERA says how it is spoken to:
//!
//! - `modern`: 2026-07-28, stateless. Every call is a POST with `MCP-Protocol-Version:
//!   2026-07-28`, `Mcp-Method: tools/call`, `Mcp-Name: echo`, and `_meta` carrying
//!   `io.modelcontextprotocol/protocolVersion` and `io.modelcontextprotocol/clientCapabilities`.
//! - `legacy`: 2025-11-25. Each connection sends `initialize`, takes the `Mcp-Session-Id`,
//!   sends `notifications/initialized`, then calls with the session and
//!   `MCP-Protocol-Version: 2025-11-25` headers.
//! - `plain`: a bare `tools/call` POST with no MCP headers, no `_meta` and no session (what a
//!   stateless server without per-request negotiation, such as rmcp's stateless mode, takes).
//!
//! Every request accepts `application/json, text/event-stream`; answers may be JSON or SSE
//! (the JSON-RPC response in a `data:` line), with a `Content-Length` or chunked. Every answer
//! is checked: status 200, the call's id, and the call's own text (unique per call) echoed
//! back as a text block; every warm-up answer and every 97th measured one are parsed in full.
//! A failed check counts as an error; the exit status is 1 when any call failed.
//!
//! **Idle sessions** (`--idle NAME=COMMAND`). Starts the server, opens `--idle-sessions`
//! legacy sessions (`initialize` only, over `--idle-connections` keep-alive connections, each
//! from its own loopback address 127.0.0.2, 127.0.0.3, ... as that many clients would be, so a
//! per-client rate limit does not throttle the run), then leaves them idle. It reports the
//! server's RSS before, with all sessions alive, and after idle expiry: when the server has a
//! `/health` that reports `sessions` (codomyrmex-mcp does), it polls until that count is 0,
//! otherwise it waits `--idle-wait` seconds. `--idle-rounds R` repeats open-and-expire on the
//! same process, to show that nothing accumulates. After each wait, a `ping` on the round's
//! first session shows whether the server forgot it (404). `--idle-max-rss MIB` stops opening sessions
//! once the server grows past that, so a hungry subject cannot exhaust the machine.
//!
//! **Commands.** A command is split on whitespace. `{port}` in it is replaced by a free
//! loopback port (and the server is awaited until it accepts connections); without `{port}`
//! the server must print `LISTENING HOST:PORT` on stdout. Servers are killed when done.
//! `@HOST:PORT` instead of a command names a server that is already running (to profile it);
//! its CPU and RSS figures are then meaningless.
//!
//! Options:
//!   --subject NAME:ERA=COMMAND  a load subject; ERA is modern, legacy or plain; repeatable
//!   --case SIZE:CONNS[:N]       payload SIZE (bytes, or with K/KiB), CONNS connections, N
//!                               measured calls in all; repeatable (default 16:1, 16:64)
//!   --calls N                   measured calls for cases that do not give N (default 20000)
//!   --warmup W                  warm-up calls per case, over all connections (default 2000)
//!   --rounds R                  run everything R times, interleaved; report medians (default 1)
//!   --client-threads T          the client's tokio worker threads (default 1)
//!   --timeout SECS              give up on a case after this long (default 120)
//!   --idle NAME=COMMAND         an idle-sessions subject; repeatable
//!   --idle-sessions N           sessions to open (default 10000)
//!   --idle-connections C        connections (and client addresses) to open them over (default 64)
//!   --idle-wait SECS            the longest wait for idle expiry (default 120)
//!   --idle-settle SECS          after expiry, wait this long and read RSS again (default 0):
//!                               an allocator may return freed pages over some seconds
//!   --idle-rounds R             open-and-expire rounds per idle subject (default 1)
//!   --idle-max-rss MIB          stop opening sessions past this server RSS (default 2048)
//!   --show-stderr               let the servers' stderr through (default: discarded)
//!   --json                      print one JSON object per line instead of text
//!   --markdown                  also print markdown tables of the medians
//!   --ratio-to NAME             add a column: calls/s as a multiple of NAME's; repeatable
//!   --check SUBJECT=BASE        check SUBJECT against BASE: at least 1.5x its calls/s on the
//!                               16 B cases (exit status 3 when missed); repeatable
//!   --idle-check NAME           check NAME's idle case: under 50 MiB growth with every
//!                               session alive; afterwards no session left (`/health`), the
//!                               round's first session gone (404), RSS not accumulating over
//!                               rounds

use std::fmt::Write as _;
use std::io::Write as _;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use codomyrmex_mcp_bench::procfs;
use codomyrmex_mcp_bench::util::{median, parse_size};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::process::{Child, Command};

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
/// How often a measured answer is parsed in full (every warm-up answer is).
const SAMPLE_EVERY: u64 = 97;
/// The issue's throughput target against the base, for the 16 B cases.
const TARGET_RATIO: f64 = 1.5;
/// The issue's idle-sessions target: growth with every session alive.
const TARGET_IDLE_GROWTH_MIB: f64 = 50.0;

// ---------------------------------------------------------------------------------------------
// Options

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    Modern,
    Legacy,
    Plain,
}

impl Era {
    fn parse(s: &str) -> Result<Self> {
        match s {
            "modern" | MODERN => Ok(Self::Modern),
            "legacy" | LEGACY => Ok(Self::Legacy),
            "plain" => Ok(Self::Plain),
            other => Err(format!("unknown era {other:?}: want modern, legacy or plain").into()),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Modern => MODERN,
            Self::Legacy => LEGACY,
            Self::Plain => "plain",
        }
    }
}

#[derive(Debug, Clone)]
struct Subject {
    name: String,
    era: Era,
    command: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
struct Case {
    size: usize,
    conns: usize,
    calls: usize,
}

impl Case {
    fn label(&self) -> String {
        let conns = if self.conns == 1 {
            "1 connection".to_owned()
        } else {
            format!("{} connections", self.conns)
        };
        format!("{}, {conns}", size_label(self.size))
    }
}

fn size_label(size: usize) -> String {
    if size >= 1024 && size.is_multiple_of(1024) {
        format!("{} KiB", size / 1024)
    } else {
        format!("{size} B")
    }
}

#[derive(Debug)]
struct Options {
    subjects: Vec<Subject>,
    cases: Vec<Case>,
    warmup: usize,
    rounds: usize,
    client_threads: usize,
    timeout: Duration,
    idle: Vec<Subject>,
    idle_sessions: usize,
    idle_connections: usize,
    idle_wait: Duration,
    idle_settle: Duration,
    idle_rounds: usize,
    idle_max_rss_kib: u64,
    show_stderr: bool,
    json: bool,
    markdown: bool,
    ratio_to: Vec<String>,
    checks: Vec<(String, String)>,
    idle_checks: Vec<String>,
}

const USAGE: &str = "usage: http_load [--subject NAME:ERA=COMMAND]... [--case SIZE:CONNS[:N]]... \
[--calls N] [--warmup W] [--rounds R] [--client-threads T] [--timeout SECS] \
[--idle NAME=COMMAND]... [--idle-sessions N] [--idle-connections C] [--idle-wait SECS] [--idle-settle SECS] \
[--idle-rounds R] [--idle-max-rss MIB] [--show-stderr] [--json] [--markdown] \
[--ratio-to NAME]... [--check SUBJECT=BASE]... [--idle-check NAME]...
ERA: modern (2026-07-28), legacy (2025-11-25) or plain; `{port}` in COMMAND is replaced by a free port";

fn split_pair<'a>(s: &'a str, what: &str) -> Result<(&'a str, &'a str)> {
    let (a, b) = s
        .split_once('=')
        .ok_or_else(|| format!("{what} wants NAME=VALUE, got {s:?}"))?;
    Ok((a.trim(), b.trim()))
}

fn words(command: &str, name: &str) -> Result<Vec<String>> {
    let command: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
    if command.is_empty() {
        return Err(format!("subject {name}: no command").into());
    }
    Ok(command)
}

fn parse_args() -> Result<Options> {
    let mut o = Options {
        subjects: Vec::new(),
        cases: Vec::new(),
        warmup: 2000,
        rounds: 1,
        client_threads: 1,
        timeout: Duration::from_secs(120),
        idle: Vec::new(),
        idle_sessions: 10_000,
        idle_connections: 64,
        idle_wait: Duration::from_secs(120),
        idle_settle: Duration::ZERO,
        idle_rounds: 1,
        idle_max_rss_kib: 2048 * 1024,
        show_stderr: false,
        json: false,
        markdown: false,
        ratio_to: Vec::new(),
        checks: Vec::new(),
        idle_checks: Vec::new(),
    };
    let mut calls = 20_000;
    let mut case_specs = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--subject" => {
                let v = value()?;
                let (label, cmd) = split_pair(&v, "--subject")?;
                let (name, era) = label
                    .split_once(':')
                    .ok_or_else(|| format!("--subject wants NAME:ERA=COMMAND, got {v:?}"))?;
                o.subjects.push(Subject {
                    name: name.to_owned(),
                    era: Era::parse(era)?,
                    command: words(cmd, name)?,
                });
            }
            "--idle" => {
                let v = value()?;
                let (name, cmd) = split_pair(&v, "--idle")?;
                o.idle.push(Subject {
                    name: name.to_owned(),
                    era: Era::Legacy,
                    command: words(cmd, name)?,
                });
            }
            "--case" => case_specs.push(value()?),
            "--calls" => calls = value()?.parse()?,
            "--warmup" => o.warmup = value()?.parse()?,
            "--rounds" => o.rounds = value()?.parse()?,
            "--client-threads" => o.client_threads = value()?.parse()?,
            "--timeout" => o.timeout = Duration::from_secs(value()?.parse()?),
            "--idle-sessions" => o.idle_sessions = value()?.parse()?,
            "--idle-connections" => o.idle_connections = value()?.parse()?,
            "--idle-wait" => o.idle_wait = Duration::from_secs(value()?.parse()?),
            "--idle-settle" => o.idle_settle = Duration::from_secs(value()?.parse()?),
            "--idle-rounds" => o.idle_rounds = value()?.parse()?,
            "--idle-max-rss" => o.idle_max_rss_kib = value()?.parse::<u64>()? * 1024,
            "--show-stderr" => o.show_stderr = true,
            "--json" => o.json = true,
            "--markdown" => o.markdown = true,
            "--ratio-to" => o.ratio_to.push(value()?),
            "--check" => {
                let v = value()?;
                let (a, b) = split_pair(&v, "--check")?;
                o.checks.push((a.to_owned(), b.to_owned()));
            }
            "--idle-check" => o.idle_checks.push(value()?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}").into()),
        }
    }
    for spec in &case_specs {
        let parts: Vec<&str> = spec.split(':').collect();
        let case = match parts.as_slice() {
            [s, c] => Case {
                size: parse_size(s)?,
                conns: c.parse()?,
                calls,
            },
            [s, c, n] => Case {
                size: parse_size(s)?,
                conns: c.parse()?,
                calls: n.parse()?,
            },
            _ => return Err(format!("bad --case {spec:?}: want SIZE:CONNS[:N]").into()),
        };
        o.cases.push(case);
    }
    if o.cases.is_empty() && !o.subjects.is_empty() {
        for conns in [1, 64] {
            o.cases.push(Case {
                size: 16,
                conns,
                calls,
            });
        }
    }
    if o.subjects.is_empty() && o.idle.is_empty() {
        return Err(format!("no subject given\n{USAGE}").into());
    }
    if o.cases
        .iter()
        .any(|c| c.conns == 0 || c.calls < c.conns || c.size == 0)
        || o.rounds == 0
        || o.client_threads == 0
        || o.idle_connections == 0
        || o.idle_rounds == 0
    {
        return Err("sizes, connections, rounds and threads must be at least 1, and calls at least the connections".into());
    }
    for wanted in o
        .ratio_to
        .iter()
        .chain(o.checks.iter().flat_map(|(a, b)| [a, b]))
    {
        if !o.subjects.iter().any(|s| &s.name == wanted) {
            return Err(format!("no load subject named {wanted:?}").into());
        }
    }
    for wanted in &o.idle_checks {
        if !o.idle.iter().any(|s| &s.name == wanted) {
            return Err(format!("no idle subject named {wanted:?}").into());
        }
    }
    Ok(o)
}

// ---------------------------------------------------------------------------------------------
// The server process

struct Server {
    child: Option<Child>,
    /// The server's process id; for a running server (`@ADDR`), this process's, so that its
    /// figures read as the client's only.
    pid: u32,
    addr: SocketAddr,
}

impl Server {
    async fn spawn(opts: &Options, subject: &Subject) -> Result<Self> {
        if let Some(addr) = subject.command[0].strip_prefix('@') {
            // A server that is already running (for profiling it): nothing to start or stop.
            let addr = addr
                .parse()
                .map_err(|e| format!("{}: bad address {addr:?}: {e}", subject.name))?;
            return Ok(Self {
                child: None,
                pid: std::process::id(),
                addr,
            });
        }
        let templated = subject.command.iter().any(|w| w.contains("{port}"));
        let port = if templated {
            // A free port: bind, read the port, let it go. The server binds it next.
            let probe = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
            probe.local_addr()?.port()
        } else {
            0
        };
        let command: Vec<String> = subject
            .command
            .iter()
            .map(|w| w.replace("{port}", &port.to_string()))
            .collect();
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if opts.show_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", command[0]))?;
        let pid = child.id().ok_or("the server exited at once")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let mut lines = tokio::io::BufReader::new(stdout);
        let deadline = Instant::now() + Duration::from_secs(20);
        let addr = if templated {
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            loop {
                if TcpStream::connect(addr).await.is_ok() {
                    break addr;
                }
                if Instant::now() > deadline {
                    return Err(format!("{}: nothing listening on {addr}", subject.name).into());
                }
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("{}: the server exited with {status}", subject.name).into());
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        } else {
            let mut line = String::new();
            loop {
                line.clear();
                let read = tokio::time::timeout_at(deadline.into(), lines.read_line(&mut line))
                    .await
                    .map_err(|_| format!("{}: no LISTENING line", subject.name))??;
                if read == 0 {
                    return Err(format!("{}: the server closed stdout", subject.name).into());
                }
                if let Some(a) = line.trim().strip_prefix("LISTENING ") {
                    break a
                        .trim()
                        .parse()
                        .map_err(|e| format!("{}: bad address {a:?}: {e}", subject.name))?;
                }
            }
        };
        // Keep the pipe drained so the server never blocks on stdout.
        tokio::spawn(async move {
            let mut sink = Vec::new();
            let _ = lines.read_to_end(&mut sink).await;
        });
        Ok(Self {
            child: Some(child),
            pid,
            addr,
        })
    }

    async fn stop(self) {
        if let Some(mut child) = self.child {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP/1.1 client

/// What an answer's head said.
#[derive(Debug, Default)]
struct Head {
    status: u16,
    session: Option<String>,
    sse: bool,
}

/// One keep-alive connection with its read buffer and the last answer's body.
struct Conn {
    stream: TcpStream,
    addr: SocketAddr,
    local: Option<Ipv4Addr>,
    host: String,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    body: Vec<u8>,
    out: Vec<u8>,
}

fn io_error(what: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, what.into())
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    let first = needle[0];
    let last_start = haystack.len() - needle.len();
    let mut i = 0;
    while i <= last_start {
        let at = haystack[i..=last_start].iter().position(|&b| b == first)?;
        i += at;
        if &haystack[i..i + needle.len()] == needle {
            return Some(i);
        }
        i += 1;
    }
    None
}

impl Conn {
    async fn connect(addr: SocketAddr, local: Option<Ipv4Addr>) -> std::io::Result<Self> {
        let stream = match local {
            None => TcpStream::connect(addr).await?,
            Some(ip) => {
                let socket = TcpSocket::new_v4()?;
                socket.bind(SocketAddr::from((ip, 0)))?;
                socket.connect(addr).await?
            }
        };
        stream.set_nodelay(true)?;
        Ok(Self {
            stream,
            addr,
            local,
            host: addr.to_string(),
            buf: vec![0; 16 * 1024],
            start: 0,
            end: 0,
            body: Vec::with_capacity(4096),
            out: Vec::with_capacity(1024),
        })
    }

    async fn reconnect(&mut self) -> std::io::Result<()> {
        *self = Self::connect(self.addr, self.local).await?;
        Ok(())
    }

    /// Writes a POST to `/mcp` with `body` (taken from `self.out` after `head_len` bytes of
    /// prepared extra headers, see [`Conn::post`]).
    async fn post(&mut self, extra_headers: &str, body: &[u8]) -> std::io::Result<Head> {
        self.out.clear();
        let _ = write!(
            self.out,
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n{extra_headers}\r\n",
            self.host,
            body.len()
        );
        self.out.extend_from_slice(body);
        self.stream.write_all(&self.out).await?;
        self.read_answer().await
    }

    async fn get(&mut self, path: &str) -> std::io::Result<Head> {
        self.out.clear();
        let _ = write!(
            self.out,
            "GET {path} HTTP/1.1\r\nhost: {}\r\naccept: application/json\r\n\r\n",
            self.host
        );
        self.stream.write_all(&self.out).await?;
        self.read_answer().await
    }

    /// Reads more bytes into the buffer.
    async fn fill(&mut self) -> std::io::Result<()> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && self.buf.len() - self.end < 4096 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let grown = self.buf.len() * 2;
            self.buf.resize(grown, 0);
        }
        let n = self.stream.read(&mut self.buf[self.end..]).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        self.end += n;
        Ok(())
    }

    /// Waits until `n` bytes are buffered.
    async fn need(&mut self, n: usize) -> std::io::Result<()> {
        while self.end - self.start < n {
            self.fill().await?;
        }
        Ok(())
    }

    /// The next CRLF-terminated line's length (without the CRLF), once buffered.
    async fn line(&mut self) -> std::io::Result<usize> {
        let mut searched = 0;
        loop {
            let window = &self.buf[self.start + searched..self.end];
            if let Some(at) = find(window, b"\r\n") {
                return Ok(searched + at);
            }
            searched = (self.end - self.start).saturating_sub(1);
            self.fill().await?;
        }
    }

    async fn read_answer(&mut self) -> std::io::Result<Head> {
        // The head.
        let mut searched = 0;
        let head_len = loop {
            let window = &self.buf[self.start + searched..self.end];
            if let Some(at) = find(window, b"\r\n\r\n") {
                break searched + at;
            }
            searched = (self.end - self.start).saturating_sub(3);
            if self.end - self.start > 64 * 1024 {
                return Err(io_error("an answer head over 64 KiB"));
            }
            self.fill().await?;
        };
        let head_bytes = &self.buf[self.start..self.start + head_len];
        let mut head = Head::default();
        let mut length = None;
        let mut chunked = false;
        let mut lines = head_bytes.split(|&b| b == b'\n');
        let status_line = lines.next().unwrap_or_default();
        head.status = std::str::from_utf8(status_line)
            .ok()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io_error("a bad status line"))?;
        for line in lines {
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let name = &line[..colon];
            let value = std::str::from_utf8(&line[colon + 1..])
                .unwrap_or_default()
                .trim();
            if name.eq_ignore_ascii_case(b"content-length") {
                length = Some(
                    value
                        .parse::<usize>()
                        .map_err(|_| io_error("a bad content-length"))?,
                );
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                chunked = value.to_ascii_lowercase().contains("chunked");
            } else if name.eq_ignore_ascii_case(b"content-type") {
                head.sse = value.starts_with("text/event-stream");
            } else if name.eq_ignore_ascii_case(b"mcp-session-id") {
                head.session = Some(value.to_owned());
            }
        }
        self.start += head_len + 4;
        // The body.
        self.body.clear();
        if chunked {
            loop {
                let n = self.line().await?;
                let size_text = std::str::from_utf8(&self.buf[self.start..self.start + n])
                    .unwrap_or_default()
                    .split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_owned();
                let size = usize::from_str_radix(&size_text, 16)
                    .map_err(|_| io_error(format!("a bad chunk size {size_text:?}")))?;
                self.start += n + 2;
                if size == 0 {
                    // Trailers, up to an empty line.
                    loop {
                        let n = self.line().await?;
                        self.start += n + 2;
                        if n == 0 {
                            break;
                        }
                    }
                    break;
                }
                self.need(size + 2).await?;
                self.body
                    .extend_from_slice(&self.buf[self.start..self.start + size]);
                self.start += size + 2;
            }
        } else if let Some(n) = length {
            self.need(n).await?;
            self.body
                .extend_from_slice(&self.buf[self.start..self.start + n]);
            self.start += n;
        } else if !matches!(head.status, 100..=199 | 202 | 204 | 304) {
            return Err(io_error(format!(
                "HTTP {} with a body of unknown length",
                head.status
            )));
        }
        Ok(head)
    }
}

/// The JSON-RPC response with `id` in an answer: the body, or a `data:` event of a stream.
fn response_of(head: &Head, body: &[u8], id: &Value) -> Option<Value> {
    if !head.sse {
        return serde_json::from_slice(body).ok();
    }
    codomyrmex_mcp_bench::util::sse_json(body)
        .into_iter()
        .find(|v| &v["id"] == id && (v.get("result").is_some() || v.get("error").is_some()))
}

fn snippet(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    if s.len() > 300 {
        let cut = (0..=300)
            .rev()
            .find(|&i| s.is_char_boundary(i))
            .unwrap_or(0);
        format!("{}… ({} bytes)", &s[..cut], s.len())
    } else {
        s.into_owned()
    }
}

// ---------------------------------------------------------------------------------------------
// Sessions and calls

/// Opens a legacy session on `conn`: `initialize`, then (when `confirm`)
/// `notifications/initialized`. Returns the session id.
async fn open_session(conn: &mut Conn, confirm: bool) -> Result<String> {
    let init = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "http_load", "version": env!("CARGO_PKG_VERSION")},
        },
    }))?;
    let head = conn.post("", &init).await?;
    if head.status != 200 {
        return Err(format!("initialize: HTTP {}: {}", head.status, snippet(&conn.body)).into());
    }
    let response = response_of(&head, &conn.body, &json!(0))
        .ok_or_else(|| format!("initialize: no response in {}", snippet(&conn.body)))?;
    if !response["result"]["protocolVersion"].is_string() {
        return Err(format!("initialize: {response}").into());
    }
    let session = head
        .session
        .ok_or("initialize: no Mcp-Session-Id in the answer")?;
    if confirm {
        let note = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let headers = format!("mcp-session-id: {session}\r\nmcp-protocol-version: {LEGACY}\r\n");
        let head = conn.post(&headers, note).await?;
        if !matches!(head.status, 200 | 202 | 204) {
            return Err(format!("notifications/initialized: HTTP {}", head.status).into());
        }
    }
    Ok(session)
}

/// A connection ready for calls of one era, with its request pieces prepared.
struct Caller {
    conn: Conn,
    era: Era,
    /// The era's extra headers (session, version, method, name).
    headers: String,
    /// The connection's number, part of every call's text.
    index: u64,
    next_id: u64,
    size: usize,
    request: Vec<u8>,
    text: String,
    needle: Vec<u8>,
}

impl Caller {
    async fn open(addr: SocketAddr, era: Era, index: u64, size: usize) -> Result<Self> {
        let mut conn = Conn::connect(addr, None).await?;
        let headers = match era {
            Era::Modern => format!(
                "mcp-protocol-version: {MODERN}\r\nmcp-method: tools/call\r\nmcp-name: echo\r\n"
            ),
            Era::Legacy => {
                let session = open_session(&mut conn, true).await?;
                format!("mcp-session-id: {session}\r\nmcp-protocol-version: {LEGACY}\r\n")
            }
            Era::Plain => String::new(),
        };
        Ok(Self {
            conn,
            era,
            headers,
            index,
            next_id: 1,
            size,
            request: Vec::with_capacity(size + 256),
            text: String::with_capacity(size),
            needle: Vec::with_capacity(size + 16),
        })
    }

    /// Re-opens the connection (and the session) after a transport error.
    async fn reopen(&mut self) -> Result<()> {
        self.conn.reconnect().await?;
        if self.era == Era::Legacy {
            let session = open_session(&mut self.conn, true).await?;
            self.headers =
                format!("mcp-session-id: {session}\r\nmcp-protocol-version: {LEGACY}\r\n");
        }
        Ok(())
    }

    /// This call's text: the connection and call numbers as digits, zero-padded (or cut) to
    /// the case's size, so that every answer can be matched to its call.
    fn make_text(&mut self, id: u64) {
        self.text.clear();
        let digits = format!("{}{:09}", self.index, id);
        if digits.len() >= self.size {
            self.text.push_str(&digits[digits.len() - self.size..]);
        } else {
            for _ in 0..self.size - digits.len() {
                self.text.push('0');
            }
            self.text.push_str(&digits);
        }
    }

    /// One `tools/call echo`; `Ok(Err(..))` is a wrong answer, `Err` a transport failure.
    async fn call(&mut self, full_check: bool) -> std::io::Result<Result<(), String>> {
        let id = self.next_id;
        self.next_id += 1;
        self.make_text(id);
        self.request.clear();
        let _ = write!(
            self.request,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}"#,
            self.text
        );
        if self.era == Era::Modern {
            let _ = write!(
                self.request,
                r#","_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN}","io.modelcontextprotocol/clientCapabilities":{{}}}}"#
            );
        }
        self.request.extend_from_slice(b"}}");
        let request = std::mem::take(&mut self.request);
        let head = self.conn.post(&self.headers, &request).await;
        self.request = request;
        let head = head?;
        Ok(self.check(&head, id, full_check))
    }

    fn check(&mut self, head: &Head, id: u64, full: bool) -> Result<(), String> {
        let body = &self.conn.body;
        if head.status != 200 {
            return Err(format!("HTTP {}: {}", head.status, snippet(body)));
        }
        if !full {
            // The fast path: the call's own text and id are in the answer.
            self.needle.clear();
            self.needle.extend_from_slice(b"\"text\":\"");
            self.needle.extend_from_slice(self.text.as_bytes());
            self.needle.push(b'"');
            let text_ok = find(body, &self.needle).is_some();
            self.needle.clear();
            let _ = write!(self.needle, "\"id\":{id}");
            let id_ok = find(body, &self.needle).is_some_and(|at| {
                body.get(at + self.needle.len())
                    .is_some_and(|b| !b.is_ascii_digit())
            });
            if text_ok && id_ok && find(body, b"\"isError\":true").is_none() {
                return Ok(());
            }
        }
        // In full (and whenever the fast path did not match).
        let id_value = json!(id);
        let v = response_of(head, body, &id_value)
            .ok_or_else(|| format!("no response to call {id} in {}", snippet(body)))?;
        let ok = v["jsonrpc"] == "2.0"
            && v["id"] == id_value
            && v["result"]["content"].as_array().map(Vec::len) == Some(1)
            && v["result"]["content"][0]["type"] == "text"
            && v["result"]["content"][0]["text"].as_str() == Some(self.text.as_str())
            && v["result"]["isError"] != json!(true);
        if ok {
            Ok(())
        } else {
            Err(format!("wrong answer to call {id}: {}", snippet(body)))
        }
    }
}

/// What one connection's run of calls saw.
#[derive(Default)]
struct Tally {
    latencies_ns: Vec<u64>,
    errors: u64,
    samples: Vec<String>,
}

/// `count` calls on one connection, one at a time.
async fn run_calls(caller: &mut Caller, count: usize, check_all: bool) -> Result<Tally> {
    let mut tally = Tally {
        latencies_ns: Vec::with_capacity(count),
        ..Tally::default()
    };
    for i in 0..count {
        let full = check_all || (i as u64).is_multiple_of(SAMPLE_EVERY);
        let sent = Instant::now();
        let outcome = caller.call(full).await;
        let took = sent.elapsed();
        match outcome {
            Ok(Ok(())) => {
                tally
                    .latencies_ns
                    .push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
            }
            Ok(Err(e)) => {
                tally.errors += 1;
                if tally.samples.len() < 3 {
                    tally.samples.push(e);
                }
            }
            Err(e) => {
                tally.errors += 1;
                if tally.samples.len() < 3 {
                    tally.samples.push(format!("transport: {e}"));
                }
                caller
                    .reopen()
                    .await
                    .map_err(|e| format!("cannot reconnect after a failed call: {e}"))?;
            }
        }
    }
    Ok(tally)
}

/// Runs `total` calls split over every caller, concurrently; returns the callers, the merged
/// tally and the wall time.
async fn run_all(
    callers: Vec<Caller>,
    total: usize,
    check_all: bool,
) -> Result<(Vec<Caller>, Tally, Duration)> {
    let n = callers.len();
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(n);
    for (i, mut caller) in callers.into_iter().enumerate() {
        let count = total / n + usize::from(i < total % n);
        tasks.push(tokio::spawn(async move {
            let tally = run_calls(&mut caller, count, check_all).await;
            (caller, tally)
        }));
    }
    let mut callers = Vec::with_capacity(n);
    let mut all = Tally::default();
    let mut failure = None;
    for task in tasks {
        let (caller, tally) = task.await?;
        callers.push(caller);
        match tally {
            Ok(t) => {
                all.latencies_ns.extend(t.latencies_ns);
                all.errors += t.errors;
                all.samples.extend(t.samples);
            }
            Err(e) => failure = Some(e),
        }
    }
    let elapsed = start.elapsed();
    if let Some(e) = failure {
        return Err(e);
    }
    Ok((callers, all, elapsed))
}

// ---------------------------------------------------------------------------------------------
// Load cases

#[derive(Debug, Clone, Copy, Default)]
struct Measured {
    calls_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_us_per_call: f64,
    client_cpu_us_per_call: f64,
    peak_rss_kib: u64,
    errors: u64,
}

async fn run_case(opts: &Options, subject: &Subject, case: Case, ticks: u64) -> Result<Measured> {
    let server = Server::spawn(opts, subject).await?;
    let outcome = tokio::time::timeout(opts.timeout, measure(opts, subject, case, ticks, &server))
        .await
        .unwrap_or_else(|_| {
            Err(format!("{}: the case overran {:?}", subject.name, opts.timeout).into())
        });
    server.stop().await;
    outcome
}

async fn measure(
    opts: &Options,
    subject: &Subject,
    case: Case,
    ticks: u64,
    server: &Server,
) -> Result<Measured> {
    let mut callers = Vec::with_capacity(case.conns);
    for i in 0..case.conns {
        let caller = Caller::open(server.addr, subject.era, i as u64, case.size)
            .await
            .map_err(|e| format!("{}: opening connection {i}: {e}", subject.name))?;
        callers.push(caller);
    }
    let mut errors = 0;
    let mut samples = Vec::new();
    if opts.warmup > 0 {
        let warmup = opts.warmup.max(case.conns);
        let (c, tally, _) = run_all(callers, warmup, true).await?;
        callers = c;
        errors += tally.errors;
        samples.extend(tally.samples);
    }
    let self_pid = std::process::id();
    let cpu_before = procfs::cpu_ticks(server.pid)?;
    let client_before = procfs::cpu_ticks(self_pid)?;
    let (callers, tally, elapsed) = run_all(callers, case.calls, false).await?;
    let cpu_after = procfs::cpu_ticks(server.pid)?;
    let client_after = procfs::cpu_ticks(self_pid)?;
    let peak = procfs::peak_rss_kib(server.pid)?;
    drop(callers);
    errors += tally.errors;
    samples.extend(tally.samples);
    for s in samples.iter().take(5) {
        eprintln!("http_load: {} ({}): {s}", subject.name, case.label());
    }
    let mut lat = tally.latencies_ns;
    lat.sort_unstable();
    let n = lat.len().max(1);
    let pct = |p: f64| {
        let i = ((n as f64 * p).ceil() as usize).clamp(1, n) - 1;
        lat.get(i).map_or(f64::NAN, |&v| v as f64 / 1e3)
    };
    let calls = case.calls as f64;
    Ok(Measured {
        calls_per_sec: calls / elapsed.as_secs_f64(),
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        cpu_us_per_call: (cpu_after - cpu_before) as f64 * 1e6 / ticks as f64 / calls,
        client_cpu_us_per_call: (client_after - client_before) as f64 * 1e6 / ticks as f64 / calls,
        peak_rss_kib: peak,
        errors,
    })
}

/// A subject's figures for one case: the median of each figure over the rounds (errors summed).
fn summarise(runs: &[Measured]) -> Measured {
    let m = |f: fn(&Measured) -> f64| median(runs.iter().map(f).collect());
    Measured {
        calls_per_sec: m(|r| r.calls_per_sec),
        p50_us: m(|r| r.p50_us),
        p99_us: m(|r| r.p99_us),
        cpu_us_per_call: m(|r| r.cpu_us_per_call),
        client_cpu_us_per_call: m(|r| r.client_cpu_us_per_call),
        peak_rss_kib: m(|r| r.peak_rss_kib as f64) as u64,
        errors: runs.iter().map(|r| r.errors).sum(),
    }
}

// ---------------------------------------------------------------------------------------------
// Idle sessions

#[derive(Debug, Clone, Default)]
struct IdleRound {
    opened: u64,
    errors: u64,
    open_secs: f64,
    rss_alive_kib: u64,
    /// Sessions the server reported with all alive, when it has `/health`.
    reported_alive: Option<u64>,
    /// After expiry: sessions reported (when it has `/health`), RSS, and how long it took.
    reported_after: Option<u64>,
    rss_after_kib: u64,
    /// RSS `--idle-settle` seconds after expiry (when asked for): the allocator may hand freed
    /// pages back over some seconds.
    rss_settled_kib: Option<u64>,
    expiry_secs: f64,
    capped: bool,
    /// The HTTP status a request on the round's first session got after the wait: 404 when
    /// the server forgot it.
    first_probe: Option<u16>,
}

#[derive(Debug, Clone, Default)]
struct IdleReport {
    rss_before_kib: u64,
    rounds: Vec<IdleRound>,
    peak_rss_kib: u64,
    has_health: bool,
}

impl IdleReport {
    fn growth_kib(&self) -> u64 {
        self.rounds
            .iter()
            .map(|r| r.rss_alive_kib.saturating_sub(self.rss_before_kib))
            .max()
            .unwrap_or(0)
    }
}

/// The server's live session count from `GET /health`, if it reports one.
async fn health_sessions(addr: SocketAddr) -> Option<u64> {
    let mut conn = Conn::connect(addr, None).await.ok()?;
    let head = conn.get("/health").await.ok()?;
    if head.status != 200 {
        return None;
    }
    serde_json::from_slice::<Value>(&conn.body).ok()?["sessions"].as_u64()
}

/// The status of a `ping` on session `sid` (after its expiry: 404 when it is gone).
async fn probe_session(addr: SocketAddr, sid: &str) -> Option<u16> {
    let mut conn = Conn::connect(addr, None).await.ok()?;
    let headers = format!("mcp-session-id: {sid}\r\nmcp-protocol-version: {LEGACY}\r\n");
    let head = conn
        .post(&headers, br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .await
        .ok()?;
    Some(head.status)
}

async fn run_idle(opts: &Options, subject: &Subject) -> Result<IdleReport> {
    let server = Server::spawn(opts, subject).await?;
    let outcome = idle_rounds(opts, subject, &server).await;
    server.stop().await;
    outcome
}

async fn idle_rounds(opts: &Options, subject: &Subject, server: &Server) -> Result<IdleReport> {
    let has_health = health_sessions(server.addr).await.is_some();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut report = IdleReport {
        rss_before_kib: procfs::rss_kib(server.pid)?,
        has_health,
        ..IdleReport::default()
    };
    for _ in 0..opts.idle_rounds {
        let opened = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let first = Arc::new(std::sync::Mutex::new(None::<String>));
        let target = opts.idle_sessions as u64;
        let started = Instant::now();
        let mut tasks = Vec::new();
        for c in 0..opts.idle_connections {
            let (opened, errors, stop) = (opened.clone(), errors.clone(), stop.clone());
            let first = first.clone();
            // 127.0.0.2, 127.0.0.3, ...: one client address per connection.
            let local = Ipv4Addr::new(127, 0, (2 + c / 250) as u8, (2 + c % 250) as u8);
            let addr = server.addr;
            let name = subject.name.clone();
            tasks.push(tokio::spawn(async move {
                let mut conn = match Conn::connect(addr, Some(local)).await {
                    Ok(c) => c,
                    Err(e) => {
                        eprintln!("http_load: {name}: connecting from {local}: {e}");
                        errors.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                };
                let mut failures = 0;
                while !stop.load(Ordering::Relaxed) {
                    // Claim one session to open.
                    let claimed = opened.fetch_add(1, Ordering::Relaxed);
                    if claimed >= target {
                        opened.fetch_sub(1, Ordering::Relaxed);
                        break;
                    }
                    match open_session(&mut conn, false).await {
                        Ok(sid) => {
                            failures = 0;
                            if let Ok(mut f) = first.lock()
                                && f.is_none()
                            {
                                *f = Some(sid);
                            }
                        }
                        Err(e) => {
                            opened.fetch_sub(1, Ordering::Relaxed);
                            let n = errors.fetch_add(1, Ordering::Relaxed);
                            if n < 3 {
                                eprintln!("http_load: {name}: opening a session: {e}");
                            }
                            failures += 1;
                            if failures > 20 || conn.reconnect().await.is_err() {
                                break;
                            }
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
            }));
        }
        // Watch the server's memory while the sessions open.
        let mut capped = false;
        let watch_pid = server.pid;
        let cap = opts.idle_max_rss_kib;
        let watcher = {
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut capped = false;
                while !stop.load(Ordering::Relaxed) {
                    if procfs::rss_kib(watch_pid).is_ok_and(|r| r > cap) {
                        capped = true;
                        stop.store(true, Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                capped
            })
        };
        for t in tasks {
            t.await?;
        }
        stop.store(true, Ordering::Relaxed);
        capped |= watcher.await?;
        let open_secs = started.elapsed().as_secs_f64();
        tokio::time::sleep(Duration::from_millis(300)).await;
        let rss_alive_kib = procfs::rss_kib(server.pid)?;
        let reported_alive = if has_health {
            health_sessions(server.addr).await
        } else {
            None
        };
        // Wait for idle expiry.
        let expiry_started = Instant::now();
        let mut reported_after = None;
        if has_health {
            while expiry_started.elapsed() < opts.idle_wait {
                reported_after = health_sessions(server.addr).await;
                if reported_after == Some(0) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        } else {
            tokio::time::sleep(opts.idle_wait).await;
        }
        let expiry_secs = expiry_started.elapsed().as_secs_f64();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss_after_kib = procfs::rss_kib(server.pid)?;
        let rss_settled_kib = if opts.idle_settle.is_zero() {
            None
        } else {
            tokio::time::sleep(opts.idle_settle).await;
            Some(procfs::rss_kib(server.pid)?)
        };
        let first_sid = first.lock().ok().and_then(|f| f.clone());
        let first_probe = match first_sid {
            Some(sid) => probe_session(server.addr, &sid).await,
            None => None,
        };
        let r = IdleRound {
            opened: opened.load(Ordering::Relaxed),
            errors: errors.load(Ordering::Relaxed),
            open_secs,
            rss_alive_kib,
            reported_alive,
            reported_after,
            rss_after_kib,
            rss_settled_kib,
            expiry_secs,
            capped,
            first_probe,
        };
        report.rounds.push(r);
    }
    report.peak_rss_kib = procfs::peak_rss_kib(server.pid)?;
    Ok(report)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

// ---------------------------------------------------------------------------------------------
// Reporting

fn main() -> ExitCode {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("http_load: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = if opts.client_threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(opts.client_threads)
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("http_load: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&opts)) {
        Ok(Outcome {
            errors: 0,
            met: true,
        }) => ExitCode::SUCCESS,
        Ok(Outcome { errors: 0, .. }) => ExitCode::from(3),
        Ok(Outcome { errors, .. }) => {
            eprintln!("http_load: {errors} calls failed");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("http_load: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Outcome {
    errors: u64,
    met: bool,
}

async fn run(opts: &Options) -> Result<Outcome> {
    let ticks = procfs::clock_ticks_per_second();
    // runs[subject][case]: one entry per round.
    let mut runs = vec![vec![Vec::new(); opts.cases.len()]; opts.subjects.len()];
    let mut errors = 0;
    for round in 1..=opts.rounds {
        for (ci, &case) in opts.cases.iter().enumerate() {
            for (si, subject) in opts.subjects.iter().enumerate() {
                let m = run_case(opts, subject, case, ticks).await?;
                errors += m.errors;
                print_run(opts, round, subject, case, &m)?;
                runs[si][ci].push(m);
            }
        }
    }
    let mut idle = Vec::new();
    for subject in &opts.idle {
        let report = run_idle(opts, subject).await?;
        errors += report.rounds.iter().map(|r| r.errors).sum::<u64>();
        print_idle(opts, subject, &report)?;
        idle.push(report);
    }
    let summary: Vec<Vec<Measured>> = runs
        .iter()
        .map(|cases| cases.iter().map(|r| summarise(r)).collect())
        .collect();
    let mut out = std::io::stdout().lock();
    if opts.markdown {
        if !opts.subjects.is_empty() {
            print_markdown(&mut out, opts, &summary)?;
        }
        if !opts.idle.is_empty() {
            print_idle_markdown(&mut out, opts, &idle)?;
        }
    }
    let mut met = true;
    if !opts.checks.is_empty() || !opts.idle_checks.is_empty() {
        writeln!(out)?;
        writeln!(out, "Targets:")?;
    }
    for (name, base) in &opts.checks {
        met &= print_checks(&mut out, opts, &summary, name, base)?;
    }
    for name in &opts.idle_checks {
        let i = opts
            .idle
            .iter()
            .position(|s| &s.name == name)
            .ok_or("no idle subject")?;
        met &= print_idle_check(&mut out, opts, name, &idle[i])?;
    }
    if errors > 0 {
        writeln!(out)?;
        writeln!(out, "ERRORS: {errors} calls failed (details on stderr)")?;
    }
    Ok(Outcome { errors, met })
}

fn print_run(
    opts: &Options,
    round: usize,
    subject: &Subject,
    case: Case,
    m: &Measured,
) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if opts.json {
        let record = json!({
            "round": round,
            "subject": subject.name,
            "era": subject.era.label(),
            "size": case.size,
            "connections": case.conns,
            "calls": case.calls,
            "calls_per_sec": m.calls_per_sec,
            "p50_us": m.p50_us,
            "p99_us": m.p99_us,
            "cpu_us_per_call": m.cpu_us_per_call,
            "client_cpu_us_per_call": m.client_cpu_us_per_call,
            "peak_rss_kib": m.peak_rss_kib,
            "errors": m.errors,
        });
        writeln!(out, "{record}")?;
    } else {
        writeln!(
            out,
            "round {round}  {:<20} {:<22} {:>9.0} calls/s  p50 {:>8.1} µs  p99 {:>8.1} µs  server cpu {:>7.2} µs/call  client cpu {:>6.2} µs/call  peak RSS {:>6.1} MiB  errors {}",
            subject.name,
            case.label(),
            m.calls_per_sec,
            m.p50_us,
            m.p99_us,
            m.cpu_us_per_call,
            m.client_cpu_us_per_call,
            mib(m.peak_rss_kib),
            m.errors,
        )?;
    }
    Ok(())
}

fn print_idle(opts: &Options, subject: &Subject, r: &IdleReport) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if opts.json {
        let rounds: Vec<Value> = r
            .rounds
            .iter()
            .map(|x| {
                json!({
                    "sessions": x.opened,
                    "errors": x.errors,
                    "open_secs": x.open_secs,
                    "rss_alive_kib": x.rss_alive_kib,
                    "sessions_reported_alive": x.reported_alive,
                    "sessions_reported_after": x.reported_after,
                    "rss_after_kib": x.rss_after_kib,
                    "rss_settled_kib": x.rss_settled_kib,
                    "expiry_secs": x.expiry_secs,
                    "capped": x.capped,
                    "first_session_probe_status": x.first_probe,
                })
            })
            .collect();
        let record = json!({
            "subject": subject.name,
            "case": "idle_sessions",
            "rss_before_kib": r.rss_before_kib,
            "peak_rss_kib": r.peak_rss_kib,
            "has_health": r.has_health,
            "rounds": rounds,
        });
        writeln!(out, "{record}")?;
    } else {
        for (i, x) in r.rounds.iter().enumerate() {
            writeln!(
                out,
                "idle {:<20} round {}: {} sessions ({} errors{}) in {:.1} s; RSS {:.1} MiB before, {:.1} MiB alive (+{:.1} MiB, {:.1} KiB/session), {:.1} MiB after expiry ({:.1} s; first session then: {}){}",
                subject.name,
                i + 1,
                x.opened,
                x.errors,
                if x.capped { ", RSS cap reached" } else { "" },
                x.open_secs,
                mib(r.rss_before_kib),
                mib(x.rss_alive_kib),
                mib(x.rss_alive_kib.saturating_sub(r.rss_before_kib)),
                x.rss_alive_kib.saturating_sub(r.rss_before_kib) as f64 / (x.opened.max(1)) as f64,
                mib(x.rss_after_kib),
                x.expiry_secs,
                probe_label(x.first_probe),
                x.rss_settled_kib.map_or_else(String::new, |k| format!(
                    "; {:.1} MiB {} s later",
                    mib(k),
                    opts.idle_settle.as_secs()
                )),
            )?;
        }
    }
    Ok(())
}

fn subject_index(opts: &Options, name: &str) -> Result<usize> {
    opts.subjects
        .iter()
        .position(|s| s.name == name)
        .ok_or_else(|| format!("no subject named {name:?}").into())
}

fn print_markdown(
    out: &mut impl std::io::Write,
    opts: &Options,
    summary: &[Vec<Measured>],
) -> Result<()> {
    let rounds = if opts.rounds > 1 {
        format!(", median of {} rounds", opts.rounds)
    } else {
        String::new()
    };
    writeln!(out)?;
    let mut header = format!("| case | subject | era | calls/s{rounds} |");
    let mut rule = "|---|---|---|---:|".to_owned();
    for r in &opts.ratio_to {
        let _ = write!(header, " × {r} |");
        rule.push_str("---:|");
    }
    header.push_str(
        " p50 µs | p99 µs | server CPU µs/call | client CPU µs/call | peak RSS MiB | errors |",
    );
    rule.push_str("---:|---:|---:|---:|---:|---:|");
    writeln!(out, "{header}")?;
    writeln!(out, "{rule}")?;
    let bases: Vec<usize> = opts
        .ratio_to
        .iter()
        .map(|r| subject_index(opts, r))
        .collect::<Result<_>>()?;
    for (ci, case) in opts.cases.iter().enumerate() {
        for (si, subject) in opts.subjects.iter().enumerate() {
            let m = &summary[si][ci];
            let mut row = format!(
                "| {} | {} | {} | {:.0} |",
                case.label(),
                subject.name,
                subject.era.label(),
                m.calls_per_sec
            );
            for &b in &bases {
                let _ = write!(
                    row,
                    " {:.2}× |",
                    m.calls_per_sec / summary[b][ci].calls_per_sec
                );
            }
            let _ = write!(
                row,
                " {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
                m.p50_us,
                m.p99_us,
                m.cpu_us_per_call,
                m.client_cpu_us_per_call,
                mib(m.peak_rss_kib),
                m.errors
            );
            writeln!(out, "{row}")?;
        }
    }
    Ok(())
}

fn print_idle_markdown(
    out: &mut impl std::io::Write,
    opts: &Options,
    reports: &[IdleReport],
) -> Result<()> {
    writeln!(out)?;
    writeln!(
        out,
        "| idle legacy sessions | round | sessions | RSS before MiB | RSS all alive MiB | growth MiB | KiB/session | RSS after expiry MiB | RSS {} s later MiB | sessions left | first session afterwards | expiry s |",
        opts.idle_settle.as_secs()
    )?;
    writeln!(
        out,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"
    )?;
    for (subject, r) in opts.idle.iter().zip(reports) {
        for (i, x) in r.rounds.iter().enumerate() {
            let growth = x.rss_alive_kib.saturating_sub(r.rss_before_kib);
            writeln!(
                out,
                "| {} | {} | {}{} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {} | {} | {:.1} |",
                subject.name,
                i + 1,
                x.opened,
                if x.capped { " (RSS cap)" } else { "" },
                mib(r.rss_before_kib),
                mib(x.rss_alive_kib),
                mib(growth),
                growth as f64 / x.opened.max(1) as f64,
                mib(x.rss_after_kib),
                x.rss_settled_kib
                    .map_or_else(|| "—".to_owned(), |k| format!("{:.1}", mib(k))),
                x.reported_after
                    .map_or_else(|| "n/a (no /health)".to_owned(), |n| n.to_string()),
                probe_label(x.first_probe),
                x.expiry_secs,
            )?;
        }
    }
    Ok(())
}

fn probe_label(status: Option<u16>) -> String {
    match status {
        Some(404) => "gone (404)".to_owned(),
        Some(s @ 200..=299) => format!("alive ({s})"),
        Some(s) => format!("HTTP {s}"),
        None => "?".to_owned(),
    }
}

fn print_checks(
    out: &mut impl std::io::Write,
    opts: &Options,
    summary: &[Vec<Measured>],
    name: &str,
    base: &str,
) -> Result<bool> {
    let s = subject_index(opts, name)?;
    let b = subject_index(opts, base)?;
    let mut met = true;
    for (ci, case) in opts.cases.iter().enumerate() {
        if case.size != 16 {
            continue;
        }
        let ratio = summary[s][ci].calls_per_sec / summary[b][ci].calls_per_sec;
        let ok = ratio >= TARGET_RATIO;
        met &= ok;
        writeln!(
            out,
            "- {}: {name} {ratio:.2}× {base} (target ≥ {TARGET_RATIO}×): {}",
            case.label(),
            if ok { "met" } else { "MISSED" }
        )?;
    }
    Ok(met)
}

fn print_idle_check(
    out: &mut impl std::io::Write,
    opts: &Options,
    name: &str,
    r: &IdleReport,
) -> Result<bool> {
    let growth = mib(r.growth_kib());
    let all_opened = r
        .rounds
        .iter()
        .all(|x| x.opened == opts.idle_sessions as u64 && !x.capped);
    let growth_ok = all_opened && growth < TARGET_IDLE_GROWTH_MIB;
    writeln!(
        out,
        "- {} idle sessions: {name} grew {growth:.1} MiB with all alive (target < {TARGET_IDLE_GROWTH_MIB} MiB): {}",
        opts.idle_sessions,
        if growth_ok { "met" } else { "MISSED" }
    )?;
    // Reclaimed: every session expired (when the server reports them), and nothing
    // accumulated: after expiry, the last round's RSS is within 10% of a round's growth of the
    // first round's.
    let expired = r
        .rounds
        .iter()
        .all(|x| x.reported_after.is_none_or(|n| n == 0) && x.first_probe == Some(404));
    let first_after = r.rounds.first().map_or(0, |x| x.rss_after_kib);
    let last_after = r.rounds.last().map_or(0, |x| x.rss_after_kib);
    let drift = last_after.saturating_sub(first_after);
    let flat = r.rounds.len() < 2 || drift * 10 <= r.growth_kib().max(1024);
    // With a settle time: memory back near the start, within 8 MiB (allocator metadata and
    // part-used slabs; the library's fault test uses the same bound).
    let settled_ok = r.rounds.iter().all(|x| {
        x.rss_settled_kib
            .is_none_or(|k| k <= r.rss_before_kib + 8 * 1024)
    });
    let reclaimed = expired && flat && settled_ok;
    let settled = r
        .rounds
        .iter()
        .filter_map(|x| x.rss_settled_kib)
        .map(|k| format!("{:.1}", mib(k)))
        .collect::<Vec<_>>();
    let settled = if settled.is_empty() {
        String::new()
    } else {
        format!(
            "; RSS {} s after expiry {} MiB (start {:.1} MiB; allowed up to 8 MiB above it)",
            opts.idle_settle.as_secs(),
            settled.join(", "),
            mib(r.rss_before_kib)
        )
    };
    let detail = if r.rounds.len() >= 2 {
        format!(
            "; RSS after expiry {:.1} MiB in round 1, {:.1} MiB in round {}",
            mib(first_after),
            mib(last_after),
            r.rounds.len()
        )
    } else {
        format!("; RSS after expiry {:.1} MiB", mib(last_after))
    };
    writeln!(
        out,
        "- all reclaimed after idle expiry: {}{detail}{settled}: {}",
        if r.has_health {
            "sessions left per round ".to_owned()
                + &r.rounds
                    .iter()
                    .map(|x| x.reported_after.map_or("?".to_owned(), |n| n.to_string()))
                    .collect::<Vec<_>>()
                    .join(", ")
        } else {
            "no /health to count sessions".to_owned()
        } + &format!(
            "; first session of each round afterwards: {}",
            r.rounds
                .iter()
                .map(|x| probe_label(x.first_probe))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        if reclaimed { "met" } else { "MISSED" }
    )?;
    Ok(growth_ok && reclaimed)
}
