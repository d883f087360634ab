//! The child processes of the real `codomyrmex-mcp serve` binary: the `json.query` worker is
//! limited in memory and CPU time, few run at once, and no child (the worker, a `shell.run`
//! program, what that program starts) outlives the server, whatever signal ends it.
//!
//! Processes are found by scanning `/proc` (Linux only), polling with generous deadlines:
//! nothing here asserts on speed. Whatever a failing test leaves behind is killed when it ends.

#![cfg(target_os = "linux")]
// Test helpers fail by panicking, outside `#[test]` functions too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use serde_json::{Value, json};

/// How long anything may take before the test gives up.
const DEADLINE: Duration = Duration::from_secs(60);
/// How often `/proc` is scanned.
const POLL: Duration = Duration::from_millis(20);
/// The worker's limits (`json.rs`).
const WORKER_MEMORY: u64 = 1024 * 1024 * 1024;
const WORKER_CPU_SECS: u64 = 300;
const MAX_WORKERS: usize = 4;
/// A filter that runs until it is stopped, in constant memory.
const RUNAWAY: &str = "last(range(1000000000000000))";

/// One process, as `/proc` shows it.
#[derive(Debug, Clone)]
struct Proc {
    pid: i32,
    ppid: i32,
    /// The start time in clock ticks since boot: with the pid, it names one process.
    start: u64,
    cmdline: String,
}

/// Every live (not zombie) process.
fn processes() -> Vec<Proc> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The fields after the command name, which is in parentheses and may hold anything.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() < 20 || fields[0] == "Z" || fields[0] == "X" {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        out.push(Proc {
            pid,
            ppid: fields[1].parse().unwrap_or(0),
            start: fields[19].parse().unwrap_or(0),
            cmdline,
        });
    }
    out
}

/// Whether `pid` has been sent SIGKILL: it is on its way out, whether or not it has been
/// scheduled to finish dying yet.
fn being_killed(pid: i32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status.lines().any(|l| {
        ["SigPnd:", "ShdPnd:"].iter().any(|k| {
            l.strip_prefix(k)
                .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
                .is_some_and(|mask| mask & (1 << (Signal::KILL.as_raw() - 1)) != 0)
        })
    })
}

/// The jq workers that `server` started and has not killed.
fn workers_of(server: u32) -> Vec<Proc> {
    processes()
        .into_iter()
        .filter(|p| p.ppid == server as i32 && p.cmdline.contains("__json-query-worker"))
        .filter(|p| !being_killed(p.pid))
        .collect()
}

/// Polls `check` until it gives a value, or panics with `what` after the deadline.
fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check() {
            return v;
        }
        assert!(Instant::now() < deadline, "gave up waiting: {what}");
        std::thread::sleep(POLL);
    }
}

/// Kills, when dropped, every process still alive that the test started: so that a failing
/// test leaves no runaway worker or long sleep behind.
#[derive(Default)]
struct Leftovers {
    markers: Vec<String>,
    procs: Vec<Proc>,
}

