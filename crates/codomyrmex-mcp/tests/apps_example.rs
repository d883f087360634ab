//! The wire output of `examples/apps_server.rs` (MCP Apps), in both eras: the `ui://` resource
//! read back with the app MIME type and `_meta.ui`, each tool's `_meta.ui` in `tools/list`
//! (the app-only refresh tool listed with `visibility: ["app"]` and callable), and the
//! extension declared in the capabilities.

#[path = "../examples/apps_server.rs"]
#[allow(dead_code)]
mod apps_server;

use codomyrmex_mcp::Era;
use codomyrmex_mcp::apps::{APP_MIME_TYPE, UI_EXTENSION};
use codomyrmex_mcp::client::McpClient;
use serde_json::{Value, json};

fn find<'a>(list: &'a Value, key: &str, field: &str, want: &str) -> &'a Value {
    list[key]
        .as_array()
        .and_then(|items| items.iter().find(|i| i[field] == want))
        .unwrap_or(&Value::Null)
}

#[tokio::test]
async fn the_example_serves_its_app_and_links_its_tools_in_both_eras() {
    let server = apps_server::server().unwrap();
    for era in [Era::Legacy, Era::Modern] {
        let client = McpClient::in_memory(&server, era);
        let opened = client.initialize().await.unwrap();
        assert_eq!(
            opened["capabilities"]["extensions"][UI_EXTENSION],
            json!({}),
            "{era:?}: {opened}"
        );

        let read = client.read_resource(apps_server::VIEW_URI).await.unwrap();
        let item = &read["contents"][0];
        assert_eq!(item["uri"], apps_server::VIEW_URI, "{read}");
        assert_eq!(item["mimeType"], APP_MIME_TYPE, "{read}");
        assert_eq!(
            item["_meta"]["ui"],
            json!({"prefersBorder": true}),
            "{read}"
        );
        let html = item["text"].as_str().unwrap_or_default();
        assert_eq!(html, apps_server::DASHBOARD_HTML);
        for message in [
            "\"ui/initialize\"",
            "\"ui/notifications/initialized\"",
            "\"tools/call\"",
            "\"dashboard.refresh\"",
            "\"ui/notifications/tool-result\"",
            "\"ui/notifications/size-changed\"",
        ] {
            assert!(html.contains(message), "the app does not use {message}");
        }
        assert!(
            !html.contains("src=\"http") && !html.contains("<link"),
            "the app loads nothing"
        );

        let resources = client.request("resources/list", json!({})).await.unwrap();
        let entry = find(&resources, "resources", "uri", apps_server::VIEW_URI);
        assert_eq!(entry["mimeType"], APP_MIME_TYPE, "{resources}");
        assert_eq!(
            entry["_meta"]["ui"],
            json!({"prefersBorder": true}),
            "{resources}"
        );

        let tools = client.request("tools/list", json!({})).await.unwrap();
        assert_eq!(
            find(&tools, "tools", "name", "dashboard.show")["_meta"]["ui"],
            json!({"resourceUri": apps_server::VIEW_URI}),
            "{tools}"
        );
        assert_eq!(
            find(&tools, "tools", "name", "dashboard.refresh")["_meta"]["ui"],
            json!({"resourceUri": apps_server::VIEW_URI, "visibility": ["app"]}),
            "{tools}"
        );

        let shown = client.call_tool("dashboard.show", json!({})).await.unwrap();
        assert_eq!(shown["structuredContent"]["generation"], 0, "{shown}");
        assert_eq!(
            shown["structuredContent"]["rows"][0],
            json!({"label": "Mon", "value": 120})
        );
        assert!(
            shown["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .contains("Mon: 120")
        );
        let refreshed = client
            .call_tool("dashboard.refresh", json!({"generation": 0}))
            .await
            .unwrap();
        assert_eq!(
            refreshed["structuredContent"]["generation"], 1,
            "{refreshed}"
        );
        assert_eq!(
            refreshed["structuredContent"]["rows"][0],
            json!({"label": "Mon", "value": 340})
        );
    }
}
