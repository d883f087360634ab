//! The stdio transport end to end: the `testbed` example runs as a real process, and these
//! tests talk to it over its stdin and stdout.
//!
//! `cargo test` builds examples, so the testbed sits in `target/<profile>/examples/`. When
//! running one test target alone (`--test stdio_process`), build it first:
//! `cargo build -p codomyrmex-mcp --example testbed`.
//!
//! Timing: nothing here asserts that anything is fast. Timeouts are hang guards only, and the
//! one ordering assertion compares a 10 s sleep with immediate answers.

// Test helpers fail by panicking, outside `#[test]` functions too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codomyrmex_mcp::Era;
use codomyrmex_mcp::client::{ClientError, McpClient};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// How long any single wait may take before the test is declared hung.
const HANG_GUARD: Duration = Duration::from_secs(30);

const MODERN: &str = "2026-07-28";

/// The testbed example binary, next to this test's executable.
fn testbed() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    // target/<profile>/deps/<test> -> target/<profile>/examples/testbed
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the test executable lives in target/<profile>/deps");
    let name = format!("testbed{}", std::env::consts::EXE_SUFFIX);
    let path = profile_dir.join("examples").join(&name);
    assert!(
        path.is_file(),
        "the testbed example is not built: {} does not exist.\n\
         `cargo test` builds it; when running a single test target, build it first with\n\
         `cargo build -p codomyrmex-mcp --example testbed` (same profile as the tests).",
        path.display()
    );
    path
}

/// A running testbed and what it has said so far.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    messages: mpsc::UnboundedReceiver<Value>,
    /// Messages read but not yet consumed by a test.
    stash: VecDeque<Value>,
    /// Every message ever read from stdout.
    seen: Arc<Mutex<Vec<Value>>>,
    /// Lines on stdout that were not JSON-RPC messages.
    bad_lines: Arc<Mutex<Vec<String>>>,
    stderr: Option<tokio::task::JoinHandle<String>>,
}

/// Whether `v` is a JSON-RPC 2.0 message (or a batch of them).
fn is_jsonrpc(v: &Value) -> bool {
    match v {
        Value::Array(items) => !items.is_empty() && items.iter().all(is_jsonrpc),
        Value::Object(m) => {
            m.get("jsonrpc") == Some(&json!("2.0"))
                && (m.contains_key("method") || m.contains_key("result") || m.contains_key("error"))
        }
        _ => false,
    }
}

impl Server {
    fn spawn(args: &[&str]) -> Self {
        Self::spawn_program(testbed(), args)
    }

    fn spawn_program(program: PathBuf, args: &[&str]) -> Self {
        Self::spawn_with(Command::new(&program).args(args), &program)
    }

    fn spawn_with(command: &mut Command, program: &Path) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", program.display()));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let mut stderr = child.stderr.take().expect("stderr");
        let (tx, messages) = mpsc::unbounded_channel();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let bad_lines = Arc::new(Mutex::new(Vec::new()));
        let (seen2, bad2) = (seen.clone(), bad_lines.clone());
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) if is_jsonrpc(&v) => {
                        seen2.lock().unwrap().push(v.clone());
                        let _ = tx.send(v);
                    }
                    _ => bad2.lock().unwrap().push(line),
                }
            }
        });
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text).await;
            text
        });
        Self {
            child,
            stdin,
            messages,
            stash: VecDeque::new(),
            seen,
            bad_lines,
            stderr: Some(stderr),
        }
    }

    async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn send(&mut self, msg: Value) {
        self.send_line(&msg.to_string()).await;
    }

    async fn send_request(&mut self, id: Value, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next message from the server, in order.
    async fn next(&mut self) -> Value {
        if let Some(v) = self.stash.pop_front() {
            return v;
        }
        tokio::time::timeout(HANG_GUARD, self.messages.recv())
            .await
            .expect("the server said nothing for 30 s")
            .expect("the server closed its stdout")
    }

    /// The next message that satisfies `pred`; others are kept for later.
    async fn next_matching(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.stash.iter().position(&pred) {
            return self.stash.remove(i).expect("index in range");
        }
        loop {
            let v = tokio::time::timeout(HANG_GUARD, self.messages.recv())
                .await
                .expect("the server did not send the expected message within 30 s")
                .expect("the server closed its stdout");
            if pred(&v) {
                return v;
            }
            self.stash.push_back(v);
        }
    }

    /// The response to request `id`.
    async fn response(&mut self, id: &Value) -> Value {
        let id = id.clone();
        self.next_matching(move |v| {
            v.get("id") == Some(&id) && (v.get("result").is_some() || v.get("error").is_some())
        })
        .await
    }

    async fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send_request(id.clone(), method, params).await;
        self.response(&id).await
    }

    /// A request that must succeed; returns its result.
    async fn ok(&mut self, id: Value, method: &str, params: Value) -> Value {
        let r = self.request(id, method, params).await;
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    async fn call(&mut self, id: Value, name: &str, args: Value) -> Value {
        self.ok(id, "tools/call", json!({"name": name, "arguments": args}))
            .await
    }

    async fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        let result = self
            .ok(
                json!("init"),
                "initialize",
                json!({"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "stdio-tests", "version": "0"}}),
            )
            .await;
        self.notify("notifications/initialized", json!({})).await;
        result
    }

    /// Closes stdin and waits for the process to exit. Fails if stdout carried anything but
    /// JSON-RPC messages.
    async fn finish(mut self) -> Finished {
        drop(self.stdin.take());
        let status = tokio::time::timeout(HANG_GUARD, self.child.wait())
            .await
            .expect("the server did not exit within 30 s of stdin closing")
            .unwrap();
        let mut unread: Vec<Value> = self.stash.drain(..).collect();
        while let Ok(Some(v)) = tokio::time::timeout(HANG_GUARD, self.messages.recv()).await {
            unread.push(v);
        }
        let stderr = tokio::time::timeout(HANG_GUARD, self.stderr.take().expect("stderr"))
            .await
            .expect("stderr did not close")
            .unwrap();
        let bad = self.bad_lines.lock().unwrap().clone();
        assert!(bad.is_empty(), "stdout carried non-JSON-RPC lines: {bad:?}");
        let transcript = self.seen.lock().unwrap().clone();
        Finished {
            status,
            unread,
            stderr,
            transcript,
        }
    }
}

/// How a server process ended.
struct Finished {
    status: ExitStatus,
    /// Messages no test consumed.
    unread: Vec<Value>,
    stderr: String,
    /// Every message the server wrote.
    transcript: Vec<Value>,
}

impl Finished {
    /// Asserts a clean exit with status 0.
    fn assert_clean_exit(&self) {
        assert_eq!(
            self.status.code(),
            Some(0),
            "exit status {}; stderr: {}",
            self.status,
            self.stderr
        );
    }

    fn answered(&self, id: &Value) -> bool {
        self.transcript.iter().any(|v| is_response_to(v, id))
    }
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-tests", "version": "0"},
    })
}

