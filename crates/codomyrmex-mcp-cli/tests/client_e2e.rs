//! End to end: `codomyrmex-mcp client --stdio "codomyrmex-mcp serve"` (and `--http`) against the
//! real binary, plus `config --print` and `tools`.

// Test helpers fail by panicking, outside `#[test]` functions too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;

use serde_json::{Value, json};
use support::{BIN, Ran, command, json_of, output, run, serve_http};

/// A project directory for the server's root.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hello.txt"), "hello\nworld\n").unwrap();
    std::fs::write(dir.path().join("data.json"), r#"{"items": [1, 2, 3]}"#).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "pub fn needle() {}\n").unwrap();
    dir
}

/// The `--stdio` command that starts the server on `root` with `extra` flags.
fn serve_cmd(root: &Path, extra: &str) -> String {
    format!("'{BIN}' serve --root '{}' {extra}", root.display())
}

/// `client --stdio SERVE ARGS...`.
fn client(root: &Path, serve_extra: &str, args: &[&str]) -> Ran {
    let serve = serve_cmd(root, serve_extra);
    let mut all = vec!["client", "--stdio", serve.as_str()];
    all.extend_from_slice(args);
    run(&all)
}

/// `client --stdio SERVE call TOOL --args ARGS`, the human output.
fn call(root: &Path, serve_extra: &str, tool: &str, args: &str) -> Ran {
    client(root, serve_extra, &["call", tool, "--args", args])
}

/// [`call`] with `--json`: the result, the run having succeeded.
fn call_json(root: &Path, serve_extra: &str, tool: &str, args: &str) -> Value {
    json_of(&client(
        root,
        serve_extra,
        &["call", tool, "--args", args, "--json"],
    ))
}

