//! The `client` command's flags, commands and exit statuses, against our own server in both
//! eras and against hand-written servers (a legacy-only one, one that never answers, one
//! that is not there).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use support::{
    BIN, Ran, assert_printed, command, json_of, output, output_with, python_server, run,
    stdout_json, without_our_variables,
};

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello\nworld\n").unwrap();
    dir
}

fn serve(root: &Path) -> String {
    format!("'{BIN}' serve --root '{}'", root.display())
}

/// The arguments `client --stdio SERVER --era ERA REST...`.
fn in_era<'a>(server: &'a str, era: &'a str, rest: &[&'a str]) -> Vec<&'a str> {
    [&["client", "--stdio", server, "--era", era][..], rest].concat()
}

/// `client --stdio SERVER REST...` (no `--era`: the default), run to completion.
fn stdio(server: &str, rest: &[&str]) -> Ran {
    run(&[&["client", "--stdio", server][..], rest].concat())
}

/// The JSON summary a `load` run printed, which had to fail (status 1).
fn failed_load(r: &Ran) -> Value {
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    stdout_json(r)
}

#[test]
fn key_value_arguments_and_args_from_stdin_in_every_era() {
    let dir = project();
    let s = serve(dir.path());
    for era in ["auto", "legacy", "modern"] {
        let read = ["call", "file_system.read"];
        let r = json_of(&run(&in_era(
            &s,
            era,
            &[&read[..], &["path=hello.txt", "--json"]].concat(),
        )));
        assert_eq!(r["structuredContent"]["content"], "hello\nworld\n", "{era}");
        let mut cmd = command(&in_era(
            &s,
            era,
            &[&read[..], &["--args", "@-", "--json"]].concat(),
        ));
        cmd.env_remove("X");
        let r = json_of(&output_with(&mut cmd, Some(r#"{"path": "hello.txt"}"#)));
        assert_eq!(r["structuredContent"]["content"], "hello\nworld\n", "{era}");
        // A value the schema cannot take is a usage error, before anything is called.
        let r = run(&in_era(
            &s,
            era,
            &["call", "file_system.list_directory", "max_depth=deep"],
        ));
        assert_eq!(r.code, Some(2), "{era}: {}", r.stderr);
        assert!(r.stderr.contains("max_depth=deep"), "{}", r.stderr);
    }
}

#[test]
fn prompt_ping_complete_and_templates() {
    let dir = project();
    let s = serve(dir.path());
    for era in ["legacy", "modern"] {
        let r = run(&in_era(
            &s,
            era,
            &["prompt", "codomyrmex.explore", "goal=find the tests"],
        ));
        assert_eq!(r.code, Some(0), "{era}: {}", r.stderr);
        assert!(
            r.stdout.contains("[user] Goal: find the tests."),
            "{}",
            r.stdout
        );
        assert_printed(&run(&in_era(&s, era, &["ping"])), era, 0, "ok\n");
        let r = json_of(&run(&in_era(
            &s,
            era,
            &[
                "complete",
                "--prompt",
                "codomyrmex.explore",
                "goal",
                "x",
                "--json",
            ],
        )));
        assert!(r["completion"]["values"].is_array(), "{r}");
        let r = run(&in_era(&s, era, &["templates"]));
        assert_eq!(r.code, Some(0), "{era}: {}", r.stderr);
    }
}

#[test]
fn env_and_cwd_reach_a_stdio_server_and_mcp_json_names_it() {
    let dir = project();
    // A relative root resolves against --cwd; the profile comes from --env.
    let r = json_of(&stdio(
        &format!("'{BIN}' serve --root ."),
        &[
            "--cwd",
            &dir.path().display().to_string(),
            "--env",
            "CODOMYRMEX_MCP_PROFILE=full",
            "tools",
            "--json",
        ],
    ));
    assert_eq!(r.as_array().unwrap().len(), 17, "the full profile: {r}");
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"here": {"command": BIN, "args": ["serve", "--root", dir.path()]}}}).to_string(),
    )
    .unwrap();
    let config = config.display().to_string();
    let named = |name: &str, rest: &[&str]| {
        let args = ["client", "--server", name, "--mcp-config", config.as_str()];
        run(&[&args[..], rest].concat())
    };
    let r = named("here", &["read", "codomyrmex://root/hello.txt"]);
    assert_printed(&r, "here", 0, "hello\nworld\n");
    let r = named("elsewhere", &["tools"]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("here"), "{}", r.stderr);
}

