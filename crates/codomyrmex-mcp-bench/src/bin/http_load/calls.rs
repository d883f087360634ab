//! Sessions and calls: the legacy handshake, one connection's `tools/call` loop with every
//! answer checked, and all connections of a case run together. It counts and times calls;
//! it does not start servers or print anything.

use std::io::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use codomyrmex_mcp_bench::util::{echoes, snippet};
use serde_json::json;

use crate::Result;
use crate::args::{Era, LEGACY, MODERN};
use crate::client::{Conn, Head, find, response_of};

/// How often a measured answer is parsed in full (every warm-up answer is).
const SAMPLE_EVERY: u64 = 97;

/// Opens a legacy session on `conn`: `initialize`, then (when `confirm`)
/// `notifications/initialized`. Returns the session id.
pub(crate) async fn open_session(conn: &mut Conn, confirm: bool) -> Result<String> {
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
pub(crate) struct Caller {
    pub(crate) conn: Conn,
    pub(crate) era: Era,
    /// The era's extra headers (session, version, method, name).
    pub(crate) headers: String,
    /// The connection's number, part of every call's text.
    index: u64,
    next_id: u64,
    pub(crate) size: usize,
    pub(crate) request: Vec<u8>,
    pub(crate) text: String,
    pub(crate) needle: Vec<u8>,
}

impl Caller {
    pub(crate) async fn open(addr: SocketAddr, era: Era, index: u64, size: usize) -> Result<Self> {
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
    pub(crate) async fn call(&mut self, full_check: bool) -> std::io::Result<Result<(), String>> {
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

    pub(crate) fn check(&mut self, head: &Head, id: u64, full: bool) -> Result<(), String> {
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
            let mut text_ok = find(body, &self.needle).is_some();
            if !text_ok {
                // A server on the seed's Python API: `{"result": text}` ([`echoes`]).
                self.needle.clear();
                self.needle
                    .extend_from_slice(b"\"structuredContent\":{\"result\":\"");
                self.needle.extend_from_slice(self.text.as_bytes());
                self.needle.extend_from_slice(b"\"}");
                text_ok = find(body, &self.needle).is_some();
            }
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
        let ok = v["jsonrpc"] == "2.0" && v["id"] == id_value && echoes(&v["result"], &self.text);
        if ok {
            Ok(())
        } else {
            Err(format!("wrong answer to call {id}: {}", snippet(body)))
        }
    }
}

/// What one connection's run of calls saw.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) latencies_ns: Vec<u64>,
    pub(crate) errors: u64,
    pub(crate) samples: Vec<String>,
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
pub(crate) async fn run_all(
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
