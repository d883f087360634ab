//! `gateway --config FILE` serving over stdio, driven by the library's client in both eras:
//! this binary's own server is mounted as a stdio upstream under the namespace `files`, and
//! its tools and prompt are reached through the gateway under their local names.

// Test helpers fail by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::{ClientHandlers, ClientOptions, EraPreference};
use serde_json::{Value, json};

use support::BIN;
const GUARD: Duration = Duration::from_secs(60);

async fn gateway(config: &std::path::Path, era: EraPreference) -> McpClient {
    support::gateway_stdio(config, era, ClientHandlers::new()).await
}

fn write_config(dir: &std::path::Path, root: &std::path::Path) -> std::path::PathBuf {
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[upstream]]
name = "files"
command = "{BIN}"
args = ["serve", "--root", "{root}"]
include = ["file_system.*", "codomyrmex.explore"]
rename = {{ "file_system.read" = "cat" }}

[[upstream]]
name = "gone"
command = "{root}/no-such-program"
"#,
            root = root.to_str().unwrap()
        ),
    )
    .unwrap();
    config
}

async fn check_gateway(era: EraPreference) {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "hello through the gateway").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), root.path());
    let client = gateway(&config, era).await;

    let tools = tokio::time::timeout(GUARD, client.list_tools())
        .await
        .unwrap()
        .unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"files.cat"), "{names:?}");
    assert!(
        names.contains(&"files.file_system.list_directory"),
        "{names:?}"
    );
    assert!(!names.iter().any(|n| n.starts_with("gone.")), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("git.")), "{names:?}");
    let cat = tools.iter().find(|t| t["name"] == "files.cat").unwrap();
    assert_eq!(cat["inputSchema"]["type"], "object");

    // A call goes to the upstream under its own name, and its content comes back.
    let read = tokio::time::timeout(
        GUARD,
        client.call_tool("files.cat", json!({"path": "a.txt"})),
    )
    .await
    .unwrap()
    .unwrap();
    assert_ne!(read["isError"], Value::Bool(true), "{read}");
    assert!(
        read.to_string().contains("hello through the gateway"),
        "{read}"
    );
    // The upstream's failure is the gateway's failure, with its message.
    let missing = tokio::time::timeout(
        GUARD,
        client.call_tool("files.cat", json!({"path": "missing.txt"})),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(missing["isError"], Value::Bool(true), "{missing}");
    assert!(
        missing.to_string().contains("UPSTREAM_TOOL_ERROR"),
        "{missing}"
    );
    // Arguments are checked against the upstream's schema before anything is forwarded.
    let bad = tokio::time::timeout(GUARD, client.call_tool("files.cat", json!({"path": 7})))
        .await
        .unwrap();
    match bad {
        Ok(r) => assert_eq!(r["isError"], Value::Bool(true), "{r}"),
        Err(e) => assert!(e.to_string().contains("path"), "{e}"),
    }

    // Resources are read through under their local URIs, the contents renamed back.
    let resources = tokio::time::timeout(GUARD, client.list_resources())
        .await
        .unwrap()
        .unwrap();
    let uris: Vec<&str> = resources
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"files+codomyrmex://root/a.txt"), "{uris:?}");
    let contents =
        tokio::time::timeout(GUARD, client.read_resource("files+codomyrmex://root/a.txt"))
            .await
            .unwrap()
            .unwrap();
    assert_eq!(
        contents["contents"][0]["uri"], "files+codomyrmex://root/a.txt",
        "{contents}"
    );
    assert_eq!(
        contents["contents"][0]["text"], "hello through the gateway",
        "{contents}"
    );
    // A template of the upstream reaches files no listing named.
    std::fs::write(root.path().join("later.txt"), "written after the start").unwrap();
    let later = tokio::time::timeout(
        GUARD,
        client.read_resource("files+codomyrmex://root/later.txt"),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        later["contents"][0]["text"], "written after the start",
        "{later}"
    );

    // The prompt is mounted and forwarded too.
    let prompt = tokio::time::timeout(
        GUARD,
        client.get_prompt(
            "files.codomyrmex.explore",
            json!({"goal": "find the tests"}),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(prompt.to_string().contains("find the tests"), "{prompt}");
    client.close(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn the_gateway_serves_mounted_tools_and_prompts_to_a_2025_client() {
    check_gateway(EraPreference::Legacy).await;
}

#[tokio::test]
async fn the_gateway_serves_mounted_tools_and_prompts_to_a_2026_client() {
    check_gateway(EraPreference::Modern).await;
}

#[tokio::test]
async fn the_gateway_serves_streamable_http_with_serves_policies() {
    use codomyrmex_mcp::client::http::HttpTarget;

    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "over http").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), root.path());
    let config = config.to_str().unwrap();
    let server = support::http_server(
        &["gateway", "--config", config, "--http", "127.0.0.1:0"],
        &[("CODOMYRMEX_MCP_AUTH_TOKEN", "gw-secret")],
    );
    let url = server.url.clone();
    let connect = |token: Option<&str>| {
        let mut t = HttpTarget::new(url.clone());
        t.token = token.map(str::to_owned);
        McpClient::connect_http(t, ClientOptions::default()).unwrap()
    };
    // Without the token: refused, as `serve` refuses.
    let anonymous = connect(None);
    let refused =
        tokio::time::timeout(GUARD, anonymous.negotiate(EraPreference::Auto, GUARD)).await;
    assert!(matches!(refused, Ok(Err(_))), "{refused:?}");
    let client = connect(Some("gw-secret"));
    tokio::time::timeout(GUARD, client.negotiate(EraPreference::Auto, GUARD))
        .await
        .unwrap()
        .unwrap();
    let read = tokio::time::timeout(
        GUARD,
        client.call_tool("files.cat", json!({"path": "a.txt"})),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(read.to_string().contains("over http"), "{read}");
    client.close(Duration::from_secs(5)).await;
    drop(server);
}

/// A stdio upstream that dies leaves the list (clients hear `list_changed`) and is started
/// again by its supervisor; its tools come back and calls work again.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_killed_child_is_restarted_and_its_tools_come_back() {
    use codomyrmex_mcp::Era;
    use std::process::Stdio;

    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "still here").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[[upstream]]\nname = \"files\"\ncommand = \"{BIN}\"\nargs = [\"serve\", \"--root\", \"{}\"]\nhealth_check_secs = 1\n",
            root.path().to_str().unwrap()
        ),
    )
    .unwrap();
    let mut gw = tokio::process::Command::new(BIN)
        .args(["gateway", "--config", config.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = gw.id().unwrap();
    let client = McpClient::connect(
        gw.stdout.take().unwrap(),
        gw.stdin.take().unwrap(),
        Era::Legacy,
    );
    tokio::time::timeout(GUARD, client.initialize())
        .await
        .unwrap()
        .unwrap();
    let has_cat = |tools: &[Value]| {
        tools
            .iter()
            .any(|t| t["name"] == "files.cat" || t["name"] == "files.file_system.read")
    };
    assert!(has_cat(&client.list_tools().await.unwrap()));
    let first = support::children_of(pid, "serve");
    assert_eq!(first.len(), 1, "one upstream child: {first:?}");
    std::process::Command::new("kill")
        .args(["-9", &first[0].to_string()])
        .status()
        .unwrap();
    // The tools leave the list: a list_changed notification says so.
    let heard = tokio::time::timeout(GUARD, async {
        while let Some(n) = client.next_notification().await {
            if n["method"] == "notifications/tools/list_changed" {
                return true;
            }
        }
        false
    })
    .await
    .expect("list_changed within the guard");
    assert!(heard, "the connection ended before list_changed");
    // A new child is started, and its tools and calls are back.
    let deadline = std::time::Instant::now() + GUARD;
    loop {
        let tools = client.list_tools().await.unwrap();
        let again = support::children_of(pid, "serve");
        if has_cat(&tools) && again.len() == 1 && again != first {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not back: {tools:?} {again:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let read = client
        .call_tool("files.file_system.read", json!({"path": "a.txt"}))
        .await
        .unwrap();
    assert!(read.to_string().contains("still here"), "{read}");
}

/// The gateway answers its first messages before every upstream is connected: an upstream
/// that never finishes its handshake (a child that reads and never answers, with a long
/// timeout) holds up neither the client's handshake nor the tools of an upstream that is up.
#[tokio::test]
async fn an_upstream_that_never_answers_holds_up_neither_the_handshake_nor_the_others() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[upstream]]
name = "mute"
command = "sleep"
args = ["600"]
timeout_secs = 600

[[upstream]]
name = "files"
command = "{BIN}"
args = ["serve", "--root", "{root}"]
"#,
            root = root.path().to_str().unwrap()
        ),
    )
    .unwrap();
    for era in [EraPreference::Legacy, EraPreference::Modern] {
        // `gateway` fails (no hang) when the handshake is not answered within the guard.
        let client = gateway(&config, era).await;
        let tools = tokio::time::timeout(GUARD, client.list_tools())
            .await
            .expect("no hang")
            .unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert!(
            names.contains(&"files.file_system.read"),
            "{era:?}: {names:?}"
        );
        assert!(
            !names.iter().any(|n| n.starts_with("mute.")),
            "{era:?}: {names:?}"
        );
        client.close(Duration::from_secs(5)).await;
    }
}

/// The gateway starts beside an upstream whose `tools/list` pages cycle (issue #26 finding
/// 2): that upstream is left out (its error logged), the other one is served.
#[tokio::test]
async fn an_upstream_whose_pages_cycle_is_left_out_and_the_others_served() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let script = support::python_server(dir.path(), "cycle.py", support::CYCLING_SERVER);
    let script = script.trim_start_matches("python3 ").trim_matches('\'');
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[[upstream]]
name = "cycle"
command = "python3"
args = ["{script}"]

[[upstream]]
name = "files"
command = "{BIN}"
args = ["serve", "--root", "{root}"]
"#,
            root = root.path().to_str().unwrap()
        ),
    )
    .unwrap();
    let client = gateway(&config, EraPreference::Legacy).await;
    let tools = tokio::time::timeout(GUARD, client.list_tools())
        .await
        .expect("no hang")
        .unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"files.file_system.read"), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("cycle.")), "{names:?}");
    client.close(Duration::from_secs(5)).await;
}