#[test]
fn a_server_that_never_answers_is_a_timeout() {
    let r = stdio("sleep 30", &["--timeout", "1", "tools"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    assert!(r.stderr.contains("no answer within 1 s"), "{}", r.stderr);
}

#[test]
fn an_unreachable_server_is_a_connection_failure() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let r = run(&["client", "--http", &url, "tools"]);
    assert_eq!(r.code, Some(4), "{}", r.stderr);
    assert!(r.stderr.contains("cannot connect"), "{}", r.stderr);
    assert!(!r.stderr.contains("-32099"), "{}", r.stderr);
    let r = stdio("/nonexistent/server", &["tools"]);
    assert_eq!(r.code, Some(4), "{}", r.stderr);
    let r = run(&["client", "tools"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
}

/// A 2025-only stdio server (Python): refuses `server/discover`, serves `initialize`.
const LEGACY_SERVER: &str = r#"
def answer(method, p, m):
    if method == "initialize":
        return initialized("old", {"tools": {}})
    if method == "tools/list":
        return {"result": {"tools": [{"name": "old.tool", "inputSchema": {"type": "object"}}]}}
    return NOT_FOUND
serve(answer)
"#;

#[test]
fn era_modern_against_a_legacy_server_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let s = python_server(dir.path(), "legacy.py", LEGACY_SERVER);
    let r = run(&in_era(&s, "modern", &["tools"]));
    assert_eq!(r.code, Some(6), "{}", r.stderr);
    assert!(r.stderr.contains("--era auto"), "{}", r.stderr);
    let r = stdio(&s, &["tools"]);
    assert_eq!(r.code, Some(0), "auto falls back: {}", r.stderr);
    assert!(r.stdout.contains("old.tool"), "{}", r.stdout);
}

#[test]
fn tasks_listen_and_subscribe_in_both_eras() {
    let dir = project();
    let s = serve(dir.path());
    let r = run(&in_era(&s, "legacy", &["tasks"]));
    assert_printed(&r, "legacy", 0, "(no tasks)\n");
    // The 2026-07-28 tasks extension has no list: say so, and what to do instead.
    for era in ["modern", "auto"] {
        let r = run(&in_era(&s, era, &["tasks"]));
        assert_printed(&r, era, 6, "");
        assert!(r.stderr.contains("no tasks/list"), "{era}: {}", r.stderr);
        assert!(r.stderr.contains("tasks ID"), "{era}: {}", r.stderr);
    }
    for era in ["legacy", "modern"] {
        // Listening ends at the timeout, which is no failure for it.
        let r = run(&in_era(&s, era, &["--timeout", "1", "listen"]));
        assert_eq!(r.code, Some(0), "{era}: {}", r.stderr);
        let r = run(&in_era(
            &s,
            era,
            &["--timeout", "1", "subscribe", "codomyrmex://root/hello.txt"],
        ));
        assert_eq!(r.code, Some(0), "{era}: {}", r.stderr);
    }
}

/// A 2025-11-25 server with one task, `t1`: a task-augmented `tools/call` makes it.
const TASK_SERVER: &str = r#"
def answer(method, p, m):
    task = {"taskId": "t1", "status": "working", "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttl": 60000}
    if method == "initialize":
        return initialized("tasks", {"tools": {}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}})
    if method == "tools/call" and "task" in p:
        task["ttl"] = p["task"].get("ttl", 60000)
        return {"result": {"task": task}}
    if method == "tasks/get":
        return {"result": task}
    if method == "tasks/result":
        return {"result": {"content": [{"type": "text", "text": "done as a task"}]}}
    if method == "tasks/cancel":
        task["status"] = "cancelled"
        return {"result": task}
    return NOT_FOUND
serve(answer)
"#;

#[test]
fn call_as_a_task_then_its_result_or_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let s = python_server(dir.path(), "tasks.py", TASK_SERVER);
    let with = |rest: &[&str]| run(&in_era(&s, "legacy", rest));
    let r = with(&["call", "job", "--task", "--ttl", "5"]);
    assert_printed(&r, "call --task", 0, "t1  working\n");
    let r = with(&["--json", "call", "job", "--task", "--ttl", "5"]);
    assert_eq!(json_of(&r)["ttl"], 5000, "{}", r.stdout);
    let r = with(&["tasks", "t1"]);
    assert_eq!(r.stdout, "t1  working\n", "{}", r.stderr);
    let r = with(&["tasks", "t1", "--result"]);
    assert_printed(&r, "tasks --result", 0, "done as a task\n");
    let r = with(&["tasks", "t1", "--cancel"]);
    assert_printed(&r, "tasks --cancel", 0, "cancelled t1\n");
    let r = with(&["tasks", "--result"]);
    assert_eq!(r.code, Some(2), "--result needs an id: {}", r.stderr);
}

