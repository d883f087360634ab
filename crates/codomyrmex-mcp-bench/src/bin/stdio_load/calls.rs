//! Requests, responses and the call loops: the `tools/call` lines written to the server, the
//! answers read back and checked, one call in flight or pipelined. It times calls; it does not
//! start servers or print anything.

use std::io::Write as _;
use std::process::ChildStdin;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use codomyrmex_mcp_bench::util::{echoes, snippet};

use crate::Result;
use crate::server::Server;

/// Builds `tools/call` request lines for one payload.
pub(crate) struct Requests {
    prefix: &'static [u8],
    suffix: Vec<u8>,
    pub(crate) payload: String,
}

impl Requests {
    pub(crate) fn new(size: usize) -> Self {
        // Plain ASCII letters and digits: nothing to escape, and never `"id":`.
        const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
        let payload: String = (0..size)
            .map(|i| char::from(ALPHABET[i % ALPHABET.len()]))
            .collect();
        let suffix = format!(
            ",\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"text\":\"{payload}\"}}}}}}\n"
        )
        .into_bytes();
        Self {
            prefix: b"{\"jsonrpc\":\"2.0\",\"id\":",
            suffix,
            payload,
        }
    }

    pub(crate) fn write(&self, id: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(self.prefix);
        out.extend_from_slice(id.to_string().as_bytes());
        out.extend_from_slice(&self.suffix);
    }

    /// Checks a response in full: the right id, and the payload echoed ([`echoes`]).
    pub(crate) fn check(&self, line: &[u8], id: u64) -> Result<()> {
        let v: Value = serde_json::from_slice(line)
            .map_err(|e| format!("response is not JSON ({e}): {}", snippet(line)))?;
        let ok =
            v["jsonrpc"] == "2.0" && v["id"] == json!(id) && echoes(&v["result"], &self.payload);
        if ok {
            Ok(())
        } else {
            Err(format!("wrong response to call {id}: {}", snippet(line)).into())
        }
    }
}

/// The id of a response, found without parsing the whole line (payloads never contain `"id":`).
fn response_id(line: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"id\":";
    let at = line.windows(KEY.len()).position(|w| w == KEY)?;
    let rest = &line[at + KEY.len()..];
    let rest = &rest[rest.iter().position(|b| !b.is_ascii_whitespace())?..];
    let end = rest
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(rest.len());
    std::str::from_utf8(&rest[..end]).ok()?.parse().ok()
}

/// What one run of calls measured.
pub(crate) struct Run {
    pub(crate) elapsed: Duration,
    pub(crate) latencies_ns: Vec<u64>,
}

/// How often a measured answer is checked in full (every answer during warm-up).
const SAMPLE_EVERY: u64 = 97;

/// Runs `count` calls with ids `first_id..`, one or several in flight.
pub(crate) fn run_calls(
    server: &mut Server,
    requests: &Requests,
    first_id: u64,
    count: usize,
    in_flight: usize,
    check_all: bool,
) -> Result<Run> {
    if in_flight == 1 {
        run_sequential(server, requests, first_id, count, check_all)
    } else {
        run_pipelined(server, requests, first_id, count, in_flight, check_all)
    }
}

fn validate(requests: &Requests, line: &[u8], id: u64, check_all: bool) -> Result<()> {
    if check_all || id.is_multiple_of(SAMPLE_EVERY) {
        requests.check(line, id)
    } else if line.len() < requests.payload.len() {
        Err(format!("short response to call {id}: {}", snippet(line)).into())
    } else {
        Ok(())
    }
}

/// One call at a time, on this thread: write, read the answer, repeat.
fn run_sequential(
    server: &mut Server,
    requests: &Requests,
    first_id: u64,
    count: usize,
    check_all: bool,
) -> Result<Run> {
    let mut latencies_ns = Vec::with_capacity(count);
    let mut out = Vec::with_capacity(requests.suffix.len() + 64);
    let mut line = Vec::with_capacity(requests.suffix.len() + 1024);
    let start = Instant::now();
    for i in 0..count as u64 {
        let id = first_id + i;
        out.clear();
        requests.write(id, &mut out);
        let sent = Instant::now();
        server.stdin()?.write_all(&out)?;
        server.read_line(&mut line)?;
        let took = sent.elapsed();
        if response_id(&line) != Some(id) {
            return Err(format!("expected the answer to call {id}: {}", snippet(&line)).into());
        }
        validate(requests, &line, id, check_all)?;
        latencies_ns.push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
    }
    Ok(Run {
        elapsed: start.elapsed(),
        latencies_ns,
    })
}

