//! The gateway's observability per upstream (issue #31 item 5) against the real binary,
//! served over Streamable HTTP with a token: `/metrics` counts each upstream's calls,
//! errors, latency, calls in flight, restarts and health; `/status` (and `gateway status`)
//! shows each upstream's state, era, tool count, last error and the configuration
//! generation, behind `/metrics`'s authentication; and each forwarded call carries a
//! `traceparent` of the caller's trace, in `_meta` to a stdio upstream and in the header
//! to an HTTP one.
//!
//! The upstreams are small Python servers written by the test: a stdio one whose `meta` tool
//! answers with the `_meta` it received (and whose `die` tool ends the process, so the
//! supervisor starts it again), and a Streamable HTTP one whose `headers` tool answers with
//! the `traceparent` header it received.

// Test helpers fail by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::http::HttpTarget;
use codomyrmex_mcp::client::{ClientOptions, EraPreference};
use serde_json::{Value, json};
use support::{HANG_GUARD, Ran, command, output, python_server};

const TOKEN: &str = "observe-token-0123456789";
const TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "b7ad6b7169203331";

const STDIO_UPSTREAM: &str = r#"
import os
def answer(method, p, m):
    if method == "initialize":
        return initialized("meta", {"tools": {}})
    if method == "tools/list":
        return {"result": {"tools": [
            {"name": "meta", "inputSchema": {"type": "object"}},
            {"name": "fail", "inputSchema": {"type": "object"}},
            {"name": "die", "inputSchema": {"type": "object"}}]}}
    if method == "tools/call":
        name = p["name"]
        if name == "die":
            os._exit(0)
        if name == "fail":
            return {"result": {"content": [{"type": "text", "text": "no"}], "isError": True}}
        return {"result": {"content": [{"type": "text", "text": json.dumps(p.get("_meta", {}))}]}}
    if method == "ping":
        return {"result": {}}
    if "id" in m:
        return NOT_FOUND
    return None
serve(answer)
"#;