/// A 2025-11-25 server whose one tool reports progress 1/2 and 2/2, then answers.
const PROGRESS_SERVER: &str = r#"
def answer(method, p, m):
    if method == "initialize":
        return initialized("progress", {"tools": {}})
    if method == "tools/call":
        token = p.get("_meta", {}).get("progressToken")
        for done in (1, 2):
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": done, "total": 2, "message": "step %d" % done}})
            time.sleep(0.2)
        return {"result": {"content": [{"type": "text", "text": "finished"}]}}
    return NOT_FOUND
serve(answer)
"#;

#[test]
fn progress_is_lines_off_a_terminal_a_bar_on_one_and_nothing_with_json() {
    let dir = tempfile::tempdir().unwrap();
    let s = python_server(dir.path(), "progress.py", PROGRESS_SERVER);
    let r = run(&in_era(&s, "legacy", &["call", "work"]));
    assert_printed(&r, "off a terminal", 0, "finished\n");
    assert!(r.stderr.contains("progress: 1/2 step 1"), "{}", r.stderr);
    assert!(r.stderr.contains("progress: 2/2 step 2"), "{}", r.stderr);
    let r = run(&in_era(&s, "legacy", &["--json", "call", "work"]));
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stderr.contains("progress"), "{}", r.stderr);
    // On a terminal (script(1) gives the command one): a bar, not lines.
    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped the terminal case: no script(1)");
        return;
    }
    let line = format!("{BIN} client --stdio \"{s}\" --era legacy call work");
    let mut c = Command::new("script");
    c.args(["-qec", &line, "/dev/null"]);
    let r = output(&mut c);
    assert_eq!(r.code, Some(0), "{} {}", r.stdout, r.stderr);
    assert!(r.stdout.contains("finished"), "{}", r.stdout);
    assert!(
        r.stdout.contains("50%") && r.stdout.contains("step 1"),
        "{:?}",
        r.stdout
    );
    assert!(!r.stdout.contains("progress: 1/2"), "{:?}", r.stdout);
}