/// Up to `in_flight` calls outstanding. A writer thread keeps the window full, writing every
/// request it may send in one go; this thread reads answers (in any order) and returns credit
/// to the writer once per read from the pipe.
fn run_pipelined(
    server: &mut Server,
    requests: &Requests,
    first_id: u64,
    count: usize,
    in_flight: usize,
    check_all: bool,
) -> Result<Run> {
    let (credit_tx, credit_rx) = mpsc::channel::<usize>();
    // (first index, how many, when written)
    let (sent_tx, sent_rx) = mpsc::channel::<(usize, usize, Instant)>();
    let mut stdin = server.stdin.take().ok_or("stdin already closed")?;
    let mut sent_at: Vec<Option<Instant>> = vec![None; count];
    let mut latencies_ns = Vec::with_capacity(count);
    let mut line = Vec::with_capacity(requests.suffix.len() + 1024);

    let (outcome, stdin) = std::thread::scope(|scope| {
        let writer = scope.spawn(move || -> (Result<()>, ChildStdin) {
            let mut buf = Vec::with_capacity(in_flight * (requests.suffix.len() + 32));
            let mut sent = 0usize;
            let mut answered = 0usize;
            while sent < count {
                while sent - answered >= in_flight {
                    match credit_rx.recv() {
                        Ok(n) => answered += n,
                        Err(_) => return (Ok(()), stdin),
                    }
                    while let Ok(n) = credit_rx.try_recv() {
                        answered += n;
                    }
                }
                buf.clear();
                let from = sent;
                while sent < count && sent - answered < in_flight {
                    requests.write(first_id + sent as u64, &mut buf);
                    sent += 1;
                }
                if sent_tx.send((from, sent - from, Instant::now())).is_err() {
                    return (Ok(()), stdin);
                }
                if let Err(e) = stdin.write_all(&buf) {
                    return (Err(e.into()), stdin);
                }
            }
            (Ok(()), stdin)
        });

        let start = Instant::now();
        let read = (|| -> Result<()> {
            let mut uncredited = 0;
            for _ in 0..count {
                server.read_line(&mut line)?;
                let now = Instant::now();
                let id = response_id(&line)
                    .ok_or_else(|| format!("an answer without a call id: {}", snippet(&line)))?;
                let index = id
                    .checked_sub(first_id)
                    .and_then(|i| usize::try_from(i).ok())
                    .filter(|&i| i < count)
                    .ok_or_else(|| format!("an answer to an unknown call {id}"))?;
                validate(requests, &line, id, check_all)?;
                while sent_at[index].is_none() {
                    let (from, n, at) = sent_rx.recv().map_err(|_| "the writer stopped")?;
                    for slot in &mut sent_at[from..from + n] {
                        *slot = Some(at);
                    }
                }
                let sent = sent_at[index].take().ok_or("a call answered twice")?;
                latencies_ns.push(u64::try_from((now - sent).as_nanos()).unwrap_or(u64::MAX));
                uncredited += 1;
                if server.stdout.buffer().is_empty() {
                    // Nothing more without another read: hand the window back now.
                    let _ = credit_tx.send(uncredited);
                    uncredited = 0;
                }
            }
            Ok(())
        })();
        let elapsed = start.elapsed();
        drop(credit_tx);
        let (written, stdin) = match writer.join() {
            Ok(r) => r,
            Err(_) => return (Err("the writer thread panicked".into()), None),
        };
        (read.and(written).map(|()| elapsed), Some(stdin))
    });
    server.stdin = stdin;
    let elapsed = outcome?;
    Ok(Run {
        elapsed,
        latencies_ns,
    })
}
