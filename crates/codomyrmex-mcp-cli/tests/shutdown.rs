//! The real `codomyrmex-mcp serve` binary under SIGINT and SIGTERM, and its log output.
//!
//! A call is kept in flight by `shell.run` running a script that waits for a file the test
//! creates; the test learns that the server saw a signal from the line it prints on stderr.
//! Every wait has a generous deadline (a hang guard), none is an assertion on speed.

// Test helpers fail by panicking, outside `#[test]` functions too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![cfg(unix)]

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use serde_json::{Value, json};
use support::{HANG_GUARD, Server, await_line, stderr_lines};

/// The script of the slow call: says it started, then waits for `go` to appear.
const WAIT_FOR_GO: &str = "touch started; i=0; while [ ! -e go ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo done";

/// [`support::command`] without `NO_COLOR`, so that colour is the program's own choice.
fn command(args: &[&str]) -> Command {
    let mut c = support::command(args);
    c.env_remove("NO_COLOR");
    c
}

fn signal(child: &Child, sig: Signal) {
    let pid = Pid::from_child(child);
    kill_process(pid, sig).unwrap();
}

/// Waits for `path` to exist.
fn await_file(path: &Path) {
    let deadline = Instant::now() + HANG_GUARD;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn wait(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the server did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

struct Stdio_ {
    child: Child,
    stdin: ChildStdin,
    out: mpsc::Receiver<Value>,
    err: mpsc::Receiver<String>,
}

fn serve_stdio(root: &Path) -> Stdio_ {
    let mut child = command(&[
        "serve",
        "--root",
        root.to_str().unwrap(),
        "--profile",
        "full",
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, out) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let err = stderr_lines(&mut child);
    Stdio_ {
        child,
        stdin,
        out,
        err,
    }
}

fn send(stdin: &mut ChildStdin, v: &Value) {
    writeln!(stdin, "{v}").unwrap();
    stdin.flush().unwrap();
}

fn slow_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "shell.run",
        "arguments": {"argv": ["sh", "-c", WAIT_FOR_GO], "timeout_secs": 120},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }})
}

/// A signal on stdio ends the input like EOF: the call in flight still gets its answer, and
/// the process exits 0.
fn stdio_signal_drains(sig: Signal, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve_stdio(dir.path());
    send(&mut s.stdin, &slow_call(1));
    await_file(&dir.path().join("started"));
    signal(&s.child, sig);
    await_line(&s.err, &format!("{name} received"));
    std::fs::write(dir.path().join("go"), "").unwrap();
    let answer = s
        .out
        .recv_timeout(HANG_GUARD)
        .expect("no answer to the call");
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(
        answer["result"]["structuredContent"]["stdout"], "done\n",
        "{answer}"
    );
    let status = wait(&mut s.child);
    assert_eq!(status.code(), Some(0), "{status:?}");
    drop(s.stdin);
}

#[test]
fn sigterm_on_stdio_lets_the_call_in_flight_finish_and_exits_zero() {
    stdio_signal_drains(Signal::TERM, "SIGTERM");
}

#[test]
fn sigint_on_stdio_lets_the_call_in_flight_finish_and_exits_zero() {
    stdio_signal_drains(Signal::INT, "SIGINT");
}

#[test]
fn a_second_signal_on_stdio_exits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = serve_stdio(dir.path());
    send(&mut s.stdin, &slow_call(1));
    await_file(&dir.path().join("started"));
    signal(&s.child, Signal::TERM);
    await_line(&s.err, "SIGTERM received");
    signal(&s.child, Signal::TERM);
    await_line(&s.err, "received again");
    let status = wait(&mut s.child);
    assert_eq!(status.code(), Some(130), "{status:?}");
    drop(s.stdin);
}

const TOKEN: &str = "shutdown-test-token";

/// `serve --http` with the `full` profile and [`TOKEN`].
fn serve_http(root: &Path) -> Server {
    support::serve_http(
        root,
        &["--profile", "full"],
        &[("CODOMYRMEX_MCP_AUTH_TOKEN", TOKEN)],
    )
}

/// A modern (stateless) `tools/call` POSTed on a connection of its own; the thread returns
/// everything the server sent, or the read error.
fn post_slow_call(addr: &str) -> std::thread::JoinHandle<Result<String, String>> {
    let addr = addr.to_owned();
    std::thread::spawn(move || {
        let body = slow_call(1).to_string();
        let mut conn = TcpStream::connect(&addr).map_err(|e| e.to_string())?;
        write!(
            conn,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: shell.run\r\n\
             Connection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .map_err(|e| e.to_string())?;
        let mut all = Vec::new();
        conn.read_to_end(&mut all).map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&all).into_owned())
    })
}

fn json_rpc_error_in(response: &str) -> Value {
    response
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim_start_matches("data:").trim()).ok())
        .find(|v| v.get("error").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC error in the response: {response}"))
}

#[test]
fn http_shutdown_logs_the_drain_and_answers_the_call_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = serve_http(dir.path());
    let call = post_slow_call(h.addr());
    await_file(&dir.path().join("started"));
    signal(&h.child, Signal::TERM);
    let draining = await_line(&h.stderr, "draining");
    assert!(draining.contains("1 in-flight call"), "{draining}");
    // The call never finishes: the grace period (10 s) ends and the call gets an error.
    let response = call.join().unwrap().expect("the connection was cut");
    let error = json_rpc_error_in(&response);
    assert_eq!(error["id"], 1, "{error}");
    assert_eq!(error["error"]["code"], -32000, "{error}");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{error}"
    );
    let status = wait(&mut h.child);
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn a_second_signal_exits_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut h = serve_http(dir.path());
    let _call = post_slow_call(h.addr());
    await_file(&dir.path().join("started"));
    signal(&h.child, Signal::INT);
    await_line(&h.stderr, "SIGINT received");
    signal(&h.child, Signal::INT);
    await_line(&h.stderr, "received again");
    let status = wait(&mut h.child);
    // 130: the forced exit, not the graceful 0 after the grace period.
    assert_eq!(status.code(), Some(130), "{status:?}");
}

/// Runs `serve` over stdio with stdin closed at once and `env`; returns its stderr.
fn stderr_of_a_short_run(env: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command(&["serve", "--root", dir.path().to_str().unwrap()]);
    cmd.env("CODOMYRMEX_MCP_LOG", "debug");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn logs_into_a_pipe_carry_no_colour_codes() {
    let stderr = stderr_of_a_short_run(&[]);
    assert!(stderr.contains("starting"), "{stderr}");
    assert!(!stderr.contains("\x1b["), "{stderr:?}");
}

#[test]
fn json_log_format_gives_one_object_per_line() {
    let stderr = stderr_of_a_short_run(&[("CODOMYRMEX_MCP_LOG_FORMAT", "json")]);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty(), "no logs");
    for line in &lines {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["level"].is_string() && v["timestamp"].is_string(), "{v}");
    }
    assert!(lines.iter().any(|l| l.contains("starting")), "{lines:?}");
}

#[test]
fn a_bad_log_format_names_the_variable() {
    let dir: PathBuf = std::env::temp_dir();
    let out = command(&["serve", "--root", dir.to_str().unwrap()])
        .env("CODOMYRMEX_MCP_LOG_FORMAT", "yaml")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("CODOMYRMEX_MCP_LOG_FORMAT"), "{stderr}");
}
