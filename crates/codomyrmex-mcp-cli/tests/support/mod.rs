//! What the CLI's integration tests share: the binary under test started with none of the
//! caller's `CODOMYRMEX_MCP_*` variables, run to completion under a hang guard (its output
//! read while it runs, killed if it hangs), its stderr line by line, a `serve --http
//! 127.0.0.1:0` server whose URL is read from its announcement (the OS picks the port, so
//! tests side by side never race for one; `gateway --http` likewise), the gateway as a stdio
//! child of an `McpClient`, stdio servers from Python scripts, a plain `GET` of a server's
//! `/health`, `/status` or `/metrics`, and a process's children.
//!
//! Not a client: the tests speak MCP through the binary or `McpClient`. Each test file takes
//! it with `mod support;`; a file uses only some of it.
// Test helpers fail by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io::{BufRead as _, BufReader, Read, Write as _};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_codomyrmex-mcp");
/// How long a run may take before it is taken to hang.
pub const HANG_GUARD: Duration = Duration::from_secs(60);

/// Removes every `CODOMYRMEX_MCP_*` variable of the caller's environment from `cmd`, so that
/// it cannot leak into a test.
pub fn without_our_variables(cmd: &mut Command) -> &mut Command {
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("CODOMYRMEX_MCP_") {
            cmd.env_remove(k);
        }
    }
    cmd
}

/// The binary with `args`, none of the caller's `CODOMYRMEX_MCP_*` variables, and stdin
/// from `/dev/null`.
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args);
    without_our_variables(&mut c);
    c.stdin(Stdio::null());
    c
}

/// What a finished run printed and its exit code.
#[derive(Debug)]
pub struct Ran {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Its stdout, lossily UTF-8.
    pub stdout: String,
    /// Its stderr, lossily UTF-8.
    pub stderr: String,
}

/// Runs `cmd` to completion with stdin from `/dev/null`.
pub fn output(cmd: &mut Command) -> Ran {
    output_with(cmd, None)
}

/// Runs `cmd` to completion, `stdin` written to its stdin (then closed) when given, else
/// stdin from `/dev/null`. Its output is read while it runs, so a full pipe never stalls
/// it; it is killed, and the test fails, if it runs past [`HANG_GUARD`].
pub fn output_with(cmd: &mut Command, stdin: Option<&str>) -> Ran {
    let mut child = cmd
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    let stdout = read_all(child.stdout.take());
    let stderr = read_all(child.stderr.take());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "hung; stdout: {} stderr: {}",
                stdout.join().unwrap(),
                stderr.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// [`output`] on tokio: runs `cmd` to completion, killed if the future is dropped; the test
/// fails if it runs past [`HANG_GUARD`].
pub async fn output_async(cmd: Command) -> Ran {
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    let out = tokio::time::timeout(HANG_GUARD, cmd.output())
        .await
        .expect("hung")
        .unwrap();
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Reads `pipe` to its end on a thread of its own.
fn read_all(pipe: Option<impl Read + Send + 'static>) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// Runs the binary with `args` to completion (see [`command`] and [`output`]).
pub fn run(args: &[&str]) -> Ran {
    output(&mut command(args))
}

/// The JSON a successful run printed.
pub fn json_of(r: &Ran) -> Value {
    assert_eq!(r.code, Some(0), "stdout: {} stderr: {}", r.stdout, r.stderr);
    stdout_json(r)
}

/// The JSON a run printed, whatever its exit code.
pub fn stdout_json(r: &Ran) -> Value {
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

/// Asserts that the run exited with `code` and printed exactly `stdout`; `what` (and its
/// stderr) say which run failed.
pub fn assert_printed(r: &Ran, what: &str, code: i32, stdout: &str) {
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (Some(code), stdout),
        "{what}: {}",
        r.stderr
    );
}

/// The child's stderr, line by line, on a channel; each line is also shown (`server: …`),
/// and the pipe is drained to its end, so the child never blocks on it.
pub fn stderr_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            eprintln!("server: {line}");
            let _ = tx.send(line);
        }
    });
    rx
}

/// Waits (at most [`HANG_GUARD`]) for a line containing `needle`; returns it.
pub fn await_line(lines: &mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return line,
            Ok(_) => {}
            Err(e) => panic!("no stderr line with {needle:?}: {e}"),
        }
    }
}

/// What `serve --http` prints once it is listening, before its URL.
pub const SERVING: &str = "codomyrmex-mcp: serving MCP over Streamable HTTP at ";

/// A running server process, killed on drop.
pub struct Server {
    /// The process.
    pub child: Child,
    /// The MCP endpoint's URL, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// The rest of its stderr, line by line.
    pub stderr: mpsc::Receiver<String>,
}