fn modern(params: Value) -> Value {
    let mut params = params;
    params["_meta"] = modern_meta();
    params
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error response: {response}"))
}

fn is_response_to(v: &Value, id: &Value) -> bool {
    v.get("id") == Some(id) && (v.get("result").is_some() || v.get("error").is_some())
}

// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn malformed_lines_get_parse_errors_and_serving_continues() {
    let mut s = Server::spawn(&[]);
    s.initialize("2025-11-25", json!({})).await;
    for bad in [
        "{not json",
        "garbage",
        "{\"jsonrpc\":\"2.0\",\"id\":1,",
        "\u{7f}\u{1}",
        "]",
    ] {
        s.send_line(bad).await;
        let r = s.next().await;
        assert_eq!(error_code(&r), -32700, "{bad:?}: {r}");
        assert_eq!(r["id"], Value::Null, "{r}");
    }
    // Invalid UTF-8 is a parse error too.
    s.stdin
        .as_mut()
        .unwrap()
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\xfe\",\"method\":\"ping\"}\n")
        .await
        .unwrap();
    let r = s.next().await;
    assert_eq!(error_code(&r), -32700, "{r}");
    // Valid JSON that is not a request: -32600, addressed when the id is readable.
    s.send_line(r#"{"jsonrpc":"1.0","id":"v1","method":"ping"}"#)
        .await;
    let r = s.next().await;
    assert_eq!(error_code(&r), -32600, "{r}");
    assert_eq!(r["id"], "v1");
    // Blank lines are skipped without an answer: the next message answers the ping.
    s.send_line("").await;
    s.send_line("   \t").await;
    s.send_line(r#"{"jsonrpc":"2.0","id":"p","method":"ping"}"#)
        .await;
    let r = s.next().await;
    assert_eq!(r, json!({"jsonrpc": "2.0", "id": "p", "result": {}}));
    // CRLF line endings are accepted.
    s.send_line("{\"jsonrpc\":\"2.0\",\"id\":\"crlf\",\"method\":\"ping\"}\r")
        .await;
    assert_eq!(s.next().await["id"], "crlf");
    let r = s
        .call(json!(2), "echo", json!({"text": "still here"}))
        .await;
    assert_eq!(r["structuredContent"], json!({"text": "still here"}));
    let end = s.finish().await;
    end.assert_clean_exit();
    assert!(
        end.unread.is_empty(),
        "unexpected messages: {:?}",
        end.unread
    );
}

#[tokio::test]
async fn an_over_long_line_is_refused_and_serving_continues() {
    let mut s = Server::spawn(&["--max-message-size", "4096"]);
    s.initialize("2025-11-25", json!({})).await;
    let huge = json!({"jsonrpc": "2.0", "id": "huge", "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "y".repeat(200_000)}}});
    s.send(huge).await;
    let r = s.next().await;
    assert_eq!(error_code(&r), -32600, "{r}");
    assert_eq!(
        r["id"],
        Value::Null,
        "the id of a discarded line is unknown: {r}"
    );
    // A line within the limit works, also right after.
    let text = "z".repeat(3000);
    let r = s.call(json!("fits"), "echo", json!({"text": text})).await;
    assert_eq!(r["structuredContent"]["text"], text);
    // The over-long line was discarded whole: nothing of it was executed.
    let end = s.finish().await;
    end.assert_clean_exit();
    assert!(end.unread.is_empty(), "{:?}", end.unread);
}

#[tokio::test]
async fn unknown_methods_in_both_eras() {
    let mut s = Server::spawn(&[]);
    s.initialize("2025-11-25", json!({})).await;
    let r = s.request(json!(10), "no/such/method", json!({})).await;
    assert_eq!(error_code(&r), -32601, "{r}");
    // A real method of the 2025-11-25 spec that this server does not offer.
    let r = s.request(json!(11), "tasks/list", json!({})).await;
    assert_eq!(error_code(&r), -32601, "{r}");
    let r = s
        .request(json!("m"), "no/such/method", modern(json!({})))
        .await;
    assert_eq!(error_code(&r), -32601, "{r}");
    // Modern ping is gone.
    let r = s.request(json!("mp"), "ping", modern(json!({}))).await;
    assert_eq!(error_code(&r), -32601, "{r}");
    let end = s.finish().await;
    end.assert_clean_exit();
}

#[tokio::test]
async fn cancelling_a_running_tool_stops_it_without_a_response() {
    let mut s = Server::spawn(&[]);
    s.initialize("2025-11-25", json!({})).await;
    let slow = json!("slow");
    s.send_request(
        slow.clone(),
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 60_000}, "_meta": {"progressToken": "slow-progress"}}),
    )
    .await;
    // The tool reports progress once it runs.
    let started = s
        .next_matching(|v| v["method"] == "notifications/progress")
        .await;
    assert_eq!(started["params"]["progressToken"], "slow-progress");
    s.notify(
        "notifications/cancelled",
        json!({"requestId": "slow", "reason": "test"}),
    )
    .await;
    // Later requests are fine.
    let r = s.request(json!("after"), "ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    let r = s
        .call(json!("after2"), "add", json!({"a": 1, "b": 2}))
        .await;
    assert_eq!(r["structuredContent"], json!({"result": 3.0}));
    let end = s.finish().await;
    end.assert_clean_exit();
    // No response for the cancelled request, ever (the server has exited).
    assert!(!end.answered(&slow), "{:?}", end.transcript);
    assert!(
        end.stderr.contains("sleep(60000) stopped early"),
        "the tool was not stopped: {}",
        end.stderr
    );
}

#[tokio::test]
async fn timeouts_fail_the_call_and_stop_the_tool() {
    let mut s = Server::spawn(&["--timeout-ms", "300"]);
    s.initialize("2025-11-25", json!({})).await;
    let r = s.call(json!(1), "sleep", json!({"ms": 60_000})).await;
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["error_type"], "TIMEOUT", "{r}");
    assert!(
        r["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("TIMEOUT")
    );
    // The server goes on.
    let r = s.call(json!(2), "echo", json!({"text": "ok"})).await;
    assert_eq!(r["structuredContent"]["text"], "ok");
    let end = s.finish().await;
    end.assert_clean_exit();
    assert!(end.unread.is_empty(), "{:?}", end.unread);
    assert!(
        end.stderr.contains("sleep(60000) stopped early"),
        "{}",
        end.stderr
    );
}

#[tokio::test]
async fn a_slow_call_blocks_neither_fast_calls_nor_ping() {
    let mut s = Server::spawn(&[]);
    s.initialize("2025-11-25", json!({})).await;
    let slow = json!("slow");
    s.send_request(
        slow.clone(),
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 10_000}}),
    )
    .await;
    s.send_request(
        json!("fast"),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "quick"}}),
    )
    .await;
    s.send_request(json!("ping"), "ping", json!({})).await;
    s.send_request(
        json!("modern-fast"),
        "tools/call",
        modern(json!({"name": "add", "arguments": {"a": 2, "b": 2}})),
    )
    .await;
    // The next three responses are the fast ones; the 10 s sleep is still running.
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = s.next().await;
        assert!(
            !is_response_to(&r, &slow),
            "the slow call answered first: {r}"
        );
        assert!(r.get("error").is_none(), "{r}");
        ids.push(r["id"].as_str().unwrap().to_owned());
    }
    ids.sort();
    assert_eq!(ids, ["fast", "modern-fast", "ping"]);
    // Cancel the sleeper rather than wait for it.
    s.notify("notifications/cancelled", json!({"requestId": "slow"}))
        .await;
    let end = s.finish().await;
    end.assert_clean_exit();
    assert!(
        !end.answered(&slow),
        "a cancelled call was answered: {:?}",
        end.transcript
    );
}

