//! `gateway --check` against real upstreams: this binary's own server mounted twice (a stdio
//! child and a Streamable HTTP instance) beside one that cannot start. The catalogue names
//! every tool under its namespace, applies renames and filters, and reports what is down.

// Test helpers fail by panicking, outside `#[test]` functions too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::Value;
use support::{BIN, Ran, command, output, serve_http};

#[test]
fn check_prints_the_merged_catalogue_of_real_upstreams() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "hello").unwrap();
    let server = serve_http(root.path(), &[], &[]);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    let root_s = root.path().to_str().unwrap();
    std::fs::write(
        &config,
        format!(
            r#"
[[upstream]]
name = "files"
command = "{BIN}"
args = ["serve", "--root", "{root_s}"]
exclude = ["git.*", "shell.*"]
rename = {{ "file_system.read" = "cat" }}

[[upstream]]
name = "remote"
url = "{url}"
include = ["codomyrmex.*"]
"#,
            url = server.url
        ),
    )
    .unwrap();
    let Ran {
        code,
        stdout,
        stderr,
    } = output(&mut command(&[
        "gateway",
        "--check",
        "--json",
        "--config",
        config.to_str().unwrap(),
    ]));
    let out: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"files.cat"), "{tools:?}");
    assert!(!tools.contains(&"files.file_system.read"), "{tools:?}");
    assert!(
        tools.contains(&"files.file_system.list_directory"),
        "{tools:?}"
    );
    assert!(
        !tools.iter().any(|t| t.starts_with("files.git.")),
        "{tools:?}"
    );
    assert!(
        tools.contains(&"remote.codomyrmex.list_registered_tools"),
        "{tools:?}"
    );
    assert!(
        tools
            .iter()
            .filter(|t| t.starts_with("remote."))
            .all(|t| t.starts_with("remote.codomyrmex.")),
        "{tools:?}"
    );
    // Definitions come through, under the local name.
    let cat = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "files.cat")
        .unwrap();
    assert_eq!(cat["inputSchema"]["type"], "object");
    // The root's file is a resource of both upstreams (filters select tools and prompts),
    // its URI under each namespace.
    let resources: Vec<&str> = out["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        resources,
        [
            "files+codomyrmex://root/a.txt",
            "remote+codomyrmex://root/a.txt"
        ]
    );
    assert_eq!(out["unreachable"], serde_json::json!([]));
    assert_eq!(out["problems"], serde_json::json!([]));
}

#[test]
fn an_unreachable_upstream_and_a_typo_are_reported_and_fail_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[upstream]]
name = "ok"
command = "{BIN}"
args = ["serve", "--root", "{root}"]
rename = {{ "no_such_tool" = "x" }}

[[upstream]]
name = "gone"
command = "{root}/no-such-program"
timeout_secs = 5
"#,
            root = dir.path().to_str().unwrap()
        ),
    )
    .unwrap();
    let Ran {
        code,
        stdout,
        stderr,
    } = output(&mut command(&[
        "gateway",
        "--check",
        "--config",
        config.to_str().unwrap(),
    ]));
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("ok.file_system.read"), "{stdout}");
    assert!(
        stdout.contains("unreachable: gone: cannot start"),
        "{stdout}"
    );
    assert!(
        stdout.contains("left out: ok: rename of \"no_such_tool\""),
        "{stdout}"
    );
}

#[test]
fn an_invalid_configuration_exits_2_with_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        "[[upstream]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h/\"\n",
    )
    .unwrap();
    let Ran { code, stderr, .. } = output(&mut command(&[
        "gateway",
        "--check",
        "--config",
        config.to_str().unwrap(),
    ]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("gateway.toml"), "{stderr}");
    assert!(stderr.contains("both `command` and `url`"), "{stderr}");
    std::fs::write(&config, "[[upstream]]\nname = \"a\"\ncomand = \"x\"\n").unwrap();
    let Ran { code, stderr, .. } = output(&mut command(&[
        "gateway",
        "--check",
        "--config",
        config.to_str().unwrap(),
    ]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("gateway.toml:3:1"), "{stderr}");
}

/// A port on 127.0.0.1 that nothing listens on (it was free a moment ago).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Finding 7: credentials in an upstream's URL are refused when the configuration is read,
/// without being repeated; a query's values (an API key, say) never reach `--check`'s
/// output or the log line of each retry.
#[test]
fn an_upstream_urls_secrets_reach_neither_the_check_nor_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    let port = closed_port();
    std::fs::write(
        &config,
        format!("[[upstream]]\nname = \"web\"\nurl = \"http://user:PASS@127.0.0.1:{port}/mcp?api_key=K\"\n"),
    )
    .unwrap();
    let path = config.to_str().unwrap();
    let Ran {
        code,
        stdout,
        stderr,
    } = output(&mut command(&["gateway", "--check", "--config", path]));
    assert_eq!(code, Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("\"web\"") && stderr.contains("credentials"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("PASS") && !stdout.contains("PASS"),
        "{stdout}\n{stderr}"
    );

    std::fs::write(
        &config,
        format!("[[upstream]]\nname = \"web\"\nurl = \"http://127.0.0.1:{port}/mcp?api_key=K#F\"\ntimeout_secs = 2\n"),
    )
    .unwrap();
    let Ran {
        code,
        stdout,
        stderr,
    } = output(&mut command(&["gateway", "--check", "--config", path]));
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("unreachable: web"), "{stdout}");
    assert!(stdout.contains("http://127.0.0.1"), "{stdout}");
    for secret in ["=K", "#F"] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{stdout}\n{stderr}"
        );
    }
    // Serving, the upstream is retried, each failure logged at WARN.
    let mut child = command(&["gateway", "--config", path])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = support::stderr_lines(&mut child);
    let first = support::await_line(&lines, "upstream unreachable");
    let second = support::await_line(&lines, "upstream unreachable");
    let _ = child.kill();
    let _ = child.wait();
    for line in [first, second] {
        assert!(line.contains("web"), "{line}");
        assert!(!line.contains("=K") && !line.contains("#F"), "{line}");
    }
}

