//! The gateway's live reload (issue #31 item 3), on the real binary (`gateway --http`): its
//! configuration file is changed while a 2025-11-25 and a 2026-07-28 client are connected and
//! slow calls are in flight. An upstream is added, one removed (a stdio child, which must
//! end), one changed and one left alone: the slow calls complete, both clients hear
//! `list_changed` (the 2026-07-28 one on its `subscriptions/listen` stream), the new tools
//! are callable. Then a policy change takes effect, an invalid file is refused with its line
//! while the old configuration keeps serving, and SIGHUP reloads an unchanged file. `/health`
//! shows each generation.

// Test helpers fail by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(target_os = "linux")]

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::http::HttpTarget;
use codomyrmex_mcp::client::{CallOptions, ClientOptions, EraPreference};
use codomyrmex_mcp::engine::Engine;
use codomyrmex_mcp::transport::http::{HttpConfig, HttpServer};
use codomyrmex_mcp::{ContentBlock, McpServerConfig, McpToolRegistry, ToolContext, ToolOutput};
use serde_json::{Map, Value, json};
use support::BIN;
use tokio::sync::{Semaphore, mpsc};

const GUARD: Duration = Duration::from_secs(60);

fn text(t: &str) -> ToolOutput {
    ToolOutput::content(vec![ContentBlock::text(t)])
}

/// An upstream in this process over Streamable HTTP: `hold` says it started and waits for a
/// release; `quick` and `fresh` answer at once.
struct Upstream {
    url: String,
    started: mpsc::UnboundedReceiver<()>,
    release: Arc<Semaphore>,
}

async fn upstream() -> Upstream {
    let (tx, started) = mpsc::unbounded_channel();
    let release = Arc::new(Semaphore::new(0));
    let tools = McpToolRegistry::new();
    let schema = json!({"type": "object", "properties": {}});
    let r = release.clone();
    tools
        .register(
            "hold",
            schema.clone(),
            move |_: Map<String, Value>, _: ToolContext| {
                let (tx, release) = (tx.clone(), r.clone());
                async move {
                    let _ = tx.send(());
                    release.acquire().await.unwrap().forget();
                    text("held")
                }
            },
        )
        .unwrap();
    for name in ["quick", "fresh"] {
        tools
            .register(
                name,
                schema.clone(),
                move |_: Map<String, Value>, _: ToolContext| async move { text(name) },
            )
            .unwrap();
    }
    let config = McpServerConfig::new("reload-upstream", "1").with_rate_limit(None);
    let server = HttpServer::new(
        Engine::new(config, Arc::new(tools)),
        HttpConfig {
            bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            rate_limit: None,
            ..HttpConfig::default()
        },
    );
    let listener = server.bind().await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { server.serve(listener, std::future::pending()).await });
    Upstream {
        url: format!("http://{addr}/mcp"),
        started,
        release,
    }
}

/// `[[upstream]]` over HTTP.
fn http_upstream(name: &str, url: &str, extra: &str) -> String {
    format!("[[upstream]]\nname = \"{name}\"\nurl = \"{url}\"\n{extra}\n\n")
}

/// A policy letting the local caller (HTTP without authentication) use `tools`.
fn policy(tools: &str) -> String {
    format!("[[policy]]\nname = \"local\"\nlocal = true\ntools = [{tools}]\n\n")
}