#[test]
fn client_over_stdio_lists_tools_both_ways() {
    let dir = project();
    let human = client(dir.path(), "", &["tools"]);
    assert_eq!(human.code, Some(0), "{}", human.stderr);
    assert!(
        human.stdout.contains("file_system.read — Read a file\n"),
        "{}",
        human.stdout
    );
    assert!(
        human
            .stdout
            .contains("      path (string, required) — The file, relative to the root.\n"),
        "{}",
        human.stdout
    );
    assert!(
        !human.stdout.contains("shell.run"),
        "readonly is the default"
    );

    let tools = json_of(&client(dir.path(), "", &["--json", "tools"]));
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for expected in [
        "codomyrmex.get_tool_schema",
        "codomyrmex.list_registered_tools",
        "file_system.checksum",
        "file_system.list_directory",
        "file_system.read",
        "file_system.search",
        "file_system.stat",
        "git.diff",
        "git.log",
        "git.show",
        "git.status",
        "json.query",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    assert_eq!(names.len(), 12, "{names:?}");

    let full = json_of(&client(dir.path(), "--profile full", &["tools", "--json"]));
    assert_eq!(full.as_array().unwrap().len(), 17);
}

#[test]
fn client_over_stdio_calls_tools() {
    let dir = project();
    let read = call_json(
        dir.path(),
        "",
        "file_system.read",
        r#"{"path": "hello.txt", "start_line": 2}"#,
    );
    assert_eq!(read["structuredContent"]["content"], "world\n");
    assert_ne!(read["isError"], true);

    // Human output: the text the model reads, not JSON-escaped.
    let human = call(
        dir.path(),
        "",
        "file_system.read",
        r#"{"path": "hello.txt"}"#,
    );
    assert_eq!(human.code, Some(0), "{}", human.stderr);
    assert_eq!(
        human.stdout,
        std::fs::read_to_string(dir.path().join("hello.txt")).unwrap()
    );
    let human = call(
        dir.path(),
        "",
        "file_system.search",
        r#"{"pattern": "needle"}"#,
    );
    assert_eq!(human.code, Some(0), "{}", human.stderr);
    assert!(human.stdout.starts_with("src/lib.rs:"), "{}", human.stdout);
    // A structured result whose text is only its JSON: pretty-printed.
    let human = call(
        dir.path(),
        "",
        "file_system.stat",
        r#"{"path": "hello.txt"}"#,
    );
    assert_eq!(human.code, Some(0), "{}", human.stderr);
    assert!(
        human.stdout.contains("\n  \"kind\": \"file\",\n"),
        "{}",
        human.stdout
    );

    // json.query runs in a worker process.
    let q = call_json(
        dir.path(),
        "",
        "json.query",
        r#"{"filter": "[.items[] * 2]", "path": "data.json"}"#,
    );
    assert_eq!(q["structuredContent"]["results"], json!([[2, 4, 6]]));

    // The modern era works too.
    let m = json_of(&client(
        dir.path(),
        "",
        &[
            "--era",
            "modern",
            "call",
            "file_system.checksum",
            "--args",
            r#"{"path": "hello.txt"}"#,
            "--json",
        ],
    ));
    assert_eq!(m["structuredContent"]["size"], 12);

    // A tool error: exit status 1, the error on stderr.
    let denied = call(
        dir.path(),
        "",
        "file_system.read",
        r#"{"path": "../etc/passwd"}"#,
    );
    assert_eq!(denied.code, Some(1));
    assert!(denied.stderr.contains("ACCESS_DENIED"), "{}", denied.stderr);
    assert!(denied.stdout.is_empty(), "{}", denied.stdout);

    let bad = call(dir.path(), "", "file_system.read", "[1]");
    assert_eq!(bad.code, Some(2), "bad arguments are a usage error");
    assert!(bad.stderr.contains("JSON object"), "{}", bad.stderr);
}

#[test]
fn a_crashing_filter_does_not_take_the_server_down() {
    let dir = project();
    // Unbounded recursion overflows the evaluator's stack: the worker dies, the server answers.
    let r = call(
        dir.path(),
        "",
        "json.query",
        r#"{"filter": "def f: 1 + f; f"}"#,
    );
    assert_eq!(r.code, Some(1), "{} {}", r.stdout, r.stderr);
    assert!(r.stderr.contains("JQ_ERROR"), "{}", r.stderr);
}

#[test]
fn sandbox_escapes_are_refused_end_to_end() {
    let dir = project();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    let abs = outside.path().join("secret.txt");
    let long = "a/".repeat(3000);
    let mut cases: Vec<(String, &str)> = vec![
        ("../secret.txt".into(), "ACCESS_DENIED"),
        (abs.display().to_string(), "ACCESS_DENIED"),
        (long, "INVALID_PATH"),
        ("x".repeat(300), "INVALID_PATH"),
    ];
    if cfg!(unix) {
        cases.push(("out/secret.txt".into(), "ACCESS_DENIED"));
    }
    for (path, kind) in cases {
        let args = json!({"path": path}).to_string();
        let r = call(dir.path(), "--profile full", "file_system.read", &args);
        assert_eq!(r.code, Some(1), "{path}: {}", r.stdout);
        assert!(r.stderr.contains(kind), "{path}: {}", r.stderr);
        let args = json!({"path": path, "content": "pwned"}).to_string();
        let r = call(dir.path(), "--profile full", "file_system.write", &args);
        assert!(r.stderr.contains(kind), "{path}: {}", r.stderr);
    }
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret.txt")).unwrap(),
        "secret"
    );
}