/// A 2025-11-25 upstream whose tool's title and description carry escape sequences, a bidi
/// override and a C1 CSI.
const HOSTILE_UPSTREAM: &str = r#"
H = "\x1b]0;pwned\x07\x1b[2J\u202e\u009b"
def answer(method, p, m):
    if method == "initialize":
        return initialized("hostile", {"tools": {}})
    if method == "tools/list":
        return {"result": {"tools": [{"name": "t", "title": "T" + H, "description": "D" + H + "\n\tnext", "inputSchema": {"type": "object"}}]}}
    return NOT_FOUND
serve(answer)
"#;

#[test]
fn relayed_titles_and_descriptions_are_inert() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("hostile.py");
    std::fs::write(
        &script,
        format!("{}{HOSTILE_UPSTREAM}", support::PYTHON_SERVER_PRELUDE),
    )
    .unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"h\"\ncommand = \"python3\"\nargs = [\"{}\"]\n",
            script.to_str().unwrap()
        ),
    )
    .unwrap();
    let r = output(&mut command(&[
        "gateway",
        "--check",
        "--json",
        "--config",
        config.to_str().unwrap(),
    ]));
    let out: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r:?}"));
    assert_eq!(out["tools"][0]["name"], "h.t", "{out}");
    assert_eq!(out["tools"][0]["title"], "T]0;pwned[2J", "{out}");
    assert_eq!(
        out["tools"][0]["description"], "D]0;pwned[2J\n\tnext",
        "{out}"
    );
}

/// An HTTP "upstream" that answers every request with `500` and a body carrying a carriage
/// return, a bidi override and a zero-width space; prints its port.
const HOSTILE_HTTP: &str = r#"
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = "bad\r\u202e\u200bupstream".encode()
        self.send_response(500)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// An upstream's error text in the gateway's retry WARN line is inert: tracing escapes ESC
/// and C1, not a carriage return or bidi controls.
#[test]
fn an_upstreams_error_text_is_inert_in_the_retry_log() {
    use std::io::BufRead as _;
    let mut upstream = std::process::Command::new("python3")
        .args(["-c", HOSTILE_HTTP])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufReader::new(upstream.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"web\"\nurl = \"http://127.0.0.1:{}/mcp\"\n",
            port.trim()
        ),
    )
    .unwrap();
    let mut child = command(&["gateway", "--config", config.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = support::stderr_lines(&mut child);
    let line = support::await_line(&lines, "upstream unreachable");
    let _ = child.kill();
    let _ = child.wait();
    let _ = upstream.kill();
    let _ = upstream.wait();
    assert!(line.contains("badupstream"), "{line:?}");
    for c in ['\r', '\u{202e}', '\u{200b}'] {
        assert!(!line.contains(c), "{c:?} in {line:?}");
    }
}

/// An upstream whose list pages cycle is reported unreachable with the cycle named, at once
/// (before the fix the gateway's client followed 10,000 pages from its cache, holding
/// every page's items, and said only "too many pages"); the other upstream is mounted.
#[test]
fn an_upstream_whose_pages_cycle_is_reported_with_the_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let script = support::python_server(dir.path(), "cycle.py", support::CYCLING_SERVER);
    let script = script.trim_start_matches("python3 ").trim_matches('\'');
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[upstream]]
name = "ok"
command = "{BIN}"
args = ["serve", "--root", "{root}"]

[[upstream]]
name = "cycle"
command = "python3"
args = ["{script}"]
"#,
            root = dir.path().to_str().unwrap()
        ),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let Ran {
        code,
        stdout,
        stderr,
    } = output(&mut command(&[
        "gateway",
        "--check",
        "--config",
        config.to_str().unwrap(),
    ]));
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("ok.file_system.read"), "{stdout}");
    assert!(
        stdout.contains("unreachable: cycle: tools/list failed:")
            && stdout.contains("gave cursor \"a\" again (its pages cycle)"),
        "{stdout}"
    );
    assert!(!stdout.contains("cycle.t0"), "{stdout}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}