#[tokio::test]
async fn a_blocking_tool_holds_up_neither_ping_nor_other_calls() {
    // `block` holds its thread until a file appears (or 20 s pass) and is registered with
    // `ToolSettings::blocking`. The server runs one runtime worker. The quick answers must
    // arrive while the call still blocks: the file is made only after they are read, so the
    // call must end `released`. Without the setting the handler stalls that worker, the quick
    // answers come only after the 20 s are up, and the call ends unreleased (seen: this test
    // then fails on `released`). No assertion here depends on timing.
    let release = std::env::temp_dir().join(format!(
        "codomyrmex-mcp-release-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    // One runtime worker, so that a handler blocking it would stall everything.
    let program = testbed();
    let mut s = Server::spawn_with(
        Command::new(&program).env("TOKIO_WORKER_THREADS", "1"),
        &program,
    );
    s.initialize("2025-11-25", json!({})).await;
    let blocked = json!("blocked");
    s.send_request(
        blocked.clone(),
        "tools/call",
        json!({"name": "block", "arguments": {"ms": 20_000, "until": release}}),
    )
    .await;
    s.send_request(json!("ping"), "ping", json!({})).await;
    s.send_request(
        json!("fast"),
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "quick"}}),
    )
    .await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        let r = s.next().await;
        assert!(
            !is_response_to(&r, &blocked),
            "the blocking call answered first: {r}"
        );
        ids.push(r["id"].as_str().unwrap().to_owned());
    }
    ids.sort();
    assert_eq!(ids, ["fast", "ping"]);
    std::fs::write(&release, b"").unwrap();
    let r = s.next().await;
    let _ = std::fs::remove_file(&release);
    assert!(is_response_to(&r, &blocked), "{r}");
    assert_eq!(r["result"]["structuredContent"]["released"], true, "{r}");
    s.finish().await.assert_clean_exit();
}

