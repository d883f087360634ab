//! MCP Apps through the gateway (issue #30 item 6), with the library's `apps_server` example
//! as the upstream: its `ui://` resource is mounted as `ui://NAMESPACE/...` with its HTML and
//! `_meta.ui` untouched, its tools' `_meta.ui.resourceUri` renamed with it, and the app's
//! calls of the upstream's bare tool names resolved when exactly one mounted upstream tool has
//! that name; several are an error naming them; the upstream's filters and the gateway's
//! authorization policy apply to the resolved name. In both eras.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::{ClientHandlers, EraPreference};
use serde_json::{Value, json};

const GUARD: Duration = Duration::from_secs(60);

/// The `apps_server` example of the library, built if this build has not built it.
fn apps_server() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let bin = Path::new(support::BIN);
        let example = bin.parent().unwrap().join("examples").join("apps_server");
        if !example.exists() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = std::process::Command::new(cargo)
                .args(["build", "-p", "codomyrmex-mcp", "--example", "apps_server"])
                .status()
                .unwrap();
            assert!(status.success(), "cannot build the apps_server example");
        }
        example
    })
}

fn upstream(name: &str, extra: &str) -> String {
    format!(
        "[[upstream]]\nname = \"{name}\"\ncommand = \"{}\"\n{extra}\n",
        apps_server().display()
    )
}