/// A server of either era that announces a tools list change as soon as a client listens
/// (2025-11-25: after `notifications/initialized`; 2026-07-28: on the `subscriptions/listen`
/// stream, which it then keeps open).
const CHANGING_SERVER: &str = r#"
change = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}
def answer(method, p, m):
    if method == "notifications/initialized":
        send(change)
    elif method == "server/discover" and sys.argv[1] == "modern":
        return {"result": {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": "changing", "version": "1"}}}
    elif method == "subscriptions/listen":
        send(change)
    elif method == "initialize":
        return initialized("changing", {"tools": {"listChanged": True}})
    else:
        return NOT_FOUND
serve(answer)
"#;

#[test]
fn listen_prints_changes_as_they_come_in_both_eras() {
    use std::io::BufRead as _;
    let dir = tempfile::tempdir().unwrap();
    let server = python_server(dir.path(), "changing.py", CHANGING_SERVER);
    for era in ["legacy", "modern"] {
        let s = format!("{server} {era}");
        // A long --timeout: the line must come while the client is still listening.
        let mut child = command(&in_era(&s, era, &["--timeout", "60", "listen"]))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut first = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let still_listening = child.try_wait().unwrap().is_none();
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            first.starts_with("notifications/tools/list_changed"),
            "{era}: {first:?}"
        );
        assert!(still_listening, "{era}: the client had already exited");
    }
}

/// A 2025-11-25 server with three tools: `flaky` answers its calls in turn with a result, a
/// tool error and a JSON-RPC error; `never` never answers; `crash` makes the server exit.
const LOAD_SERVER: &str = r#"
calls = 0
def answer(method, p, m):
    global calls
    if method == "initialize":
        return initialized("load", {"tools": {}})
    if method == "tools/list":
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
        return {"result": {"tools": [{"name": t, "inputSchema": schema} for t in ("flaky", "never", "crash")]}}
    if method == "tools/call" and p.get("name") == "never":
        return None
    if method == "tools/call" and p.get("name") == "crash":
        sys.exit(1)
    if method == "tools/call":
        calls += 1
        if calls % 3 == 1:
            return {"result": {"content": [{"type": "text", "text": "ok %d" % p["arguments"]["n"]}]}}
        if calls % 3 == 2:
            return {"result": {"content": [{"type": "text", "text": "no luck"}], "isError": True}}
        return {"error": {"code": -32000, "message": "busy"}}
    return NOT_FOUND
serve(answer)
"#;

#[test]
fn load_counts_calls_latencies_and_errors_by_kind() {
    // Our own server: every call succeeds, and no more than --concurrency are in flight.
    let dir = project();
    let s = format!("{} --no-rate-limit", serve(dir.path()));
    let read = ["load", "file_system.read", "path=hello.txt"];
    let load_read = |rest: &[&str]| stdio(&s, &[&read[..], rest].concat());
    for era in ["legacy", "modern"] {
        let r = json_of(&run(&in_era(
            &s,
            era,
            &[
                &read[..],
                &["--calls", "30", "--concurrency", "4", "--json"],
            ]
            .concat(),
        )));
        assert_eq!(r["tool"], "file_system.read", "{era}: {r}");
        assert_eq!(
            (r["calls"].as_u64(), r["ok"].as_u64()),
            (Some(30), Some(30)),
            "{era}: {r}"
        );
        assert_eq!(r["failed"], 0, "{era}: {r}");
        assert_eq!(r["errorsByKind"], serde_json::json!({}), "{era}: {r}");
        assert_eq!(r["concurrency"], 4, "{era}: {r}");
        assert_eq!(r["maxInFlight"], 4, "{era}: {r}");
        let l = &r["latencyMs"];
        let at = |k: &str| l[k].as_f64().unwrap_or_else(|| panic!("{k}: {r}"));
        assert!(at("min") <= at("p50") && at("p50") <= at("p90"), "{r}");
        assert!(at("p90") <= at("p99") && at("p99") <= at("max"), "{r}");
        assert!(at("mean") <= at("max"), "{r}");
        assert!(r["callsPerSecond"].as_f64().unwrap() > 0.0, "{r}");
    }
    // Human output names the figures.
    let r = load_read(&["--calls", "5"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    for word in ["5 calls", "calls/s", "p50", "p90", "p99", "max", "ok 5"] {
        assert!(r.stdout.contains(word), "{word}: {}", r.stdout);
    }
    // --duration alone stops it; whatever ran, succeeded.
    let r = json_of(&load_read(&["--duration", "1", "--json"]));
    assert!(r["calls"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(r["ok"], r["calls"], "{r}");
    // --rate paces the starts; every call is still counted.
    let r = json_of(&load_read(&["--calls", "10", "--rate", "200", "--json"]));
    assert_eq!(
        (r["calls"].as_u64(), r["ok"].as_u64()),
        (Some(10), Some(10)),
        "{r}"
    );
    assert_eq!(r["rate"], 200.0, "{r}");
    // A rate whose next start falls after --duration starts one call, and does not panic.
    let r = json_of(&load_read(&[
        "--duration",
        "5",
        "--rate",
        "1e-300",
        "--json",
    ]));
    assert_eq!(
        (r["calls"].as_u64(), r["ok"].as_u64()),
        (Some(1), Some(1)),
        "{r}"
    );
    // A tool it does not have is a usage error, before any call.
    let r = stdio(&s, &["load", "no.such.tool", "--calls", "5"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);

    // Errors are counted by kind, and any failed call makes the status 1 (summary on stdout).
    let tmp = tempfile::tempdir().unwrap();
    let s = python_server(tmp.path(), "load.py", LOAD_SERVER);
    let j = failed_load(&stdio(
        &s,
        &[
            "load",
            "flaky",
            "n=7",
            "--calls",
            "9",
            "--concurrency",
            "3",
            "--json",
        ],
    ));
    assert_eq!(
        (j["calls"].as_u64(), j["ok"].as_u64(), j["failed"].as_u64()),
        (Some(9), Some(3), Some(6)),
        "{j}"
    );
    assert_eq!(
        j["errorsByKind"],
        serde_json::json!({"tool error": 3, "server error": 3}),
        "{j}"
    );
    let messages = j["errorMessages"].as_array().unwrap();
    assert!(
        messages
            .iter()
            .any(|m| m["kind"] == "tool error" && m["message"] == "no luck" && m["count"] == 3),
        "{j}"
    );
    assert!(
        messages.iter().any(|m| m["kind"] == "server error"
            && m["message"].as_str().unwrap().contains("busy")
            && m["count"] == 3),
        "{j}"
    );
    // --timeout bounds each call: a call with no answer is a timeout.
    let j = failed_load(&stdio(
        &s,
        &["--timeout", "1", "load", "never", "--calls", "2", "--json"],
    ));
    assert_eq!(j["errorsByKind"], serde_json::json!({"timeout": 2}), "{j}");
    // A connection that closes ends the run: nothing more could succeed.
    let j = failed_load(&stdio(
        &s,
        &[
            "load",
            "crash",
            "--calls",
            "1000",
            "--concurrency",
            "3",
            "--json",
        ],
    ));
    assert_eq!(j["calls"], 3, "{j}");
    assert_eq!(
        j["errorsByKind"],
        serde_json::json!({"connection closed": 3}),
        "{j}"
    );
    assert_eq!(j["stoppedEarly"], "the connection closed", "{j}");
}

/// Runs `argv` on a pseudo-terminal (its stdin, stdout and stderr), types each answer once
/// the text before it has appeared, and prints everything the terminal showed, then
/// `exit N`. Fails (status 3) when a prompt does not come within 60 s.
const ON_A_TERMINAL: &str = r#"
import json, os, pty, select, sys, time
argv, script = json.loads(sys.argv[1]), json.loads(sys.argv[2])
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
seen = b""
def read_until(want):
    global seen
    deadline = time.monotonic() + 60
    while want is None or want.encode() not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if select.select([fd], [], [], left)[0]:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                chunk = b""
            if not chunk:
                return want is None
            seen += chunk
    return True
for prompt, answer in script:
    if not read_until(prompt):
        sys.stdout.write(seen.decode(errors="replace") + "\nno prompt %r\n" % prompt)
        os.kill(pid, 9)
        sys.exit(3)
    os.write(fd, answer.encode() + b"\n")
read_until(None)
_, status = os.waitpid(pid, 0)
sys.stdout.write(seen.decode(errors="replace") + "\nexit %d\n" % os.waitstatus_to_exitcode(status))
"#;

#[test]
fn elicitation_is_asked_at_the_terminal_only_when_stdin_is_one() {
    let dir = project();
    let s = format!("{} --demo-tools", serve(dir.path()));
    let call = |era: &'static str| {
        in_era(
            &s,
            era,
            &["call", "demo.elicit", "message=Who are you?", "--json"],
        )
    };
    for era in ["legacy", "modern"] {
        // stdin not a terminal: no prompt, and no elicitation capability declared.
        let r = run(&call(era));
        assert!(!r.stderr.contains("the server asks"), "{era}: {}", r.stderr);
        let expected = if era == "legacy" { Some(1) } else { Some(3) };
        assert_eq!(r.code, expected, "{era}: {} {}", r.stdout, r.stderr);
        assert!(
            (r.stdout + &r.stderr).contains("capability"),
            "{era}: the refusal names the missing capability"
        );
        // stdin a terminal: the question is asked there and the typed answer reaches the tool.
        let script = serde_json::json!([
            ["answer? [a]ccept, [d]ecline, [c]ancel: ", "a"],
            ["answer: ", "Ada Lovelace"],
        ]);
        let argv = [&[BIN][..], &call(era)].concat();
        let mut cmd = Command::new("python3");
        cmd.args([
            "-c",
            ON_A_TERMINAL,
            &serde_json::to_string(&argv).unwrap(),
            &script.to_string(),
        ]);
        let r = output(without_our_variables(&mut cmd));
        assert_eq!(r.code, Some(0), "{era}: {}\n{}", r.stdout, r.stderr);
        assert!(
            r.stdout.contains("the server asks: Who are you?"),
            "{era}: {}",
            r.stdout
        );
        assert!(
            r.stdout.contains(r#""answer": "Ada Lovelace""#),
            "{era}: {}",
            r.stdout
        );
        assert!(
            r.stdout.contains(r#""action": "accept""#),
            "{era}: {}",
            r.stdout
        );
        assert!(r.stdout.ends_with("\nexit 0\n"), "{era}: {}", r.stdout);
    }
}

/// `client tools` against a server whose `tools/list` pages cycle (issue #26 finding 2): a
/// clear error naming the method and the cycle, exit status 6, at once (before the fix the
/// client followed 10,000 pages from its cache and said only "too many pages").
#[test]
fn a_list_whose_pages_cycle_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = python_server(dir.path(), "cycle.py", support::CYCLING_SERVER);
    let r = stdio(&s, &["tools"]);
    assert_eq!(r.code, Some(6), "{}", r.stderr);
    assert!(
        r.stderr.contains("tools/list") && r.stderr.contains("its pages cycle"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty(), "{}", r.stdout);
}