#[tokio::test]
async fn many_pipelined_requests_each_get_exactly_one_answer() {
    let mut s = Server::spawn(&[]);
    s.initialize("2025-11-25", json!({})).await;
    let n = 300;
    let mut batch = String::new();
    for i in 0..n {
        let msg = if i % 3 == 0 {
            json!({"jsonrpc": "2.0", "id": i, "method": "ping"})
        } else {
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": format!("#{i}")}}})
        };
        batch.push_str(&msg.to_string());
        batch.push('\n');
    }
    // All at once, in one write.
    s.send_line(batch.trim_end()).await;
    let mut answered = vec![false; n];
    for _ in 0..n {
        let r = s.next().await;
        let i = usize::try_from(r["id"].as_u64().expect("a numeric id")).unwrap();
        assert!(!answered[i], "request {i} answered twice");
        answered[i] = true;
        if i % 3 != 0 {
            assert_eq!(r["result"]["structuredContent"]["text"], format!("#{i}"));
        }
    }
    let end = s.finish().await;
    end.assert_clean_exit();
    assert!(end.unread.is_empty(), "{:?}", end.unread);
}

#[tokio::test]
async fn stdin_eof_lets_in_flight_calls_finish_and_exits_zero() {
    let mut s = Server::spawn(&["--grace-ms", "20000"]);
    s.initialize("2025-11-25", json!({})).await;
    for i in 0..3 {
        s.send_request(
            json!(i),
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 400}}),
        )
        .await;
    }
    // Close stdin at once: the calls are in flight.
    let end = s.finish().await;
    end.assert_clean_exit();
    for i in 0..3 {
        let r = end
            .unread
            .iter()
            .find(|v| is_response_to(v, &json!(i)))
            .unwrap_or_else(|| panic!("call {i} was not answered before exit: {:?}", end.unread));
        assert_eq!(r["result"]["structuredContent"], json!({"slept_ms": 400}));
    }
    assert!(!end.stderr.contains("stopped early"), "{}", end.stderr);
}

#[tokio::test]
async fn stdin_eof_cancels_what_outlives_the_grace_period() {
    let mut s = Server::spawn(&["--grace-ms", "200"]);
    s.initialize("2025-11-25", json!({})).await;
    s.send_request(
        json!("long"),
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": 60_000}, "_meta": {"progressToken": 1}}),
    )
    .await;
    s.next_matching(|v| v["method"] == "notifications/progress")
        .await;
    let end = s.finish().await;
    end.assert_clean_exit();
    assert!(!end.answered(&json!("long")), "{:?}", end.transcript);
    assert!(
        end.stderr.contains("sleep(60000) stopped early"),
        "{}",
        end.stderr
    );
}