#[test]
fn resources_read_and_prompts() {
    let dir = project();
    let r = client(dir.path(), "", &["resources"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("codomyrmex://root/{+path}"),
        "{}",
        r.stdout
    );
    let r = client(dir.path(), "", &["read", "codomyrmex://root/hello.txt"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.stdout, "hello\nworld\n");
    let r = client(dir.path(), "", &["read", "codomyrmex://root/../etc/passwd"]);
    assert_eq!(r.code, Some(3), "a JSON-RPC error: {}", r.stderr);
    let r = json_of(&client(dir.path(), "", &["prompts", "--json"]));
    assert_eq!(r[0]["name"], "codomyrmex.explore");
    let r = client(dir.path(), "", &["prompts"]);
    assert!(
        r.stdout.starts_with("codomyrmex.explore — "),
        "{}",
        r.stdout
    );
}

#[test]
fn full_profile_writes_and_runs_commands() {
    let dir = project();
    let w = call_json(
        dir.path(),
        "--profile full",
        "file_system.write",
        r#"{"path": "new/file.txt", "content": "made", "create_parents": true}"#,
    );
    assert_eq!(w["structuredContent"]["created"], true);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new/file.txt")).unwrap(),
        "made"
    );
    let readonly = call(
        dir.path(),
        "",
        "file_system.write",
        r#"{"path": "x", "content": "y"}"#,
    );
    assert_eq!(
        readonly.code,
        Some(3),
        "an unknown tool is a JSON-RPC error"
    );
    assert!(!dir.path().join("x").exists());
    #[cfg(unix)]
    {
        // shell.run does not pass the server's secrets on.
        let serve = serve_cmd(dir.path(), "--profile full");
        let mut cmd = command(&[
            "client",
            "--stdio",
            &serve,
            "call",
            "shell.run",
            "--args",
            r#"{"argv": ["env"]}"#,
            "--json",
        ]);
        cmd.env("CODOMYRMEX_MCP_AUTH_TOKEN", "hunter2-secret");
        let r = json_of(&output(&mut cmd));
        let stdout = r["structuredContent"]["stdout"].as_str().unwrap();
        assert!(stdout.contains("PATH="), "{stdout}");
        assert!(!stdout.contains("hunter2-secret"), "{stdout}");
    }
}

/// SECURITY.md, "`shell.run` is not a sandbox": its program runs as the server's user and
/// reads what the server can, the environment the server was started with included
/// (`/proc/$PPID/environ`, which clearing variables later would not change). Removing
/// `CODOMYRMEX_MCP_*` from the program's own environment keeps them from being passed on by
/// accident, not from being read. This pins the documented behaviour.
#[cfg(target_os = "linux")]
#[test]
fn a_shell_run_program_can_read_the_servers_environment() {
    let dir = project();
    let serve = serve_cmd(dir.path(), "--profile full");
    let mut cmd = command(&[
        "client",
        "--stdio",
        &serve,
        "call",
        "shell.run",
        "--args",
        r#"{"argv": ["sh", "-c", "tr '\\000' '\\n' < /proc/$PPID/environ"]}"#,
        "--json",
    ]);
    cmd.env("CODOMYRMEX_MCP_AUTH_TOKEN", "hunter2-secret");
    let r = json_of(&output(&mut cmd));
    let stdout = r["structuredContent"]["stdout"].as_str().unwrap();
    assert!(
        stdout
            .lines()
            .any(|l| l == "CODOMYRMEX_MCP_AUTH_TOKEN=hunter2-secret"),
        "{stdout}"
    );
}

#[test]
fn client_over_http_in_both_eras() {
    let dir = project();
    let server = serve_http(dir.path(), &[], &[]);
    let url = server.url.clone();
    for era in ["legacy", "modern"] {
        let tools = json_of(&run(&[
            "client", "--http", &url, "--era", era, "tools", "--json",
        ]));
        assert_eq!(tools.as_array().unwrap().len(), 12, "{era}");
        let r = json_of(&run(&[
            "client",
            "--http",
            &url,
            "--era",
            era,
            "call",
            "file_system.read",
            "--args",
            r#"{"path": "hello.txt"}"#,
            "--json",
        ]));
        assert_eq!(r["structuredContent"]["content"], "hello\nworld\n", "{era}");
        let r = run(&[
            "client",
            "--http",
            &url,
            "--era",
            era,
            "read",
            "codomyrmex://root/hello.txt",
        ]);
        assert_eq!(r.stdout, "hello\nworld\n", "{era}: {}", r.stderr);
        let r = run(&[
            "client",
            "--http",
            &url,
            "--era",
            era,
            "call",
            "file_system.stat",
            "--args",
            r#"{"path": "/etc"}"#,
        ]);
        assert_eq!(r.code, Some(1), "{era}");
        assert!(r.stderr.contains("ACCESS_DENIED"), "{era}: {}", r.stderr);
    }
}

#[test]
fn full_profile_over_http_requires_authentication() {
    let dir = project();
    let root = dir.path().display().to_string();
    let r = run(&[
        "serve",
        "--root",
        &root,
        "--http",
        "127.0.0.1:0",
        "--profile",
        "full",
    ]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains("without authentication"), "{}", r.stderr);

    let server = serve_http(
        dir.path(),
        &["--profile", "full"],
        &[("CODOMYRMEX_MCP_AUTH_TOKEN", "s3cret-token")],
    );
    let url = server.url.clone();
    let r = run(&["client", "--http", &url, "tools"]);
    assert_eq!(
        r.code,
        Some(4),
        "an HTTP refusal is a connection failure: {}",
        r.stdout
    );
    assert!(r.stderr.contains("Unauthorized"), "{}", r.stderr);
    let r = json_of(&run(&[
        "client",
        "--http",
        &url,
        "--token",
        "s3cret-token",
        "tools",
        "--json",
    ]));
    assert_eq!(r.as_array().unwrap().len(), 17);
    let mut cmd = command(&[
        "client",
        "--http",
        &url,
        "call",
        "file_system.write",
        "--args",
        r#"{"path": "via-http.txt", "content": "ok"}"#,
    ]);
    cmd.env("CODOMYRMEX_MCP_CLIENT_TOKEN", "s3cret-token");
    let r = output(&mut cmd);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("via-http.txt")).unwrap(),
        "ok"
    );
}

