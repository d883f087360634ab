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