#[tokio::test]
async fn stdout_carries_only_jsonrpc_messages() {
    let mut s = Server::spawn(&[]);
    s.initialize("2025-11-25", json!({})).await;
    s.ok(json!("lvl"), "logging/setLevel", json!({"level": "debug"}))
        .await;
    let r = s.call(json!(1), "panic", json!({})).await;
    assert_eq!(r["isError"], true);
    assert!(!r.to_string().contains("secret"), "a panic leaked: {r}");
    let r = s.call(json!(2), "fail", json!({})).await;
    assert_eq!(r["structuredContent"]["error_type"], "TestbedFailure");
    s.call(
        json!(3),
        "log",
        json!({"level": "info", "msg": "to the client"}),
    )
    .await;
    s.ok(
        json!(4),
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 5}, "_meta": {"progressToken": "t"}}),
    )
    .await;
    s.send_line("not json at all").await;
    s.call(json!(5), "big", json!({"n": 100_000})).await;
    let end = s.finish().await;
    end.assert_clean_exit();
    // The panic message went to stderr, where diagnostics belong.
    assert!(end.stderr.contains("testbed panic"), "{}", end.stderr);
    // `finish` already checked that every stdout line was a JSON-RPC message.
}

#[tokio::test]
async fn notifications_precede_the_response_they_belong_to() {
    let mut s = Server::spawn(&[]);
    s.initialize("2025-11-25", json!({})).await;
    s.ok(
        json!("lvl"),
        "logging/setLevel",
        json!({"level": "warning"}),
    )
    .await;
    s.send_request(
        json!("p"),
        "tools/call",
        json!({"name": "progress", "arguments": {"steps": 4}, "_meta": {"progressToken": 99}}),
    )
    .await;
    let mut progress = Vec::new();
    loop {
        let v = s.next().await;
        if is_response_to(&v, &json!("p")) {
            assert_eq!(v["result"]["structuredContent"], json!({"steps": 4}));
            break;
        }
        assert_eq!(v["method"], "notifications/progress", "{v}");
        assert_eq!(v["params"]["progressToken"], 99);
        progress.push(v["params"]["progress"].as_f64().unwrap());
    }
    assert_eq!(progress, [1.0, 2.0, 3.0, 4.0]);
    // Log messages below the level are dropped; those at or above arrive first.
    let r = s
        .call(json!("l1"), "log", json!({"level": "info", "msg": "quiet"}))
        .await;
    assert_eq!(r["structuredContent"]["queued"], false);
    s.send_request(
        json!("l2"),
        "tools/call",
        json!({"name": "log", "arguments": {"level": "error", "msg": {"loud": true}}}),
    )
    .await;
    let note = s.next().await;
    assert_eq!(note["method"], "notifications/message", "{note}");
    assert_eq!(note["params"]["level"], "error");
    assert_eq!(note["params"]["data"], json!({"loud": true}));
    let r = s.next().await;
    assert!(is_response_to(&r, &json!("l2")), "{r}");
    let end = s.finish().await;
    end.assert_clean_exit();
    assert!(end.unread.is_empty(), "{:?}", end.unread);
}

#[tokio::test]
async fn both_eras_in_one_process() {
    let mut s = Server::spawn(&["--page-size", "4"]);
    // Modern first: no handshake needed.
    let d = s.ok(json!("d"), "server/discover", modern(json!({}))).await;
    assert_eq!(d["resultType"], "complete");
    assert!(
        d["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!(MODERN))
    );
    assert!(
        d["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2025-11-25"))
    );
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "testbed"
    );
    // A legacy request without the handshake is refused.
    let r = s.request(json!("early"), "tools/list", json!({})).await;
    assert_eq!(error_code(&r), -32602, "{r}");
    let init = s.initialize("2025-06-18", json!({})).await;
    assert_eq!(init["protocolVersion"], "2025-06-18");
    assert_eq!(init["serverInfo"]["name"], "testbed");
    // Interleaved, on one stdin.
    let legacy_page = s.ok(json!("l"), "tools/list", json!({})).await;
    let modern_page = s.ok(json!("m"), "tools/list", modern(json!({}))).await;
    assert_eq!(legacy_page["tools"], modern_page["tools"]);
    assert_eq!(legacy_page["tools"].as_array().unwrap().len(), 4);
    assert!(legacy_page.get("ttlMs").is_none() && legacy_page.get("resultType").is_none());
    assert!(modern_page["ttlMs"].is_u64(), "{modern_page}");
    assert!(modern_page["cacheScope"].is_string(), "{modern_page}");
    assert_eq!(modern_page["resultType"], "complete");
    // Pagination works in both eras and lists every tool once.
    let mut names = Vec::new();
    let mut cursor = legacy_page.get("nextCursor").cloned();
    names.extend(
        legacy_page["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].clone()),
    );
    let mut i = 0;
    while let Some(c) = cursor {
        i += 1;
        let page = s
            .ok(
                json!(format!("page{i}")),
                "tools/list",
                modern(json!({"cursor": c})),
            )
            .await;
        names.extend(
            page["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].clone()),
        );
        cursor = page.get("nextCursor").cloned();
    }
    let mut sorted = names.clone();
    sorted.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    sorted.dedup();
    assert_eq!(names, sorted, "sorted, no duplicates");
    assert_eq!(names.len(), 11, "{names:?}");
    let legacy_call = s.call(json!("lc"), "add", json!({"a": 1, "b": 2})).await;
    let modern_call = s
        .ok(
            json!("mc"),
            "tools/call",
            modern(json!({"name": "add", "arguments": {"a": 1, "b": 2}})),
        )
        .await;
    assert_eq!(
        legacy_call["structuredContent"],
        modern_call["structuredContent"]
    );
    assert!(legacy_call.get("resultType").is_none());
    assert_eq!(modern_call["resultType"], "complete");
    assert_eq!(
        s.ok(json!("lp"), "ping", json!({})).await,
        json!({}),
        "legacy ping"
    );
    // The modern era's errors.
    let r = s
        .request(json!("v"), "tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "1900-01-01", "io.modelcontextprotocol/clientCapabilities": {}}}))
        .await;
    assert_eq!(error_code(&r), -32022, "{r}");
    assert_eq!(r["error"]["data"]["requested"], "1900-01-01");
    assert!(
        r["error"]["data"]["supported"]
            .as_array()
            .unwrap()
            .contains(&json!(MODERN))
    );
    let r = s
        .request(
            json!("c"),
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}),
        )
        .await;
    assert_eq!(error_code(&r), -32602, "{r}");
    let end = s.finish().await;
    end.assert_clean_exit();
    assert!(end.unread.is_empty(), "{:?}", end.unread);
}

