//! Whole-process stdio round trips against any MCP server command.
//!
//! ```text
//! stdio_load [OPTIONS] -- COMMAND [ARGS...]
//! ```
//!
//! For each case it spawns the server, performs the legacy handshake (`initialize` at
//! `2025-11-25`, then `notifications/initialized`), runs warm-up calls, then runs the measured
//! `tools/call` calls of the `echo` tool with a payload of the case's size, either one in flight
//! (write, wait for the answer, repeat) or pipelined (up to K in flight). It reports calls/s,
//! mean/p50/p99 latency, the server's CPU time per call (utime+stime from `/proc/PID/stat`,
//! read before and after the measured calls), its peak RSS (`VmHWM` from `/proc/PID/status`)
//! and the cold start: the time from spawn to the first `initialize` response, measured on
//! every spawn (the case's own and `--cold-starts` extra ones) and summarised as a median.
//!
//! Every warm-up answer and a sample of measured answers are checked in full (the echoed text
//! must come back as the single text block); every measured answer must carry a known id.
//!
//! One subject is given after `--`; several with `--subject NAME=COMMAND` (the command is split
//! on whitespace). With several subjects and `--rounds R`, every round runs every case on every
//! subject in turn, and the figures reported are each subject's median over the rounds, so that
//! ratios between subjects come from the same run under the same conditions.
//!
//! Options:
//!   --name NAME             label for the subject given after `--` (default: its file name)
//!   --subject NAME=COMMAND  a subject; repeatable
//!   --case SIZE:K[:N]       a case: payload SIZE (bytes, or with K/KiB), K in flight, N calls;
//!                           repeatable (default: 16:1, 16:64, 64KiB:1)
//!   --size SIZE             with --in-flight: a single case (instead of --case)
//!   --in-flight K           calls in flight for --size (default 1)
//!   --calls N               measured calls for cases that do not give N (default 20000)
//!   --warmup W              warm-up calls per case (default 2000, at most N)
//!   --cold-starts R         extra spawns per subject that only measure the cold start (default 5)
//!   --rounds R              run everything R times, interleaved; report medians (default 1)
//!   --timeout SECS          give up on a case after this long (default 120)
//!   --show-stderr           let the servers' stderr through (default: discarded)
//!   --json                  print one JSON object per line instead of text
//!   --markdown              also print a markdown table of the medians
//!   --ratio-to NAME         add a column: calls/s as a multiple of subject NAME's; repeatable
//!   --check SUBJECT=BASE    check SUBJECT against the issue's targets relative to BASE
//!                           (exit status 3 when one is missed)
//!   --targets LIST          which targets --check checks: any of throughput, rss, cold,
//!                           comma-separated (default: all three)

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use codomyrmex_mcp_bench::procfs::{clock_ticks_per_second, cpu_ticks, peak_rss_kib};
use codomyrmex_mcp_bench::util::{median, parse_size};
use serde_json::{Value, json};

type Error = Box<dyn std::error::Error + Send + Sync>;
type Result<T, E = Error> = std::result::Result<T, E>;

const PROTOCOL_VERSION: &str = "2025-11-25";

#[derive(Debug, Clone, Copy)]
struct Case {
    size: usize,
    in_flight: usize,
    calls: usize,
}

impl Case {
    fn label(&self) -> String {
        format!("{} x{}", size_label(self.size), self.in_flight)
    }
}

fn size_label(size: usize) -> String {
    if size >= 1024 && size.is_multiple_of(1024) {
        format!("{}KiB", size / 1024)
    } else {
        format!("{size}B")
    }
}

#[derive(Debug, Clone)]
struct Subject {
    name: String,
    command: Vec<String>,
}

#[derive(Debug)]
struct Options {
    subjects: Vec<Subject>,
    cases: Vec<Case>,
    warmup: usize,
    cold_starts: usize,
    rounds: usize,
    timeout: Duration,
    show_stderr: bool,
    json: bool,
    markdown: bool,
    ratio_to: Vec<String>,
    checks: Vec<(String, String)>,
    targets: Targets,
}

