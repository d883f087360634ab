//! The real `codomyrmex-mcp serve` binary over stdio, in both protocol eras.
//!
//! Plain `std::process` and a reader thread: the hang guard is a `recv_timeout`, never an
//! assertion on speed.

// Test helpers fail by panicking, outside `#[test]` functions too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const HANG_GUARD: Duration = Duration::from_secs(30);

/// One line of stdout: a parsed JSON-RPC message, or the raw text of anything else.
type Line = Result<Value, String>;

struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Line>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Serve {
    fn start() -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_codomyrmex-mcp"))
            .arg("serve")
            // Log as much as possible: all of it must go to stderr, none to stdout.
            .env("CODOMYRMEX_MCP_LOG", "trace")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start codomyrmex-mcp serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let parsed = serde_json::from_str::<Value>(&line)
                    .ok()
                    .filter(|v| v["jsonrpc"] == "2.0")
                    .ok_or(line);
                if tx.send(parsed).is_err() {
                    break;
                }
            }
        });
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: Some(stderr),
        }
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        writeln!(stdin, "{line}").expect("write to the server");
        stdin.flush().expect("flush");
    }

    fn next(&mut self) -> Value {
        match self.lines.recv_timeout(HANG_GUARD) {
            Ok(Ok(v)) => v,
            Ok(Err(line)) => panic!("stdout carried a non-JSON-RPC line: {line:?}"),
            Err(e) => panic!("no message from the server: {e}"),
        }
    }

    fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send_line(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        loop {
            let v = self.next();
            if v["id"] == id {
                return v;
            }
            assert!(
                v.get("method").is_some(),
                "an answer to something else: {v}"
            );
        }
    }

    fn ok(&mut self, id: Value, method: &str, params: Value) -> Value {
        let r = self.request(id, method, params);
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    /// Closes stdin; returns the exit code, the lines nobody read, and stderr.
    fn finish(mut self) -> (Option<i32>, Vec<Line>, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + HANG_GUARD;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the server did not exit after stdin closed");
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let rest: Vec<Line> = self.lines.iter().collect();
        let stderr = self
            .stderr
            .take()
            .expect("stderr")
            .join()
            .expect("stderr thread");
        (status.code(), rest, stderr)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn modern(params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    params
}

#[test]
fn serve_speaks_both_eras_over_stdio_and_exits_cleanly() {
    let mut s = Serve::start();

    // Legacy handshake.
    let init = s.ok(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "cli-test", "version": "0"}}),
    );
    assert_eq!(init["protocolVersion"], "2025-11-25");
    assert_eq!(init["serverInfo"]["name"], "codomyrmex-mcp");
    assert!(init["capabilities"]["tools"].is_object(), "{init}");
    assert!(init["instructions"].as_str().is_some_and(|i| !i.is_empty()));
    s.send_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    // An unknown notification is ignored (and logged, at trace level, to stderr only).
    s.send_line(r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}"#);

    let tools = s.ok(json!(2), "tools/list", json!({}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"codomyrmex.list_registered_tools"),
        "{names:?}"
    );
    assert!(names.contains(&"codomyrmex.get_tool_schema"), "{names:?}");

    let listed = s.ok(
        json!("call-1"),
        "tools/call",
        json!({"name": "codomyrmex.list_registered_tools", "arguments": {}}),
    );
    assert_ne!(listed["isError"], true, "{listed}");
    let listed_names = listed["structuredContent"]["tools"].as_array().unwrap();
    assert_eq!(listed_names.len(), names.len());
    // The model reads the names, one a line.
    let text = listed["content"][0]["text"].as_str().unwrap();
    assert_eq!(text, format!("{}\n", names.join("\n")));

    let schema = s.ok(
        json!("call-2"),
        "tools/call",
        json!({"name": "codomyrmex.get_tool_schema", "arguments": {"tool_name": "codomyrmex.get_tool_schema"}}),
    );
    assert_eq!(
        schema["structuredContent"]["inputSchema"]["required"],
        json!(["tool_name"])
    );
    let unknown = s.request(
        json!("call-3"),
        "tools/call",
        json!({"name": "no.such.tool", "arguments": {}}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // Malformed input is answered and serving goes on.
    s.send_line("{oops");
    let parse = s.next();
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["id"], Value::Null);
    assert_eq!(s.ok(json!(3), "ping", json!({})), json!({}));
    let unknown = s.request(json!(4), "no/such/method", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    // The modern era on the same process.
    let discover = s.ok(json!(5), "server/discover", modern(json!({})));
    assert_eq!(discover["resultType"], "complete");
    assert!(
        discover["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28"))
    );
    assert_eq!(
        discover["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "codomyrmex-mcp"
    );
    let modern_call = s.ok(
        json!(6),
        "tools/call",
        modern(json!({"name": "codomyrmex.list_registered_tools", "arguments": {}})),
    );
    assert_eq!(
        modern_call["structuredContent"],
        listed["structuredContent"]
    );
    assert_eq!(modern_call["resultType"], "complete");
    let missing = s.request(
        json!(7),
        "tools/list",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
    );
    assert_eq!(missing["error"]["code"], -32602, "{missing}");

    let (code, rest, stderr) = s.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(
        rest.iter().all(Result::is_ok),
        "stdout carried non-JSON-RPC lines: {rest:?}"
    );
    assert!(rest.is_empty(), "unexpected messages: {rest:?}");
    // The logs went somewhere: stderr.
    assert!(
        !stderr.trim().is_empty(),
        "trace logging wrote nothing to stderr"
    );
}

#[test]
fn serve_exits_zero_on_immediate_eof() {
    let s = Serve::start();
    let (code, rest, stderr) = s.finish();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(rest.is_empty(), "{rest:?}");
}