#[tokio::test]
async fn batches_follow_the_negotiated_version() {
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"b"}}}]"#;
    let mut old = Server::spawn(&[]);
    old.initialize("2025-03-26", json!({})).await;
    old.send_line(batch).await;
    let r = old.next().await;
    let items = r.as_array().unwrap_or_else(|| panic!("an array: {r}"));
    assert_eq!(items.len(), 2, "{r}");
    assert_eq!(items[0], json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    assert_eq!(items[1]["result"]["structuredContent"]["text"], "b");
    old.finish().await.assert_clean_exit();

    let mut new = Server::spawn(&[]);
    new.initialize("2025-11-25", json!({})).await;
    new.send_line(batch).await;
    let r = new.next().await;
    assert!(r.is_object(), "{r}");
    assert_eq!(error_code(&r), -32600);
    let r = new.request(json!("after"), "ping", json!({})).await;
    assert_eq!(r["result"], json!({}));
    let end = new.finish().await;
    end.assert_clean_exit();
    assert!(
        end.unread.is_empty(),
        "nothing of the batch ran: {:?}",
        end.unread
    );
}

#[tokio::test]
async fn large_results_arrive_intact() {
    let mut s = Server::spawn(&[]);
    s.initialize("2025-11-25", json!({})).await;
    let n = 3 * 1024 * 1024;
    let r = s.call(json!("big"), "big", json!({"n": n})).await;
    let text = r["content"][0]["text"].as_str().unwrap();
    assert_eq!(text.len(), n);
    assert!(text.bytes().all(|b| b == b'x'));
    let r = s
        .call(json!("small"), "echo", json!({"text": "after"}))
        .await;
    assert_eq!(r["structuredContent"]["text"], "after");
    let end = s.finish().await;
    end.assert_clean_exit();
}

#[tokio::test]
async fn tool_list_changes_are_announced_to_legacy_sessions() {
    let mut s = Server::spawn(&[]);
    s.initialize("2025-11-25", json!({})).await;
    let r = s
        .call(json!(1), "register", json!({"name": "echo.again"}))
        .await;
    assert_eq!(r["structuredContent"]["registered"], "echo.again");
    let note = s
        .next_matching(|v| v["method"] == "notifications/tools/list_changed")
        .await;
    assert!(note.get("id").is_none());
    let page = s.ok(json!(2), "tools/list", json!({})).await;
    assert!(
        page["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "echo.again"),
        "{page}"
    );
    let r = s.call(json!(3), "echo.again", json!({"text": "new"})).await;
    assert_eq!(r["structuredContent"]["text"], "new");
    let end = s.finish().await;
    end.assert_clean_exit();
}

#[tokio::test]
async fn server_to_client_requests_are_answered_over_stdio() {
    let mut s = Server::spawn(&[]);
    s.initialize("2025-11-25", json!({"elicitation": {}})).await;
    s.send_request(
        json!("ask"),
        "tools/call",
        json!({"name": "ask", "arguments": {}}),
    )
    .await;
    let req = s
        .next_matching(|v| v["method"] == "elicitation/create")
        .await;
    assert_eq!(req["params"]["message"], "What is your name?");
    let id = req["id"].clone();
    assert!(!id.is_null(), "{req}");
    let answer = json!({"action": "accept", "content": {"name": "Grace"}});
    s.send(json!({"jsonrpc": "2.0", "id": id, "result": answer}))
        .await;
    let r = s.response(&json!("ask")).await;
    assert_eq!(r["result"]["structuredContent"]["answer"], answer, "{r}");
    let end = s.finish().await;
    end.assert_clean_exit();
    assert!(
        end.unread.is_empty(),
        "the client's answer got no answer of its own: {:?}",
        end.unread
    );
}

#[tokio::test]
async fn mcp_client_drives_the_process_in_both_eras_and_fails_fast_when_it_dies() {
    for era in [Era::Legacy, Era::Modern] {
        let mut child = Command::new(testbed())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let client = McpClient::connect(
            child.stdout.take().unwrap(),
            child.stdin.take().unwrap(),
            era,
        );
        let init = tokio::time::timeout(HANG_GUARD, client.initialize())
            .await
            .unwrap()
            .unwrap();
        match era {
            Era::Legacy => assert_eq!(init["protocolVersion"], "2025-11-25"),
            Era::Modern => assert_eq!(init["resultType"], "complete"),
        }
        let tools = client.list_tools().await.unwrap();
        assert_eq!(tools.len(), 11);
        let r = client
            .call_tool("echo", json!({"text": "via client"}))
            .await
            .unwrap();
        assert_eq!(r["structuredContent"]["text"], "via client");
        let e = client.call_tool("nope", json!({})).await.unwrap_err();
        assert!(
            matches!(e, ClientError::Server(ref o) if o.code == -32602),
            "{e:?}"
        );
        // When the server goes away, calls fail instead of hanging.
        child.kill().await.unwrap();
        let after =
            tokio::time::timeout(HANG_GUARD, client.call_tool("echo", json!({"text": "x"})))
                .await
                .expect("a call to a dead server hung");
        assert_eq!(after.unwrap_err(), ClientError::Closed);
    }
}

#[tokio::test]
async fn the_server_stops_when_its_stdout_closes() {
    // "If the output closes, the loop stops reading and cancels everything" (transport docs):
    // a client that stops reading must not leave the server running with stdin still open.
    let mut child = Command::new(testbed())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    drop(child.stdout.take());
    // Something to answer, so the server finds out that nobody is listening.
    let ping = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
    stdin.write_all(ping).await.unwrap();
    stdin.flush().await.unwrap();
    let status = tokio::time::timeout(HANG_GUARD, child.wait())
        .await
        .expect("the server kept running after its stdout closed")
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status}");
    // stdin was open throughout.
    drop(stdin);
}