const USAGE: &str = "usage: stdio_load [--subject NAME=COMMAND]... [--case SIZE:K[:N]]... \
[--size SIZE --in-flight K] [--calls N] [--warmup W] [--cold-starts R] [--rounds R] [--timeout SECS] \
[--show-stderr] [--json] [--markdown] [--ratio-to NAME]... [--check SUBJECT=BASE]... [--targets LIST] \
[--name NAME] [-- COMMAND [ARGS...]]";

fn split_pair(s: &str, what: &str) -> Result<(String, String)> {
    let (a, b) = s
        .split_once('=')
        .ok_or_else(|| format!("{what} wants NAME=VALUE, got {s:?}"))?;
    Ok((a.trim().to_owned(), b.trim().to_owned()))
}

fn parse_args() -> Result<Options> {
    let mut args = std::env::args().skip(1);
    let mut name = None;
    let mut subjects = Vec::new();
    let mut case_specs = Vec::new();
    let mut size = None;
    let mut in_flight = 1;
    let mut calls = 20_000;
    let mut warmup = 2_000;
    let mut cold_starts = 5;
    let mut rounds = 1;
    let mut timeout = 120;
    let mut show_stderr = false;
    let mut json = false;
    let mut markdown = false;
    let mut ratio_to = Vec::new();
    let mut checks = Vec::new();
    let mut targets = Targets::ALL;
    let mut command = Vec::new();
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .ok_or_else(|| format!("{arg} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--name" => name = Some(value()?),
            "--subject" => {
                let (n, cmd) = split_pair(&value()?, "--subject")?;
                let command: Vec<String> = cmd.split_whitespace().map(str::to_owned).collect();
                if command.is_empty() {
                    return Err(format!("--subject {n}: no command").into());
                }
                subjects.push(Subject { name: n, command });
            }
            "--case" => case_specs.push(value()?),
            "--size" => size = Some(parse_size(&value()?)?),
            "--in-flight" => in_flight = value()?.parse()?,
            "--calls" => calls = value()?.parse()?,
            "--warmup" => warmup = value()?.parse()?,
            "--cold-starts" => cold_starts = value()?.parse()?,
            "--rounds" => rounds = value()?.parse()?,
            "--timeout" => timeout = value()?.parse()?,
            "--show-stderr" => show_stderr = true,
            "--json" => json = true,
            "--markdown" => markdown = true,
            "--ratio-to" => ratio_to.push(value()?),
            "--check" => checks.push(split_pair(&value()?, "--check")?),
            "--targets" => targets = Targets::parse(&value()?)?,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            "--" => {
                command.extend(args.by_ref());
                break;
            }
            other => return Err(format!("unknown argument {other:?}\n{USAGE}").into()),
        }
    }
    if !command.is_empty() {
        let name = name.unwrap_or_else(|| {
            std::path::Path::new(&command[0])
                .file_name()
                .map_or_else(|| command[0].clone(), |n| n.to_string_lossy().into_owned())
        });
        subjects.push(Subject { name, command });
    }
    if subjects.is_empty() {
        return Err(format!("no server command given\n{USAGE}").into());
    }
    for wanted in ratio_to
        .iter()
        .chain(checks.iter().flat_map(|(a, b)| [a, b]))
    {
        if !subjects.iter().any(|s| &s.name == wanted) {
            return Err(format!("no subject named {wanted:?}").into());
        }
    }
    let mut cases = Vec::new();
    if let Some(size) = size {
        cases.push(Case {
            size,
            in_flight,
            calls,
        });
    }
    for spec in &case_specs {
        let parts: Vec<&str> = spec.split(':').collect();
        let case = match parts.as_slice() {
            [s, k] => Case {
                size: parse_size(s)?,
                in_flight: k.parse()?,
                calls,
            },
            [s, k, n] => Case {
                size: parse_size(s)?,
                in_flight: k.parse()?,
                calls: n.parse()?,
            },
            _ => return Err(format!("bad --case {spec:?}: want SIZE:K[:N]").into()),
        };
        cases.push(case);
    }
    if cases.is_empty() {
        for (size, in_flight) in [(16, 1), (16, 64), (64 * 1024, 1)] {
            cases.push(Case {
                size,
                in_flight,
                calls,
            });
        }
    }
    if cases.iter().any(|c| c.in_flight == 0 || c.calls == 0) || rounds == 0 {
        return Err("in-flight, calls and rounds must be at least 1".into());
    }
    Ok(Options {
        subjects,
        cases,
        warmup,
        cold_starts,
        rounds,
        timeout: Duration::from_secs(timeout),
        show_stderr,
        json,
        markdown,
        ratio_to,
        checks,
        targets,
    })
}