/// A 2025-11-25 Streamable HTTP server answering JSON; prints its port.
const HTTP_UPSTREAM: &str = r#"
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_DELETE(self):
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def do_GET(self):
        self.send_response(405); self.send_header("Content-Length", "0"); self.end_headers()
    def do_POST(self):
        m = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method = m.get("method")
        if "id" not in m:
            self.send_response(202); self.send_header("Content-Length", "0"); self.end_headers(); return
        if method == "initialize":
            r = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "web", "version": "1"}}
        elif method == "tools/list":
            r = {"tools": [{"name": "headers", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            r = {"content": [{"type": "text", "text": json.dumps({"traceparent": self.headers.get("traceparent")})}]}
        elif method == "ping":
            r = {}
        else:
            r = None
        body = {"jsonrpc": "2.0", "id": m["id"]}
        if r is None:
            body["error"] = {"code": -32601, "message": "Method not found"}
        else:
            body["result"] = r
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Mcp-Session-Id", "s1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
s = HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// The Python HTTP upstream, killed on drop.
struct Web(std::process::Child, u16);

impl Drop for Web {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn web(dir: &std::path::Path) -> Web {
    let path = dir.join("web.py");
    std::fs::write(&path, HTTP_UPSTREAM).unwrap();
    let mut child = std::process::Command::new("python3")
        .arg(&path)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let port = line.trim().parse().unwrap();
    Web(child, port)
}

fn status(addr: &str) -> Value {
    let answer = support::http_get(addr, "/status", Some(TOKEN));
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    support::body_json(&answer)
}

fn upstream<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {doc}"))
}

fn sample(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(prefix))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {prefix} in {text}"))
}

/// `tools/call` of `name` with the caller's `traceparent` in `_meta`: the text it answers.
async fn call_traced(client: &McpClient, name: &str) -> Value {
    let traceparent = format!("00-{TRACE}-{CALLER_SPAN}-01");
    tokio::time::timeout(
        HANG_GUARD,
        client.request(
            "tools/call",
            json!({"name": name, "arguments": {}, "_meta": {"traceparent": traceparent}}),
        ),
    )
    .await
    .unwrap()
    .unwrap()
}

fn traceparent_in(result: &Value) -> String {
    let text = result["content"][0]["text"].as_str().unwrap();
    let seen: Value = serde_json::from_str(text).unwrap();
    seen["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("no traceparent reached the upstream: {result}"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_status_and_trace_context_per_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let web = web(dir.path());
    let stdio = python_server(dir.path(), "meta.py", STDIO_UPSTREAM);
    let (program, script) = stdio.split_once(' ').unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[upstream]]
name = "echo"
command = "{program}"
args = [{script:?}]
era = "legacy"

[[upstream]]
name = "web"
url = "http://127.0.0.1:{port}/mcp"
era = "legacy"

[[upstream]]
name = "gone"
command = "{missing}"
"#,
            script = script.trim_matches('\''),
            port = web.1,
            missing = dir.path().join("no-such-program").display(),
        ),
    )
    .unwrap();
    let server = support::http_server(
        &[
            "gateway",
            "--config",
            config.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
            "--auth-token",
            TOKEN,
        ],
        &[],
    );
    let addr = server.addr().to_owned();
    let mut target = HttpTarget::new(server.url.clone());
    target.token = Some(TOKEN.to_owned());
    let client = McpClient::connect_http(target, ClientOptions::default()).unwrap();
    tokio::time::timeout(
        HANG_GUARD,
        client.negotiate(EraPreference::Legacy, Duration::from_secs(10)),
    )
    .await
    .unwrap()
    .unwrap();

    // Trace context: the caller's trace id reaches both upstreams, under the gateway's span.
    for (tool, upstream) in [("echo.meta", "stdio"), ("web.headers", "http")] {
        let seen = traceparent_in(&call_traced(&client, tool).await);
        let parts: Vec<&str> = seen.split('-').collect();
        assert_eq!(parts.len(), 4, "{upstream}: {seen}");
        assert_eq!(parts[1], TRACE, "{upstream}: {seen}");
        assert_ne!(
            parts[2], CALLER_SPAN,
            "{upstream}: the gateway's span is the parent"
        );
        assert_eq!(parts[3], "01", "{upstream}: {seen}");
    }
    // A tool failure, counted as the upstream's error.
    let failed = call_traced(&client, "echo.fail").await;
    assert_eq!(failed["isError"], Value::Bool(true), "{failed}");

    // `/metrics`: per upstream, behind the token.
    let refused = support::http_get(&addr, "/metrics", None);
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let text = support::http_get(&addr, "/metrics", Some(TOKEN));
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let echo_calls = "mcp_gateway_upstream_calls_total{upstream=\"echo\",method=\"tools/call\"} ";
    assert_eq!(sample(&text, echo_calls), 2.0, "{text}");
    let web_calls = "mcp_gateway_upstream_calls_total{upstream=\"web\",method=\"tools/call\"} ";
    assert_eq!(sample(&text, web_calls), 1.0);
    let tool_errors = "mcp_gateway_upstream_errors_total{upstream=\"echo\",method=\"tools/call\",kind=\"tool_error\"} ";
    assert_eq!(sample(&text, tool_errors), 1.0, "{text}");
    assert_eq!(
        sample(
            &text,
            "mcp_gateway_upstream_call_duration_seconds_count{upstream=\"echo\"} "
        ),
        2.0
    );
    assert_eq!(
        sample(
            &text,
            "mcp_gateway_upstream_calls_in_flight{upstream=\"echo\"} "
        ),
        0.0
    );
    assert_eq!(
        sample(&text, "mcp_gateway_upstream_up{upstream=\"echo\"} "),
        1.0
    );
    assert_eq!(
        sample(&text, "mcp_gateway_upstream_up{upstream=\"gone\"} "),
        0.0
    );
    assert_eq!(
        sample(
            &text,
            "mcp_gateway_upstream_restarts_total{upstream=\"echo\"} "
        ),
        0.0
    );
    assert_eq!(sample(&text, "mcp_gateway_config_generation "), 1.0);
    // The transport's own families are still there, before the one `# EOF`.
    assert!(text.contains("mcp_http_requests_total"), "{text}");
    assert_eq!(text.matches("# EOF").count(), 1, "{text}");

    // `/status`: behind the same token.
    let refused = support::http_get(&addr, "/status", None);
    assert!(refused.starts_with("HTTP/1.1 401"), "{refused}");
    let doc = status(&addr);
    assert_eq!(doc["config_generation"], 1);
    let echo = upstream(&doc, "echo");
    assert_eq!(echo["state"], "up", "{doc}");
    assert_eq!(echo["era"], "2025-11-25");
    assert_eq!(echo["tools"], 3);
    assert_eq!(upstream(&doc, "web")["tools"], 1);
    let gone = upstream(&doc, "gone");
    assert_ne!(gone["state"], "up", "{doc}");
    assert!(
        gone["last_error"]
            .as_str()
            .unwrap()
            .contains("cannot start"),
        "{doc}"
    );

    // A restart: the stdio upstream ends; its supervisor starts it again.
    let died = tokio::time::timeout(
        HANG_GUARD,
        client.request("tools/call", json!({"name": "echo.die", "arguments": {}})),
    )
    .await
    .unwrap();
    if let Ok(r) = &died {
        assert_eq!(r["isError"], Value::Bool(true), "{r}");
    }
    let deadline = std::time::Instant::now() + HANG_GUARD;
    loop {
        let doc = status(&addr);
        let echo = upstream(&doc, "echo");
        if echo["restarts"] == 1 && echo["state"] == "up" {
            assert!(echo["last_error"].is_string(), "{doc}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no restart: {doc}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let text = support::http_get(&addr, "/metrics", Some(TOKEN));
    assert_eq!(
        sample(
            &text,
            "mcp_gateway_upstream_restarts_total{upstream=\"echo\"} "
        ),
        1.0,
        "{text}"
    );

    // `gateway status`: the table, and the JSON document.
    let url = format!("http://{addr}");
    let mut cmd = command(&["gateway", "status", "--url", &url]);
    cmd.env("CODOMYRMEX_MCP_AUTH_TOKEN", TOKEN);
    let Ran {
        code,
        stdout,
        stderr,
    } = output(&mut cmd);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("echo") && l.contains(" up ")),
        "{stdout}"
    );
    assert!(stdout.contains("config generation 1"), "{stdout}");
    let mut cmd = command(&["gateway", "status", "--url", &url, "--json"]);
    cmd.env("CODOMYRMEX_MCP_AUTH_TOKEN", TOKEN);
    let Ran { stdout, .. } = output(&mut cmd);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(upstream(&doc, "web")["state"], "up");
    // Without the token it is refused, saying so.
    let Ran { code, stderr, .. } = output(&mut command(&["gateway", "status", "--url", &url]));
    assert_eq!(code, Some(1));
    assert!(stderr.contains("token"), "{stderr}");

    client.close(Duration::from_secs(2)).await;
}