/// A file in the temp directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(tag: &str) -> Self {
        Self(std::env::temp_dir().join(format!(
            "codomyrmex-stdio-{tag}-{}-{:?}",
            std::process::id(),
            std::time::SystemTime::now()
        )))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn files_work_as_stdin_and_stdout() {
    // `serve < requests > answers`: neither stream is a pipe.
    let input = TempFile::new("in");
    let output = TempFile::new("out");
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 200}}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "from a file"}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}),
    ];
    let mut text: String = requests.iter().map(|r| format!("{r}\n")).collect();
    // The last line has no newline: EOF ends it.
    text.push_str(r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#);
    std::fs::write(&input.0, text).unwrap();
    let mut child = Command::new(testbed())
        .args(["--grace-ms", "20000"])
        .stdin(std::fs::File::open(&input.0).unwrap())
        .stdout(std::fs::File::create(&output.0).unwrap())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let status = tokio::time::timeout(HANG_GUARD, child.wait())
        .await
        .expect("the server did not exit at the end of its input file")
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status}");
    let written = std::fs::read_to_string(&output.0).unwrap();
    let mut ids = Vec::new();
    for line in written.lines() {
        let v: Value = serde_json::from_str(line)
            .unwrap_or_else(|_| panic!("stdout carried a non-JSON line: {line:?}"));
        assert!(is_jsonrpc(&v), "{line}");
        assert!(v.get("error").is_none(), "{v}");
        ids.push(v["id"].as_u64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(
        ids,
        [1, 2, 3, 4, 5],
        "every request answered once, the sleep included"
    );
}

#[tokio::test]
async fn a_message_split_across_writes_is_read_once() {
    let mut s = Server::spawn(&[]);
    s.initialize("2025-11-25", json!({})).await;
    let line = json!({"jsonrpc": "2.0", "id": "split", "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "in pieces"}}}).to_string();
    let (a, b) = line.split_at(line.len() / 2);
    let stdin = s.stdin.as_mut().unwrap();
    stdin.write_all(a.as_bytes()).await.unwrap();
    stdin.flush().await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    stdin.write_all(b.as_bytes()).await.unwrap();
    stdin.write_all(b"\n").await.unwrap();
    stdin.flush().await.unwrap();
    let r = s.next().await;
    assert_eq!(r["id"], "split");
    assert_eq!(r["result"]["structuredContent"]["text"], "in pieces");
    // A request line of several megabytes (over many reads) is fine within the default limit.
    let text = "w".repeat(3 * 1024 * 1024);
    let r = s
        .call(json!("large-in"), "echo", json!({"text": text}))
        .await;
    assert_eq!(
        r["structuredContent"]["text"].as_str().map(str::len),
        Some(text.len())
    );
    // An over-long last line without a newline is still answered before exit.
    let mut s2 = Server::spawn(&["--max-message-size", "100"]);
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "p".repeat(500)
    );
    s2.stdin
        .as_mut()
        .unwrap()
        .write_all(long.as_bytes())
        .await
        .unwrap();
    let end = s2.finish().await;
    end.assert_clean_exit();
    assert_eq!(end.unread.len(), 1, "{:?}", end.unread);
    assert_eq!(error_code(&end.unread[0]), -32600);
    let end = s.finish().await;
    end.assert_clean_exit();
}

#[cfg(unix)]
#[tokio::test]
async fn the_server_stops_when_its_stdout_closes_even_if_stdin_is_a_socket() {
    // stdin that is neither a pipe nor a file: a socket, as under a socket-activating
    // supervisor. Its reads block; closing stdout must still end the process.
    use std::os::fd::OwnedFd;
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let mut child = Command::new(testbed())
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    // A short write to a socket does not block.
    std::io::Write::write_all(
        &mut &ours,
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n",
    )
    .unwrap();
    let status = tokio::time::timeout(HANG_GUARD, child.wait())
        .await
        .expect("the server kept running after its stdout closed")
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status}");
    drop(ours);
}

/// The capacity of the testbed's stdin and stdout pipes once it has answered `initialize`,
/// with `CODOMYRMEX_MCP_STDIO_PIPE_SIZE` set to `env` (or unset).
#[cfg(target_os = "linux")]
async fn pipe_capacities(env: Option<&str>) -> (usize, usize) {
    let program = testbed();
    let mut command = Command::new(&program);
    match env {
        Some(v) => command.env(codomyrmex_mcp::transport::stdio::PIPE_SIZE_ENV, v),
        None => command.env_remove(codomyrmex_mcp::transport::stdio::PIPE_SIZE_ENV),
    };
    let mut s = Server::spawn_with(&mut command, &program);
    s.initialize("2025-11-25", json!({})).await;
    let stdin = rustix::pipe::fcntl_getpipe_size(s.stdin.as_ref().unwrap()).unwrap();
    // Another descriptor of the server's stdout pipe (it has a writer: opening does not wait).
    let pid = s.child.id().unwrap();
    let out = std::fs::File::open(format!("/proc/{pid}/fd/1")).unwrap();
    let stdout = rustix::pipe::fcntl_getpipe_size(&out).unwrap();
    drop(out);
    s.finish().await.assert_clean_exit();
    (stdin, stdout)
}

/// A new pipe's capacity, and whether this user may raise one to `size` bytes (the kernel
/// refuses past the user's pipe pages).
#[cfg(target_os = "linux")]
fn pipe_default_and_may_raise_to(size: usize) -> (usize, bool) {
    let (rx, _tx) = rustix::pipe::pipe().unwrap();
    let default = rustix::pipe::fcntl_getpipe_size(&rx).unwrap();
    (default, rustix::pipe::fcntl_setpipe_size(&rx, size).is_ok())
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn serve_stdio_raises_its_pipes_to_256_kib_by_default_and_zero_leaves_them() {
    let (default, may) = pipe_default_and_may_raise_to(256 * 1024);
    let raised = if may { 256 * 1024 } else { default };
    assert_eq!(pipe_capacities(None).await, (raised, raised));
    // A setting that is no number is ignored: the configured size holds.
    assert_eq!(pipe_capacities(Some("lots")).await, (raised, raised));
    assert_eq!(pipe_capacities(Some("0")).await, (default, default));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_pipe_size_is_capped_at_the_systems_limit() {
    let max: usize = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let (default, may) = pipe_default_and_may_raise_to(max);
    let want = (max * 8).to_string();
    let got = pipe_capacities(Some(&want)).await;
    if may {
        assert_eq!(got, (max, max));
    } else {
        eprintln!("this user may not raise a pipe to {max} bytes: checked it is left alone");
        assert!(got.0 >= default && got.0 <= max, "{got:?}");
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_file_as_stdin_is_served_without_a_pipe_size() {
    use std::io::Write as _;
    let mut input = tempfile::tempfile().unwrap();
    writeln!(
        input,
        "{}",
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "stdio-tests", "version": "0"}}})
    )
    .unwrap();
    writeln!(
        input,
        "{}",
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    )
    .unwrap();
    std::io::Seek::rewind(&mut input).unwrap();
    // The size is asked for, but stdin is no pipe: it is left alone, stdout (a pipe) raised.
    let mut child = Command::new(testbed())
        .env(codomyrmex_mcp::transport::stdio::PIPE_SIZE_ENV, "1048576")
        .stdin(Stdio::from(input))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = String::new();
    let mut stdout = child.stdout.take().unwrap();
    tokio::time::timeout(HANG_GUARD, stdout.read_to_string(&mut out))
        .await
        .expect("the server ended its output")
        .unwrap();
    let status = tokio::time::timeout(HANG_GUARD, child.wait())
        .await
        .expect("the server exited")
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status}");
    let answers: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 2, "{out}");
    assert!(
        answers
            .iter()
            .any(|v| v["id"] == "init" && v["result"].is_object())
    );
    assert!(
        answers
            .iter()
            .any(|v| v["id"] == 1 && v["result"] == json!({}))
    );
}