// ---------------------------------------------------------------------------------------------
// The server process and what /proc says about it.

/// A spawned server: its pipes, and a watchdog that kills it if the case overruns.
struct Server {
    child: Arc<Mutex<Child>>,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    spawned_at: Instant,
    watchdog: Arc<(Mutex<bool>, Condvar)>,
}

impl Server {
    fn spawn(opts: &Options, subject: &Subject) -> Result<Self> {
        let mut cmd = Command::new(&subject.command[0]);
        cmd.args(&subject.command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if opts.show_stderr {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        let spawned_at = Instant::now();
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start {:?}: {e}", subject.command[0]))?;
        let pid = child.id();
        let stdin = child.stdin.take().ok_or("no stdin pipe")?;
        let stdout = child.stdout.take().ok_or("no stdout pipe")?;
        let child = Arc::new(Mutex::new(child));
        let watchdog = Arc::new((Mutex::new(false), Condvar::new()));
        {
            let child = child.clone();
            let watchdog = watchdog.clone();
            let timeout = opts.timeout;
            std::thread::spawn(move || {
                let (done, cv) = &*watchdog;
                let Ok(guard) = done.lock() else { return };
                let Ok((guard, result)) = cv.wait_timeout_while(guard, timeout, |d| !*d) else {
                    return;
                };
                if result.timed_out() && !*guard {
                    eprintln!("stdio_load: the server overran {timeout:?}; killing it");
                    if let Ok(mut c) = child.lock() {
                        let _ = c.kill();
                    }
                }
            });
        }
        Ok(Self {
            child,
            pid,
            stdin: Some(stdin),
            stdout: BufReader::with_capacity(256 * 1024, stdout),
            spawned_at,
            watchdog,
        })
    }

    fn stdin(&mut self) -> Result<&mut ChildStdin> {
        self.stdin
            .as_mut()
            .ok_or_else(|| "stdin already closed".into())
    }

    /// Reads one line (without its newline) into `line`.
    fn read_line(&mut self, line: &mut Vec<u8>) -> Result<()> {
        line.clear();
        if self.stdout.read_until(b'\n', line)? == 0 {
            return Err("the server closed its output".into());
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        Ok(())
    }

    /// Sends `initialize`, waits for its response, sends `notifications/initialized`.
    /// Returns the cold start: spawn to the `initialize` response.
    fn handshake(&mut self) -> Result<Duration> {
        let init = json!({
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "stdio_load", "version": env!("CARGO_PKG_VERSION")},
            },
        });
        let mut bytes = serde_json::to_vec(&init)?;
        bytes.push(b'\n');
        self.stdin()?.write_all(&bytes)?;
        let mut line = Vec::new();
        self.read_line(&mut line)?;
        let cold = self.spawned_at.elapsed();
        let v: Value = serde_json::from_slice(&line)
            .map_err(|e| format!("initialize response is not JSON ({e})"))?;
        if v["id"] != json!(0) || !v["result"]["protocolVersion"].is_string() {
            return Err(format!("unexpected initialize response: {}", truncate(&line)).into());
        }
        self.stdin()?
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
        Ok(cold)
    }

    /// Closes stdin and waits for a clean exit.
    fn finish(mut self) -> Result<()> {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        self.stdout.read_to_end(&mut rest)?;
        let status = loop {
            let polled = self
                .child
                .lock()
                .map_err(|_| "child lock poisoned")?
                .try_wait()?;
            if let Some(s) = polled {
                break s;
            }
            std::thread::sleep(Duration::from_millis(2));
        };
        let (done, cv) = &*self.watchdog;
        if let Ok(mut d) = done.lock() {
            *d = true;
        }
        cv.notify_all();
        if !status.success() {
            return Err(format!("the server exited with {status}").into());
        }
        if !rest.iter().all(u8::is_ascii_whitespace) {
            return Err(format!("unexpected output after EOF: {}", truncate(&rest)).into());
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Requests and responses.

/// Builds `tools/call` request lines for one payload.
struct Requests {
    prefix: &'static [u8],
    suffix: Vec<u8>,
    payload: String,
}

impl Requests {
    fn new(size: usize) -> Self {
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

    fn write(&self, id: u64, out: &mut Vec<u8>) {
        out.extend_from_slice(self.prefix);
        out.extend_from_slice(id.to_string().as_bytes());
        out.extend_from_slice(&self.suffix);
    }

    /// Checks a response in full: the right id, and the payload as the single text block.
    fn check(&self, line: &[u8], id: u64) -> Result<()> {
        let v: Value = serde_json::from_slice(line)
            .map_err(|e| format!("response is not JSON ({e}): {}", truncate(line)))?;
        let ok = v["jsonrpc"] == "2.0"
            && v["id"] == json!(id)
            && v["result"]["content"].as_array().map(Vec::len) == Some(1)
            && v["result"]["content"][0]["type"] == "text"
            && v["result"]["content"][0]["text"].as_str() == Some(self.payload.as_str())
            && v["result"]["isError"] != json!(true);
        if ok {
            Ok(())
        } else {
            Err(format!("wrong response to call {id}: {}", truncate(line)).into())
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

fn truncate(bytes: &[u8]) -> String {
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
// Running calls.

/// What one run of calls measured.
struct Run {
    elapsed: Duration,
    latencies_ns: Vec<u64>,
}

/// How often a measured answer is checked in full (every answer during warm-up).
const SAMPLE_EVERY: u64 = 97;

/// Runs `count` calls with ids `first_id..`, one or several in flight.
fn run_calls(
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
        Err(format!("short response to call {id}: {}", truncate(line)).into())
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
            return Err(format!("expected the answer to call {id}: {}", truncate(&line)).into());
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
                    .ok_or_else(|| format!("an answer without a call id: {}", truncate(&line)))?;
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

// ---------------------------------------------------------------------------------------------
// Cases and reporting.

#[derive(Debug, Clone, Copy)]
struct Measured {
    calls_per_sec: f64,
    mean_us: f64,
    p50_us: f64,
    p99_us: f64,
    cpu_us_per_call: f64,
    peak_rss_kib: u64,
    cold_start_ms: f64,
}

fn run_case(opts: &Options, subject: &Subject, case: Case, ticks_per_sec: u64) -> Result<Measured> {
    let mut server = Server::spawn(opts, subject)?;
    let cold = server.handshake()?;
    let requests = Requests::new(case.size);
    let warmup = opts.warmup.min(case.calls);
    if warmup > 0 {
        run_calls(&mut server, &requests, 1, warmup, case.in_flight, true)?;
    }
    let first_id = 1 + warmup as u64;
    let cpu_before = cpu_ticks(server.pid)?;
    let run = run_calls(
        &mut server,
        &requests,
        first_id,
        case.calls,
        case.in_flight,
        false,
    )?;
    let cpu_after = cpu_ticks(server.pid)?;
    let peak = peak_rss_kib(server.pid)?;
    server.finish()?;

    let mut lat = run.latencies_ns;
    lat.sort_unstable();
    let n = lat.len();
    let pct = |p: f64| {
        let i = ((n as f64 * p).ceil() as usize).clamp(1, n) - 1;
        lat[i] as f64 / 1e3
    };
    let cpu_us = (cpu_after - cpu_before) as f64 * 1e6 / ticks_per_sec as f64;
    Ok(Measured {
        calls_per_sec: n as f64 / run.elapsed.as_secs_f64(),
        mean_us: lat.iter().sum::<u64>() as f64 / n as f64 / 1e3,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        cpu_us_per_call: cpu_us / n as f64,
        peak_rss_kib: peak,
        cold_start_ms: cold.as_secs_f64() * 1e3,
    })
}

fn cold_start(opts: &Options, subject: &Subject) -> Result<Duration> {
    let mut server = Server::spawn(opts, subject)?;
    let cold = server.handshake()?;
    server.finish()?;
    Ok(cold)
}

/// A subject's figures for one case: the median of each figure over the rounds.
fn summarise(runs: &[Measured]) -> Measured {
    let m = |f: fn(&Measured) -> f64| median(runs.iter().map(f).collect());
    Measured {
        calls_per_sec: m(|r| r.calls_per_sec),
        mean_us: m(|r| r.mean_us),
        p50_us: m(|r| r.p50_us),
        p99_us: m(|r| r.p99_us),
        cpu_us_per_call: m(|r| r.cpu_us_per_call),
        peak_rss_kib: m(|r| r.peak_rss_kib as f64) as u64,
        cold_start_ms: m(|r| r.cold_start_ms),
    }
}

fn main() -> std::process::ExitCode {
    match run() {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(3),
        Err(e) => {
            eprintln!("stdio_load: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn print_case(
    out: &mut impl Write,
    opts: &Options,
    round: usize,
    subject: &Subject,
    case: Case,
    m: &Measured,
) -> Result<()> {
    if opts.json {
        let record = json!({
            "round": round,
            "subject": subject.name,
            "case": case.label(),
            "size": case.size,
            "in_flight": case.in_flight,
            "calls": case.calls,
            "calls_per_sec": m.calls_per_sec,
            "mean_us": m.mean_us,
            "p50_us": m.p50_us,
            "p99_us": m.p99_us,
            "cpu_us_per_call": m.cpu_us_per_call,
            "peak_rss_kib": m.peak_rss_kib,
            "cold_start_ms": m.cold_start_ms,
        });
        writeln!(out, "{record}")?;
    } else {
        writeln!(
            out,
            "{:<12} {:<10} calls={:<7} {:>10.0} calls/s  mean {:>8.1} µs  p50 {:>8.1} µs  p99 {:>8.1} µs  cpu {:>7.2} µs/call  peak RSS {:>7} KiB  cold {:>6.2} ms",
            subject.name,
            case.label(),
            case.calls,
            m.calls_per_sec,
            m.mean_us,
            m.p50_us,
            m.p99_us,
            m.cpu_us_per_call,
            m.peak_rss_kib,
            m.cold_start_ms,
        )?;
    }
    Ok(())
}

/// Everything measured, by subject then case.
struct Results {
    /// `runs[subject][case]`: one entry per round.
    runs: Vec<Vec<Vec<Measured>>>,
    /// Every cold start measured per subject, in ms.
    colds: Vec<Vec<f64>>,
}

impl Results {
    fn summary(&self, subject: usize, case: usize) -> Measured {
        summarise(&self.runs[subject][case])
    }

    fn cold_median(&self, subject: usize) -> f64 {
        median(self.colds[subject].clone())
    }

    fn peak_rss(&self, subject: usize) -> u64 {
        (0..self.runs[subject].len())
            .map(|c| self.summary(subject, c).peak_rss_kib)
            .max()
            .unwrap_or(0)
    }
}

fn run() -> Result<bool> {
    let opts = parse_args()?;
    let ticks = clock_ticks_per_second();
    let mut results = Results {
        runs: vec![vec![Vec::new(); opts.cases.len()]; opts.subjects.len()],
        colds: vec![Vec::new(); opts.subjects.len()],
    };
    let mut stdout = std::io::stdout().lock();
    for round in 1..=opts.rounds {
        for (si, subject) in opts.subjects.iter().enumerate() {
            for _ in 0..opts.cold_starts {
                results.colds[si].push(cold_start(&opts, subject)?.as_secs_f64() * 1e3);
            }
        }
        for (ci, &case) in opts.cases.iter().enumerate() {
            for (si, subject) in opts.subjects.iter().enumerate() {
                let m = run_case(&opts, subject, case, ticks)?;
                results.colds[si].push(m.cold_start_ms);
                results.runs[si][ci].push(m);
                print_case(&mut stdout, &opts, round, subject, case, &m)?;
            }
        }
    }
    for (si, subject) in opts.subjects.iter().enumerate() {
        let colds = &results.colds[si];
        let min = colds.iter().copied().fold(f64::INFINITY, f64::min);
        let median = results.cold_median(si);
        if opts.json {
            let record = json!({
                "subject": subject.name,
                "case": "cold_start",
                "spawns": colds.len(),
                "cold_start_median_ms": median,
                "cold_start_min_ms": min,
            });
            writeln!(stdout, "{record}")?;
        } else {
            writeln!(
                stdout,
                "{:<12} cold start to the first initialize response: median {median:.2} ms, min {min:.2} ms over {} spawns",
                subject.name,
                colds.len()
            )?;
        }
    }
    if opts.markdown {
        print_markdown(&mut stdout, &opts, &results)?;
    }
    let mut all_met = true;
    for (name, base) in &opts.checks {
        all_met &= print_checks(&mut stdout, &opts, &results, name, base)?;
    }
    Ok(all_met)
}

fn subject_index(opts: &Options, name: &str) -> Result<usize> {
    opts.subjects
        .iter()
        .position(|s| s.name == name)
        .ok_or_else(|| format!("no subject named {name:?}").into())
}

fn print_markdown(out: &mut impl Write, opts: &Options, results: &Results) -> Result<()> {
    let rounds = if opts.rounds > 1 {
        format!(", medians of {} rounds", opts.rounds)
    } else {
        String::new()
    };
    writeln!(out)?;
    write!(out, "| case | subject | calls/s{rounds} |")?;
    for r in &opts.ratio_to {
        write!(out, " × {r} |")?;
    }
    writeln!(
        out,
        " mean µs | p50 µs | p99 µs | server CPU µs/call | peak RSS MiB |"
    )?;
    write!(out, "|---|---|---:|")?;
    for _ in &opts.ratio_to {
        write!(out, "---:|")?;
    }
    writeln!(out, "---:|---:|---:|---:|---:|")?;
    let bases: Vec<usize> = opts
        .ratio_to
        .iter()
        .map(|r| subject_index(opts, r))
        .collect::<Result<_>>()?;
    for (ci, case) in opts.cases.iter().enumerate() {
        let label = format!(
            "{}, {} in flight",
            size_label(case.size)
                .replace("B", " B")
                .replace("Ki B", " KiB"),
            case.in_flight
        );
        for (si, subject) in opts.subjects.iter().enumerate() {
            let m = results.summary(si, ci);
            write!(
                out,
                "| {label} | {} | {:.0} |",
                subject.name, m.calls_per_sec
            )?;
            for &b in &bases {
                let base = results.summary(b, ci).calls_per_sec;
                write!(out, " {:.2}× |", m.calls_per_sec / base)?;
            }
            writeln!(
                out,
                " {:.1} | {:.1} | {:.1} | {:.2} | {:.1} |",
                m.mean_us,
                m.p50_us,
                m.p99_us,
                m.cpu_us_per_call,
                m.peak_rss_kib as f64 / 1024.0
            )?;
        }
    }
    writeln!(out)?;
    writeln!(
        out,
        "| subject | cold start to first `initialize` response, median ms | min ms | spawns | peak RSS over all cases MiB |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|")?;
    for (si, subject) in opts.subjects.iter().enumerate() {
        let colds = &results.colds[si];
        let min = colds.iter().copied().fold(f64::INFINITY, f64::min);
        writeln!(
            out,
            "| {} | {:.2} | {:.2} | {} | {:.1} |",
            subject.name,
            results.cold_median(si),
            min,
            colds.len(),
            results.peak_rss(si) as f64 / 1024.0
        )?;
    }
    Ok(())
}

/// The issue's targets for `name` against `base`. Returns whether all were met.
fn print_checks(
    out: &mut impl Write,
    opts: &Options,
    results: &Results,
    name: &str,
    base: &str,
) -> Result<bool> {
    let s = subject_index(opts, name)?;
    let b = subject_index(opts, base)?;
    let find = |size: usize, in_flight: Option<usize>| {
        opts.cases
            .iter()
            .position(|c| c.size == size && in_flight.is_none_or(|k| c.in_flight == k))
    };
    let mut all_met = true;
    let mut verdict = |out: &mut dyn Write, what: String, met: bool| -> Result<()> {
        all_met &= met;
        writeln!(out, "- {what}: {}", if met { "met" } else { "MISSED" })?;
        Ok(())
    };
    writeln!(out)?;
    writeln!(out, "Targets for {name} against {base}:")?;
    let targets = opts.targets;
    for (size, in_flight, want, label) in [
        (16, Some(1), 4.0, "16 B calls, one in flight"),
        (16, Some(64), 10.0, "16 B calls, 64 in flight"),
        (64 * 1024, None, 1.5, "64 KiB payloads"),
    ] {
        if let Some(ci) = find(size, in_flight).filter(|_| targets.throughput) {
            let ratio = results.summary(s, ci).calls_per_sec / results.summary(b, ci).calls_per_sec;
            verdict(
                out,
                format!("{label}: {ratio:.2}× {base} (target ≥ {want}×)"),
                ratio >= want,
            )?;
        }
    }
    if targets.rss {
        let (rss, base_rss) = (results.peak_rss(s), results.peak_rss(b));
        verdict(
            out,
            format!(
                "peak RSS: {:.1} MiB vs {base}'s {:.1} MiB (target ≤)",
                rss as f64 / 1024.0,
                base_rss as f64 / 1024.0
            ),
            rss <= base_rss,
        )?;
    }
    if targets.cold {
        let cold = results.cold_median(s);
        verdict(
            out,
            format!(
                "cold start to the first initialize response: median {cold:.2} ms (target ≤ 5 ms)"
            ),
            cold <= 5.0,
        )?;
    }
    Ok(all_met)
}

/// Which of the issue's targets `--check` checks.
#[derive(Debug, Clone, Copy)]
struct Targets {
    throughput: bool,
    rss: bool,
    cold: bool,
}

impl Targets {
    const ALL: Self = Self {
        throughput: true,
        rss: true,
        cold: true,
    };

    fn parse(list: &str) -> Result<Self> {
        let mut t = Self {
            throughput: false,
            rss: false,
            cold: false,
        };
        for item in list.split(',').map(str::trim) {
            match item {
                "throughput" => t.throughput = true,
                "rss" => t.rss = true,
                "cold" => t.cold = true,
                other => {
                    return Err(format!(
                        "--targets: {other:?} is not one of throughput, rss, cold"
                    )
                    .into());
                }
            }
        }
        Ok(t)
    }
}