/// The gateway of `config` as a stdio child, once every upstream of `names` has mounted its
/// app: the gateway serves after at most 5 s, and a slow upstream (a loaded machine) joins
/// later, which a call by bare name must not race. Raw `resources/list` requests, so that no
/// client cache hides the late one.
async fn gateway(dir: &Path, config: &str, era: EraPreference, names: &[&str]) -> McpClient {
    let path = dir.join("gateway.toml");
    std::fs::write(&path, config).unwrap();
    let client = support::gateway_stdio(&path, era, ClientHandlers::new()).await;
    let deadline = std::time::Instant::now() + GUARD;
    loop {
        let listed = tokio::time::timeout(GUARD, client.request("resources/list", json!({})))
            .await
            .unwrap()
            .unwrap();
        let uris = listed["resources"].to_string();
        if names
            .iter()
            .all(|n| uris.contains(&format!("\"ui://{n}/dashboard/view\"")))
        {
            return client;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not all mounted: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn call(client: &McpClient, name: &str, arguments: Value) -> Result<Value, String> {
    tokio::time::timeout(GUARD, client.call_tool(name, arguments))
        .await
        .unwrap()
        .map_err(|e| e.to_string())
}

/// The upstream's view and tools as the gateway shows them, and calls by bare name.
async fn renamed_and_resolved(era: EraPreference) {
    let dir = tempfile::tempdir().unwrap();
    // `twin` mounts only `dashboard.show`: `dashboard.refresh` is `app`'s alone.
    let config = format!(
        "{}\n{}",
        upstream("app", ""),
        upstream("twin", "include = [\"dashboard.show\"]")
    );
    let client = gateway(dir.path(), &config, era, &["app", "twin"]).await;

    let tools = tokio::time::timeout(GUARD, client.list_tools())
        .await
        .unwrap()
        .unwrap();
    let tool = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} not in {tools:#?}"))
            .clone()
    };
    assert_eq!(
        tool("app.dashboard.show")["_meta"]["ui"]["resourceUri"],
        "ui://app/dashboard/view"
    );
    let refresh = tool("app.dashboard.refresh");
    assert_eq!(
        refresh["_meta"]["ui"]["resourceUri"],
        "ui://app/dashboard/view"
    );
    assert_eq!(refresh["_meta"]["ui"]["visibility"], json!(["app"]));
    assert_eq!(
        tool("twin.dashboard.show")["_meta"]["ui"]["resourceUri"],
        "ui://twin/dashboard/view"
    );

    // The view: listed under the namespace, its HTML and `_meta.ui` the upstream's.
    let resources = tokio::time::timeout(GUARD, client.list_resources())
        .await
        .unwrap()
        .unwrap();
    let view = resources
        .iter()
        .find(|r| r["uri"] == "ui://app/dashboard/view")
        .unwrap_or_else(|| panic!("{resources:#?}"));
    assert_eq!(view["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(view["_meta"]["ui"]["prefersBorder"], true, "{view}");
    let read = tokio::time::timeout(GUARD, client.read_resource("ui://app/dashboard/view"))
        .await
        .unwrap()
        .unwrap();
    let direct = direct_view(era).await;
    let (through, direct) = (&read["contents"][0], &direct["contents"][0]);
    assert_eq!(through["uri"], "ui://app/dashboard/view");
    assert_eq!(through["text"], direct["text"]);
    assert!(
        through["text"].as_str().unwrap().contains("<html"),
        "{through}"
    );
    assert_eq!(through["mimeType"], direct["mimeType"]);
    assert_eq!(through["_meta"], direct["_meta"]);

    // The app's call of its server's bare name reaches the one upstream mounting it.
    let answer = call(&client, "dashboard.refresh", json!({"generation": 4}))
        .await
        .unwrap();
    assert_ne!(answer["isError"], true, "{answer}");
    assert_eq!(answer["structuredContent"]["generation"], 5, "{answer}");
    // Two upstreams mount `dashboard.show`: an error naming both, no silent choice.
    let ambiguous = call(&client, "dashboard.show", json!({}))
        .await
        .unwrap_err();
    assert!(
        ambiguous.contains("app.dashboard.show") && ambiguous.contains("twin.dashboard.show"),
        "{ambiguous}"
    );
    // A name no upstream has is unknown, as ever.
    let unknown = call(&client, "dashboard.nothing", json!({}))
        .await
        .unwrap_err();
    assert!(unknown.contains("Unknown tool"), "{unknown}");
}

/// The view read from the upstream directly.
async fn direct_view(era: EraPreference) -> Value {
    let command = codomyrmex_mcp::client::StdioCommand::new(apps_server().to_str().unwrap());
    let client = McpClient::spawn(&command, Default::default()).unwrap();
    tokio::time::timeout(GUARD, client.negotiate(era, Duration::from_secs(10)))
        .await
        .unwrap()
        .unwrap();
    tokio::time::timeout(GUARD, client.read_resource("ui://dashboard/view"))
        .await
        .unwrap()
        .unwrap()
}

/// Filters and the authorization policy see the resolved name.
async fn no_bypass(era: EraPreference) {
    let dir = tempfile::tempdir().unwrap();
    // `cut` does not mount `dashboard.refresh`; the local caller may call only `cut`'s tools.
    let config = format!(
        "{}\n{}\n[[policy]]\nname = \"local\"\nlocal = true\ntools = [\"cut.*\"]\napps = [\"*\"]\n",
        upstream("app", ""),
        upstream("cut", "exclude = [\"dashboard.refresh\"]")
    );
    let client = gateway(dir.path(), &config, era, &["app", "cut"]).await;
    // Only `app` mounts `dashboard.refresh`, and the policy refuses `app.dashboard.refresh`:
    // the bare name is refused as the gateway's name is, as an unknown tool.
    for name in ["dashboard.refresh", "app.dashboard.refresh"] {
        let refused = call(&client, name, json!({"generation": 1}))
            .await
            .unwrap_err();
        assert!(refused.contains("Unknown tool"), "{name}: {refused}");
    }
    // `dashboard.show` is mounted by both, but the caller may call only `cut`'s: that one.
    let shown = call(&client, "dashboard.show", json!({})).await.unwrap();
    assert_ne!(shown["isError"], true, "{shown}");
    assert_eq!(shown["structuredContent"]["generation"], 0, "{shown}");
}

#[tokio::test(flavor = "multi_thread")]
async fn apps_are_renamed_and_bare_names_resolve_modern() {
    renamed_and_resolved(EraPreference::Modern).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn apps_are_renamed_and_bare_names_resolve_legacy() {
    renamed_and_resolved(EraPreference::Legacy).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bare_name_gets_no_more_than_its_resolved_name_modern() {
    no_bypass(EraPreference::Modern).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bare_name_gets_no_more_than_its_resolved_name_legacy() {
    no_bypass(EraPreference::Legacy).await;
}