impl Server {
    /// The `127.0.0.1:PORT` it listens on.
    pub fn addr(&self) -> &str {
        self.url
            .strip_prefix("http://")
            .and_then(|u| u.strip_suffix("/mcp"))
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `serve --root ROOT --http 127.0.0.1:0 EXTRA...` with the variables `env`, and
/// waits for the URL it announces.
pub fn serve_http(root: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
    let root = root.display().to_string();
    let mut args = vec!["serve", "--root", root.as_str(), "--http", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    http_server(&args, env)
}

/// Starts the binary with `args` (which serve Streamable HTTP on `127.0.0.1:0`: `serve` or
/// `gateway`) and the variables `env`, and waits (blocking) for the URL it announces.
pub fn http_server(args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut cmd = command(args);
    cmd.envs(env.iter().copied());
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = stderr_lines(&mut child);
    // Killed on drop from here on, even if the announcement never comes.
    let mut server = Server {
        child,
        url: String::new(),
        stderr,
    };
    let line = await_line(&server.stderr, SERVING);
    let url = line
        .split_once(SERVING)
        .map(|(_, url)| url.to_owned())
        .unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    server.url = url;
    server
}

/// `gateway --config CONFIG` as a stdio child of an [`McpClient`] with `handlers`, its
/// handshake done in `era` (within [`HANG_GUARD`]).
pub async fn gateway_stdio(
    config: &Path,
    era: codomyrmex_mcp::client::EraPreference,
    handlers: codomyrmex_mcp::client::ClientHandlers,
) -> codomyrmex_mcp::client::McpClient {
    let mut c = codomyrmex_mcp::client::StdioCommand::new(BIN);
    c.args = vec![
        "gateway".into(),
        "--config".into(),
        config.to_str().unwrap().into(),
    ];
    let options = codomyrmex_mcp::client::ClientOptions {
        handlers,
        ..codomyrmex_mcp::client::ClientOptions::default()
    };
    let client = codomyrmex_mcp::client::McpClient::spawn(&c, options).unwrap();
    tokio::time::timeout(HANG_GUARD, client.negotiate(era, Duration::from_secs(10)))
        .await
        .expect("no hang")
        .expect("the gateway answers the handshake");
    client
}

/// What every Python stdio server of [`python_server`] starts with: `send(message)` writes a
/// line; `initialized(name, capabilities)` is a 2025-11-25 `initialize` result;
/// `NOT_FOUND` is the method-not-found error; `serve(answer)` reads the client's lines and
/// calls `answer(method, params, message)` for each (notifications too), then answers a
/// request with the result or error it returned, or not at all for `None`.
pub const PYTHON_SERVER_PRELUDE: &str = r#"
import json, sys, time
def send(m):
    print(json.dumps(m), flush=True)
def initialized(name, capabilities):
    return {"result": {"protocolVersion": "2025-11-25", "capabilities": capabilities, "serverInfo": {"name": name, "version": "1"}}}
NOT_FOUND = {"error": {"code": -32601, "message": "Method not found"}}
def serve(answer):
    for line in sys.stdin:
        m = json.loads(line)
        r = answer(m.get("method"), m.get("params", {}), m)
        if r is not None and "id" in m:
            send(dict(r, jsonrpc="2.0", id=m["id"]))
"#;

/// Writes the Python stdio server `script`, after [`PYTHON_SERVER_PRELUDE`], to `dir/name`;
/// the `--stdio` command running it.
pub fn python_server(dir: &Path, name: &str, script: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("{PYTHON_SERVER_PRELUDE}{script}")).unwrap();
    format!("python3 '{}'", path.display())
}

/// A 2025-11-25 stdio server (Python, after [`PYTHON_SERVER_PRELUDE`]) whose `tools/list`
/// pages cycle a → b → a, each 100 tools of 1 KB with an hour's `ttlMs` (issue #26 finding 2).
pub const CYCLING_SERVER: &str = r#"
def answer(method, p, m):
    if method == "initialize":
        return initialized("cycle", {"tools": {}})
    if method == "tools/list":
        nxt = {None: "a", "a": "b", "b": "a"}[p.get("cursor")]
        tools = [{"name": "t%d" % i, "description": "x" * 1000, "inputSchema": {"type": "object"}} for i in range(100)]
        return {"result": {"tools": tools, "nextCursor": nxt, "ttlMs": 3600000}}
    if method == "ping":
        return {"result": {}}
    return NOT_FOUND
serve(answer)
"#;

/// `GET path` at `addr` over a connection of its own (`Connection: close`), with a bearer
/// `token` if given: the whole answer, head and body, read within [`HANG_GUARD`].
pub fn http_get(addr: &str, path: &str, token: Option<&str>) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(HANG_GUARD)).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The JSON body of a whole HTTP answer ([`http_get`]'s).
pub fn body_json(answer: &str) -> Value {
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

/// The child processes of `pid` whose command line contains `needle` (Linux's `/proc`).
pub fn children_of(pid: u32, needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(status) = std::fs::read_to_string(format!("/proc/{child}/status")) else {
            continue;
        };
        let ppid = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .and_then(|p| p.trim().parse::<u32>().ok());
        let cmdline = std::fs::read(format!("/proc/{child}/cmdline")).unwrap_or_default();
        if ppid == Some(pid) && String::from_utf8_lossy(&cmdline).contains(needle) {
            out.push(child);
        }
    }
    out
}