#[test]
fn config_print_shows_the_precedence_and_redacts_secrets() {
    let dir = project();
    let file = dir.path().join("cmx.toml");
    std::fs::write(&file, "root = \"src\"\nprofile = \"full\"\ntimeout_secs = 9\n[http]\nauth_token = \"file-secret\"\n").unwrap();
    let file_s = file.display().to_string();

    // The file alone.
    let v = json_of(&run(&["config", "--print", "--json", "--config", &file_s]));
    assert_eq!(v["profile"], "full");
    assert_eq!(v["timeout_secs"], 9);
    assert_eq!(
        Path::new(v["root"].as_str().unwrap()),
        dir.path().join("src")
    );
    assert_eq!(v["http"]["auth_token"], "<redacted>");

    // The environment wins over the file, flags over both.
    let mut cmd = command(&["config", "--print", "--json", "--timeout", "3"]);
    cmd.env("CODOMYRMEX_MCP_CONFIG", &file_s)
        .env("CODOMYRMEX_MCP_PROFILE", "readonly")
        .env("CODOMYRMEX_MCP_TIMEOUT", "5")
        .env("CODOMYRMEX_MCP_AUTH_TOKEN", "env-secret");
    let r = output(&mut cmd);
    let v = json_of(&r);
    assert_eq!(v["profile"], "readonly");
    assert_eq!(v["timeout_secs"], 3);
    assert!(!r.stdout.contains("secret\""), "{}", r.stdout);

    // TOML by default; no secret in any form.
    let mut cmd = command(&["config", "--print", "--config", &file_s]);
    cmd.env("CODOMYRMEX_MCP_AUTH_TOKEN", "env-secret");
    let r = output(&mut cmd);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("profile = \"full\""), "{}", r.stdout);
    assert!(
        r.stdout.contains("auth_token = \"<redacted>\""),
        "{}",
        r.stdout
    );
    assert!(
        !r.stdout.contains("env-secret") && !r.stdout.contains("file-secret"),
        "{}",
        r.stdout
    );

    let r = run(&["config", "--example"]);
    assert!(r.stdout.contains("[shell]"), "{}", r.stdout);
    std::fs::write(&file, "profile = \"root\"\n").unwrap();
    let r = run(&["config", "--print", "--config", &file_s]);
    assert_eq!(r.code, Some(1));
    assert!(
        r.stderr.contains("invalid configuration file"),
        "{}",
        r.stderr
    );
}

#[test]
fn demo_tools_are_listed_only_when_asked_for() {
    let dir = project();
    let root = dir.path().display().to_string();
    let names = |v: Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let plain = names(json_of(&run(&["tools", "--root", &root])));
    assert!(!plain.iter().any(|n| n.starts_with("demo.")), "{plain:?}");
    let mut with_var = command(&["tools", "--root", &root]);
    with_var.env("CODOMYRMEX_MCP_DEMO_TOOLS", "1");
    let demo = names(json_of(&output(&mut with_var)));
    assert!(demo.contains(&"demo.elicit".to_owned()), "{demo:?}");
    let flag = names(json_of(&run(&["tools", "--root", &root, "--demo-tools"])));
    assert!(flag.contains(&"demo.elicit".to_owned()), "{flag:?}");
}

#[test]
fn tools_lists_builtins_with_schemas() {
    let dir = project();
    let root = dir.path().display().to_string();
    let v = json_of(&run(&["tools", "--root", &root]));
    let read = v
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "file_system.read")
        .unwrap();
    assert_eq!(read["inputSchema"]["type"], "object");
    assert_eq!(read["outputSchema"]["type"], "object");
    let r = run(&["tools", "--root", &root, "--profile", "full", "--table"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("shell.run — Run a command"),
        "{}",
        r.stdout
    );
}