impl Leftovers {
    /// The processes still alive.
    fn alive(&self) -> Vec<Proc> {
        processes()
            .into_iter()
            .filter(|p| {
                self.markers.iter().any(|m| p.cmdline.contains(m))
                    || self
                        .procs
                        .iter()
                        .any(|q| q.pid == p.pid && q.start == p.start)
            })
            .collect()
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        for p in self.alive() {
            if let Some(pid) = Pid::from_raw(p.pid) {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
        }
    }
}

struct Serve {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    _root: tempfile::TempDir,
}

impl Serve {
    /// `serve` over stdio, full profile, with a tool timeout of `timeout` seconds.
    fn start(timeout: u64) -> Self {
        let root = tempfile::tempdir().unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_codomyrmex-mcp"))
            .args(["serve", "--profile", "full", "--no-rate-limit", "--timeout"])
            .arg(timeout.to_string())
            .arg("--root")
            .arg(root.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("cannot start codomyrmex-mcp serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take().unwrap();
        Self {
            child,
            stdin,
            lines,
            _root: root,
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a `tools/call` (2026-07-28, no session) without waiting for its answer.
    fn call(&mut self, id: u64, name: &str, arguments: Value) {
        let message = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {
                "name": name, "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                },
            },
        });
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The answer to `id` (other messages are skipped).
    fn answer(&mut self, id: u64) -> Value {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let v = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to {id}: {e}"));
            if v["id"] == id {
                return v;
            }
        }
    }

    fn signal(&self, signal: Signal) {
        let pid = Pid::from_raw(self.pid() as i32).unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
    }

    /// Waits for the server to exit.
    fn wait_exit(&mut self) {
        let child = &mut self.child;
        wait_for("the server exits", || child.try_wait().unwrap());
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The error kind of a failed `tools/call` answer.
fn error_kind(answer: &Value) -> String {
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "not a failure: {answer}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| v["error_type"].as_str().map(str::to_owned))
        .or_else(|| {
            result["structuredContent"]["error_type"]
                .as_str()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| text.to_owned())
}

#[test]
fn a_filter_that_needs_gigabytes_fails_with_too_large() {
    let mut s = Serve::start(120);
    let _left = Leftovers::default();
    // The filter of issue #13: it grew the worker to 1.9 GiB in 2 s.
    s.call(
        1,
        "json.query",
        json!({"filter": "\"xxxxxxxxxx\" * 200000000 | length"}),
    );
    let answer = s.answer(1);
    let kind = error_kind(&answer);
    assert!(kind.contains("TOO_LARGE"), "{kind}: {answer}");
    // The server goes on answering.
    s.call(2, "json.query", json!({"filter": ".a", "input": {"a": 1}}));
    let answer = s.answer(2);
    assert_eq!(
        answer["result"]["structuredContent"]["results"],
        json!([1]),
        "{answer}"
    );
}

#[test]
fn the_worker_runs_under_its_memory_and_cpu_limits() {
    let mut s = Serve::start(120);
    let mut left = Leftovers::default();
    s.call(1, "json.query", json!({"filter": RUNAWAY}));
    let server = s.pid();
    let worker = wait_for("a jq worker runs", || workers_of(server).pop());
    left.procs.push(worker.clone());
    // The worker limits itself right after it starts, so a scan may see it before: poll.
    let field = |limits: &str, name: &str| -> Vec<String> {
        limits
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|rest| rest.split_whitespace().take(2).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let expected_data = [WORKER_MEMORY.to_string(), WORKER_MEMORY.to_string()];
    let expected_cpu = [
        WORKER_CPU_SECS.to_string(),
        (WORKER_CPU_SECS + 1).to_string(),
    ];
    let mut last = String::new();
    let deadline = Instant::now() + DEADLINE;
    loop {
        last = std::fs::read_to_string(format!("/proc/{}/limits", worker.pid)).unwrap_or(last);
        if field(&last, "Max data size") == expected_data
            && field(&last, "Max cpu time") == expected_cpu
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the worker's limits are not {expected_data:?} bytes of data and {expected_cpu:?} s of CPU: {last}"
        );
        std::thread::sleep(POLL);
    }
}

#[test]
fn no_more_than_four_workers_run_at_once() {
    // Each call times out after 2 s; six calls need two rounds of at most four workers.
    let mut s = Serve::start(2);
    let mut left = Leftovers::default();
    let calls = MAX_WORKERS as u64 + 2;
    for id in 1..=calls {
        s.call(id, "json.query", json!({"filter": RUNAWAY}));
    }
    let server = s.pid();
    let mut most = 0;
    let mut answered = 0;
    let deadline = Instant::now() + DEADLINE;
    while answered < calls {
        assert!(
            Instant::now() < deadline,
            "only {answered} of {calls} answers"
        );
        let workers = workers_of(server);
        most = most.max(workers.len());
        left.procs.extend(workers);
        while let Ok(v) = s.lines.try_recv() {
            if v.get("id").is_some() {
                answered += 1;
            }
        }
        std::thread::sleep(POLL);
    }
    assert!(most >= 1, "no worker was ever seen");
    assert!(most <= MAX_WORKERS, "{most} workers ran at once");
}

/// Starts a runaway `json.query`, a `shell.run` of a long sleep and one of a shell whose
/// background sleep is a grandchild; sends `signal` to the server; and finds none of them
/// left.
fn children_die_with_the_server(signal: Signal) {
    let mut s = Serve::start(600);
    let nonce = format!("{}{}", std::process::id(), signal.as_raw());
    let direct = format!("86400.{nonce}1");
    let grandchild = format!("86400.{nonce}2");
    let mut left = Leftovers {
        markers: vec![direct.clone(), grandchild.clone()],
        procs: Vec::new(),
    };
    s.call(1, "json.query", json!({"filter": RUNAWAY}));
    s.call(
        2,
        "shell.run",
        json!({"argv": ["sleep", direct], "timeout_secs": 600}),
    );
    s.call(
        3,
        "shell.run",
        json!({"argv": ["sh", "-c", format!("sleep {grandchild} & wait")], "timeout_secs": 600}),
    );
    let server = s.pid();
    let worker = wait_for("a jq worker runs", || workers_of(server).pop());
    left.procs.push(worker);
    wait_for("the sleeps run", || {
        let all = processes();
        let running = |m: &str| {
            all.iter()
                .any(|p| p.cmdline.starts_with(&format!("sleep {m}")))
        };
        (running(&direct) && running(&grandchild)).then_some(())
    });
    // Every child of the server (the worker, the sleep, the process guards), to find after the
    // server is gone.
    left.procs
        .extend(processes().into_iter().filter(|p| p.ppid == server as i32));

    s.signal(signal);
    s.wait_exit();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let alive = left.alive();
        if alive.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still alive after the server died of {signal:?}: {alive:#?}"
        );
        std::thread::sleep(POLL);
    }
}

#[test]
fn children_die_with_the_server_on_sigint() {
    children_die_with_the_server(Signal::INT);
}

#[test]
fn children_die_with_the_server_on_sigterm() {
    children_die_with_the_server(Signal::TERM);
}

#[test]
fn children_die_with_the_server_on_sigkill() {
    children_die_with_the_server(Signal::KILL);
}

#[test]
fn a_timed_out_command_and_its_background_processes_are_killed() {
    let mut s = Serve::start(120);
    let nonce = format!("86400.{}3", std::process::id());
    let left = Leftovers {
        markers: vec![nonce.clone()],
        procs: Vec::new(),
    };
    s.call(
        1,
        "shell.run",
        json!({"argv": ["sh", "-c", format!("sleep {nonce} & echo started; wait")], "timeout_secs": 1}),
    );
    let answer = s.answer(1);
    let out = &answer["result"]["structuredContent"];
    assert_eq!(out["timed_out"], true, "{answer}");
    assert_eq!(out["signal"], 9, "{answer}");
    assert_eq!(out["stdout"], "started\n", "{answer}");
    wait_for("the background sleep is gone", || {
        left.alive().is_empty().then_some(())
    });
}