/// Writes `text` to `path` as an editor does: a new file renamed over the old one.
fn write(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// `GET /health` of the server at `addr`, as JSON.
fn health(addr: &str) -> Value {
    support::body_json(&support::http_get(addr, "/health", None))
}

/// The upstreams `/status` lists and the generation it says, which follow a reload.
fn status_upstreams(addr: &str) -> (Vec<String>, Value) {
    let doc = support::body_json(&support::http_get(addr, "/status", None));
    let names = doc["upstreams"]
        .as_array()
        .unwrap_or_else(|| panic!("{doc}"))
        .iter()
        .map(|u| u["name"].as_str().unwrap().to_owned())
        .collect();
    (names, doc["config_generation"].clone())
}

/// Waits for the gateway's stderr line saying `generation` is live; returns it.
fn await_generation(gw: &support::Server, generation: u64) -> String {
    let needle = format!("configuration generation {generation} is live");
    tokio::task::block_in_place(|| support::await_line(&gw.stderr, &needle))
}

/// A client of the gateway at `url`, its handshake done in `era`; a 2026-07-28 one keeps a
/// `subscriptions/listen` stream open for list changes.
async fn client(url: &str, era: EraPreference) -> Arc<McpClient> {
    let client =
        Arc::new(McpClient::connect_http(HttpTarget::new(url), ClientOptions::default()).unwrap());
    tokio::time::timeout(GUARD, client.negotiate(era, GUARD))
        .await
        .unwrap()
        .unwrap();
    if era == EraPreference::Modern {
        let c = client.clone();
        tokio::spawn(async move {
            let params = json!({"notifications": {
                "toolsListChanged": true,
                "promptsListChanged": true,
                "resourcesListChanged": true,
            }});
            let options = CallOptions {
                timeout: Some(Duration::from_secs(600)),
                ..CallOptions::default()
            };
            let _ = c
                .request_round("subscriptions/listen", &params, &options)
                .await;
        });
    }
    client
}

/// Waits for `notifications/tools/list_changed` from `client`'s server.
async fn hears_tools_changed(client: &McpClient, who: &str) {
    let heard = tokio::time::timeout(GUARD, async {
        while let Some(n) = client.next_notification().await {
            if n["method"] == "notifications/tools/list_changed" {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or_else(|_| panic!("{who}: no list_changed within the guard"));
    assert!(heard, "{who}: the connection ended before list_changed");
}

/// Drops the notifications heard so far.
async fn forget_notifications(client: &McpClient) {
    while let Ok(Some(_)) =
        tokio::time::timeout(Duration::from_millis(200), client.next_notification()).await
    {}
}

async fn tool_names(client: &McpClient) -> Vec<String> {
    let tools = tokio::time::timeout(GUARD, client.list_tools())
        .await
        .unwrap()
        .unwrap();
    tools
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

async fn call(client: &McpClient, tool: &str) -> Result<Value, String> {
    tokio::time::timeout(GUARD, client.call_tool(tool, json!({})))
        .await
        .expect("no hang")
        .map_err(|e| e.to_string())
}

fn first_text(r: &Value) -> &str {
    r["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_adds_removes_and_changes_upstreams_and_policies_without_dropping_anything() {
    let mut one = upstream().await;
    let two = upstream().await;
    let root = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    let files = format!(
        "[[upstream]]\nname = \"files\"\ncommand = \"{BIN}\"\nargs = [\"serve\", \"--root\", \"{}\"]\n\n",
        root.path().to_str().unwrap()
    );
    // Generation 1: `keep` and `a` on the first upstream, `files` a stdio child; every tool
    // allowed to the local caller.
    let keep = http_upstream("keep", &one.url, "timeout_secs = 30");
    let gen1 = format!(
        "{keep}{}{files}{}",
        http_upstream("a", &one.url, "timeout_secs = 30"),
        policy("\"*\"")
    );
    write(&path, &gen1);
    let gw = support::http_server(
        &[
            "gateway",
            "--config",
            path.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
        ],
        &[],
    );
    let pid = gw.child.id();
    assert_eq!(health(gw.addr())["configGeneration"], 1);
    assert_eq!(
        status_upstreams(gw.addr()),
        (vec!["keep".into(), "a".into(), "files".into()], 1.into())
    );
    let legacy = client(&gw.url, EraPreference::Legacy).await;
    let modern = client(&gw.url, EraPreference::Modern).await;
    let names = tool_names(&legacy).await;
    assert!(names.contains(&"a.hold".to_owned()), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("files.")), "{names:?}");
    let child = support::children_of(pid, "serve");
    assert_eq!(child.len(), 1, "one stdio upstream child: {child:?}");

    // Slow calls in flight: one to `a` (which changes), one to `keep` (which stays).
    let (l, m) = (legacy.clone(), modern.clone());
    let to_a = tokio::spawn(async move { call(&l, "a.hold").await });
    let to_keep = tokio::spawn(async move { call(&m, "keep.hold").await });
    for _ in 0..2 {
        tokio::time::timeout(GUARD, one.started.recv())
            .await
            .unwrap()
            .unwrap();
    }
    forget_notifications(&legacy).await;
    forget_notifications(&modern).await;

    // Generation 2 (the file changes): `a` changed (another timeout), `files` removed, `b`
    // added on the second upstream.
    let gen2 = format!(
        "{keep}{}{}{}",
        http_upstream("a", &one.url, "timeout_secs = 20"),
        http_upstream("b", &two.url, ""),
        policy("\"*\"")
    );
    write(&path, &gen2);
    let line = await_generation(&gw, 2);
    assert!(line.contains("the file changed"), "{line}");
    assert_eq!(health(gw.addr())["configGeneration"], 2);
    assert_eq!(
        status_upstreams(gw.addr()),
        (vec!["keep".into(), "a".into(), "b".into()], 2.into())
    );
    hears_tools_changed(&legacy, "2025-11-25 client").await;
    hears_tools_changed(&modern, "2026-07-28 client").await;
    let deadline = std::time::Instant::now() + GUARD;
    loop {
        let names = tool_names(&modern).await;
        if names.contains(&"b.fresh".to_owned()) && names.contains(&"a.quick".to_owned()) {
            assert!(!names.iter().any(|n| n.starts_with("files.")), "{names:?}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{names:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        first_text(&call(&legacy, "b.fresh").await.unwrap()),
        "fresh"
    );
    assert_eq!(
        first_text(&call(&modern, "a.quick").await.unwrap()),
        "quick"
    );
    // The removed stdio child ends (no call held it).
    let deadline = std::time::Instant::now() + GUARD;
    while !support::children_of(pid, "serve").is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the removed upstream's child still runs"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The slow calls complete, on the changed upstream's old connection too.
    one.release.add_permits(2);
    let a = to_a
        .await
        .unwrap()
        .expect("the call to the changed upstream");
    assert_eq!(first_text(&a), "held", "{a}");
    let k = to_keep
        .await
        .unwrap()
        .expect("the call to the kept upstream");
    assert_eq!(first_text(&k), "held", "{k}");

    // Generation 3: a policy that allows only `b`'s tools.
    forget_notifications(&legacy).await;
    forget_notifications(&modern).await;
    let gen3 = format!(
        "{keep}{}{}{}",
        http_upstream("a", &one.url, "timeout_secs = 20"),
        http_upstream("b", &two.url, ""),
        policy("\"b.*\"")
    );
    write(&path, &gen3);
    await_generation(&gw, 3);
    hears_tools_changed(&legacy, "2025-11-25 client").await;
    hears_tools_changed(&modern, "2026-07-28 client").await;
    for c in [&legacy, &modern] {
        let names = tool_names(c).await;
        assert!(!names.is_empty(), "{names:?}");
        assert!(names.iter().all(|n| n.starts_with("b.")), "{names:?}");
        let refused = call(c, "a.quick").await;
        assert!(
            refused.is_err() || refused.as_ref().unwrap()["isError"] == true,
            "a denied call is refused: {refused:?}"
        );
        assert_eq!(first_text(&call(c, "b.fresh").await.unwrap()), "fresh");
    }

    // An invalid file is refused with its line; generation 3 keeps serving.
    write(
        &path,
        &format!("{gen3}[[upstream]]\nname = \"x\"\nbogus = 1\n"),
    );
    let refused = tokio::task::block_in_place(|| support::await_line(&gw.stderr, "refused"));
    let line_of_bogus = gen3.lines().count() + 3;
    assert!(
        refused.contains(&format!("gateway.toml:{line_of_bogus}")),
        "the error names line {line_of_bogus}: {refused}"
    );
    assert!(refused.contains("generation 3 keeps serving"), "{refused}");
    assert_eq!(health(gw.addr())["configGeneration"], 3);
    assert_eq!(
        first_text(&call(&legacy, "b.fresh").await.unwrap()),
        "fresh"
    );

    // SIGHUP reloads the file (here the valid one again, unchanged since it was written).
    write(&path, &gen3);
    await_generation(&gw, 4);
    let status = std::process::Command::new("kill")
        .args(["-HUP", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let line = await_generation(&gw, 5);
    assert!(line.contains("SIGHUP"), "{line}");
    assert_eq!(health(gw.addr())["configGeneration"], 5);
    assert_eq!(
        first_text(&call(&modern, "b.fresh").await.unwrap()),
        "fresh"
    );
    drop(gw);
}

/// A reload that changes `name_style` renames every upstream's tools, though no upstream's
/// table changed: the portable names are listed and callable, the dotted ones are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_of_the_name_style_renames_every_upstream() {
    let one = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.toml");
    let table = http_upstream("a", &one.url, "");
    write(&path, &table);
    let gw = support::http_server(
        &[
            "gateway",
            "--config",
            path.to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
        ],
        &[],
    );
    let client = client(&gw.url, EraPreference::Legacy).await;
    let names = tool_names(&client).await;
    assert!(names.contains(&"a.quick".to_owned()), "{names:?}");
    write(&path, &format!("name_style = \"portable\"\n\n{table}"));
    await_generation(&gw, 2);
    let deadline = std::time::Instant::now() + GUARD;
    loop {
        let names = tool_names(&client).await;
        if names.contains(&"a__quick".to_owned()) {
            assert!(!names.iter().any(|n| n.contains('.')), "{names:?}");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{names:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        first_text(&call(&client, "a__quick").await.unwrap()),
        "quick"
    );
    drop(gw);
}
