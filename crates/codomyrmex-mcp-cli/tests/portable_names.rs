//! `name_style = "portable"` (issue #31 item 2) against the real binary: the gateway's
//! `--check` shows the mapping and reports the names that would merge, the gateway serves and
//! routes the portable names, and `serve --name-style portable` names its own tools so.
//! Every name a client sees matches `^[a-zA-Z0-9_-]{1,64}$`.

// Test helpers fail by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::{ClientHandlers, ClientOptions, EraPreference, StdioCommand};
use serde_json::{Value, json};
use support::{BIN, HANG_GUARD, Ran, command, output};

fn portable(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn write_config(dir: &std::path::Path, root: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            r#"
name_style = "portable"
{extra}

[[upstream]]
name = "files"
command = "{BIN}"
args = ["serve", "--root", "{root}"]
exclude = ["shell.*"]
"#,
            root = root.to_str().unwrap()
        ),
    )
    .unwrap();
    config
}

#[test]
fn check_shows_the_mapping_and_reports_names_that_would_merge() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // `file_system.stat` renamed onto the portable form of `file_system.read`.
    let config = dir.path().join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            r#"
name_style = "portable"

[[upstream]]
name = "files"
command = "{BIN}"
args = ["serve", "--root", "{root}"]
rename = {{ "file_system.stat" = "file_system__read" }}
"#,
            root = root.path().to_str().unwrap()
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let Ran { code, stdout, .. } =
        output(&mut command(&["gateway", "--check", "--json", "-c", cfg]));
    let out: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    // A problem was reported: the check fails.
    assert_eq!(code, Some(1), "{stdout}");
    assert_eq!(out["nameStyle"], "portable");
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"files__file_system__read"), "{tools:?}");
    assert!(tools.iter().all(|t| portable(t)), "{tools:?}");
    // Exactly one of the two holds the name: the other is reported, not merged.
    let mapped = out["names"]["tools"].as_array().unwrap();
    let read: Vec<&Value> = mapped
        .iter()
        .filter(|m| m["name"] == "files__file_system__read")
        .collect();
    assert_eq!(read.len(), 1, "{mapped:?}");
    assert_eq!(read[0]["upstream"], "files");
    let problems = out["problems"].to_string();
    assert!(
        problems.contains("file_system__read") && problems.contains("not merged"),
        "{problems}"
    );
    let prompts: Vec<&str> = out["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(prompts, ["files__codomyrmex__explore"]);

    // The text form prints each portable name with the dotted name it stands for.
    let Ran { stdout, .. } = output(&mut command(&["gateway", "--check", "-c", cfg]));
    assert!(
        stdout.contains("names: portable (separator \"__\")"),
        "{stdout}"
    );
    assert!(
        stdout.contains("files__file_system__list_directory  = files.file_system.list_directory"),
        "{stdout}"
    );
    assert!(stdout.contains("left out: files:"), "{stdout}");
}

#[test]
fn the_separator_is_configurable_and_checked() {
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), root.path(), "name_separator = \"-\"");
    let cfg = config.to_str().unwrap();
    let Ran { code, stdout, .. } =
        output(&mut command(&["gateway", "--check", "--json", "-c", cfg]));
    assert_eq!(code, Some(0), "{stdout}");
    let out: Value = serde_json::from_str(&stdout).unwrap();
    let tools = out["tools"].to_string();
    assert!(tools.contains("\"files-file_system-read\""), "{tools}");

    let config = write_config(dir.path(), root.path(), "name_separator = \".\"");
    let Ran { code, stderr, .. } = output(&mut command(&[
        "gateway",
        "--check",
        "-c",
        config.to_str().unwrap(),
    ]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("name_separator"), "{stderr}");
}

async fn client_of(args: &[&str]) -> McpClient {
    let mut c = StdioCommand::new(BIN);
    c.args = args.iter().map(|a| (*a).to_owned()).collect();
    let options = ClientOptions {
        handlers: ClientHandlers::new(),
        ..ClientOptions::default()
    };
    let client = McpClient::spawn(&c, options).unwrap();
    tokio::time::timeout(
        HANG_GUARD,
        client.negotiate(EraPreference::Auto, std::time::Duration::from_secs(10)),
    )
    .await
    .unwrap()
    .unwrap();
    client
}

async fn names_and_read(client: &McpClient, read: &str) -> Vec<String> {
    let tools = tokio::time::timeout(HANG_GUARD, client.list_tools())
        .await
        .unwrap()
        .unwrap();
    let names: Vec<String> = tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.iter().all(|n| portable(n)), "{names:?}");
    let answer = tokio::time::timeout(HANG_GUARD, client.call_tool(read, json!({"path": "a.txt"})))
        .await
        .unwrap()
        .unwrap();
    assert_ne!(answer["isError"], Value::Bool(true), "{answer}");
    assert!(answer.to_string().contains("portable hello"), "{answer}");
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_and_routes_portable_names() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "portable hello").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), root.path(), "");
    let client = client_of(&["gateway", "--config", config.to_str().unwrap()]).await;
    let names = names_and_read(&client, "files__file_system__read").await;
    assert!(names.contains(&"files__git__log".to_owned()), "{names:?}");
    let prompts = tokio::time::timeout(HANG_GUARD, client.list_prompts())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(prompts[0]["name"], "files__codomyrmex__explore");
    // URIs keep their schemes.
    let resources = tokio::time::timeout(HANG_GUARD, client.list_resources())
        .await
        .unwrap()
        .unwrap();
    assert!(
        resources.iter().any(|r| r["uri"]
            .as_str()
            .unwrap()
            .starts_with("files+codomyrmex://")),
        "{resources:?}"
    );
    client.close(std::time::Duration::from_secs(2)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_names_its_own_tools_portably() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "portable hello").unwrap();
    let r = root.path().to_str().unwrap();
    let client = client_of(&["serve", "--root", r, "--name-style", "portable"]).await;
    let names = names_and_read(&client, "file_system__read").await;
    assert!(
        names.contains(&"codomyrmex__list_registered_tools".to_owned()),
        "{names:?}"
    );
    // The tool that lists the tools reads the same registry: portable names too.
    let listed = client
        .call_tool("codomyrmex__list_registered_tools", json!({}))
        .await
        .unwrap();
    assert!(listed.to_string().contains("git__status"), "{listed}");
    client.close(std::time::Duration::from_secs(2)).await;
    // The separator can be given on the command line as well.
    let client = client_of(&[
        "serve",
        "--root",
        r,
        "--name-style",
        "portable",
        "--name-separator",
        "_-_",
    ])
    .await;
    names_and_read(&client, "file_system_-_read").await;
    client.close(std::time::Duration::from_secs(2)).await;
}
