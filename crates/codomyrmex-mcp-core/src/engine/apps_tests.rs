//! The MCP Apps extension through the engine, in both eras: the declaration, a tool's
//! `_meta.ui` in `tools/list`, an app-only tool listed and callable, a UI resource's
//! `_meta.ui` in `resources/list` and `resources/read`.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::*;
use crate::apps::{UiResource, UiResourceCsp, UiToolMeta, UiVisibility};
use crate::context::{MessageSink, NullSink};
use crate::registry::{McpToolRegistry, ToolDefinition, ToolRegistration};
use crate::resources::{McpResourceRegistry, ResourceDefinition};
use crate::schema::McpErrorDetail;
use crate::test_runtime::run;
use crate::wire::apps::{APP_MIME_TYPE, UI_EXTENSION};
use crate::wire::jsonrpc::decode;

const HTML: &str = "<!DOCTYPE html><html><body>app</body></html>";

fn tools() -> Arc<McpToolRegistry> {
    let tools = McpToolRegistry::new();
    let schema = json!({"type": "object"});
    tools
        .register_tool(ToolRegistration::new(
            ToolDefinition::new("show", schema.clone()).with_ui_resource("ui://demo/view"),
            |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!({"rows": [1]})) },
        ))
        .unwrap();
    tools
        .register_tool(ToolRegistration::new(
            ToolDefinition::new("refresh", schema)
                .with_ui(UiToolMeta::linked("ui://demo/view").with_visibility([UiVisibility::App])),
            |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!("fresh")) },
        ))
        .unwrap();
    Arc::new(tools)
}

fn resources(with_ui: bool) -> Arc<McpResourceRegistry> {
    let r = McpResourceRegistry::new();
    r.add_text(ResourceDefinition::new("file:///notes.txt", "notes"), "n")
        .unwrap();
    if with_ui {
        UiResource::html("ui://demo/view", "view", HTML)
            .with_csp(UiResourceCsp {
                connect_domains: vec!["https://api.example.com".into()],
                ..UiResourceCsp::default()
            })
            .with_prefers_border(true)
            .register(&r)
            .unwrap();
    }
    Arc::new(r)
}

fn engine(with_ui: bool) -> Engine {
    Engine::builder(McpServerConfig::default(), tools())
        .resources(resources(with_ui))
        .build()
}

fn modern(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

async fn send(engine: &Engine, session: &Arc<Session>, request: Value) -> Value {
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    let decoded = decode(request.to_string().as_bytes());
    let message = engine
        .handle_decoded(session, decoded, &sink)
        .into_message()
        .await
        .map(|m| m.to_bytes());
    serde_json::from_slice(&message.unwrap_or_default()).unwrap_or(Value::Null)
}

/// A 2025-11-25 session, initialized with `capabilities`.
async fn legacy(engine: &Engine, capabilities: Value) -> (Arc<Session>, Value) {
    let s = engine.new_session();
    let init = send(
        engine,
        &s,
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "c", "version": "1"}}}),
    )
    .await;
    send(
        engine,
        &s,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    (s, init)
}

fn tool<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == name))
        .unwrap_or(&Value::Null)
}

#[test]
fn the_extension_is_declared_in_both_eras_only_with_a_ui_resource() {
    run(async {
        let e = engine(true);
        let d = send(
            &e,
            &e.new_session(),
            modern(1, "server/discover", json!({})),
        )
        .await;
        assert_eq!(
            d["result"]["capabilities"]["extensions"][UI_EXTENSION],
            json!({}),
            "{d}"
        );
        let (_, i) = legacy(&e, json!({})).await;
        assert_eq!(
            i["result"]["capabilities"]["extensions"][UI_EXTENSION],
            json!({}),
            "{i}"
        );

        let plain = engine(false);
        let d = send(
            &plain,
            &plain.new_session(),
            modern(1, "server/discover", json!({})),
        )
        .await;
        assert!(
            d["result"]["capabilities"].get("extensions").is_none(),
            "{d}"
        );
        let (_, i) = legacy(&plain, json!({})).await;
        assert!(
            i["result"]["capabilities"].get("extensions").is_none(),
            "{i}"
        );
    });
}

#[test]
fn tools_carry_their_ui_metadata_to_every_client_and_app_only_tools_are_listed_and_callable() {
    run(async {
        let e = engine(true);
        let ui_client = json!({"extensions": {UI_EXTENSION: {"mimeTypes": [APP_MIME_TYPE]}}});
        for caps in [json!({}), ui_client.clone()] {
            let (s, _) = legacy(&e, caps.clone()).await;
            let list = send(
                &e,
                &s,
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            )
            .await;
            assert_eq!(
                tool(&list, "show")["_meta"]["ui"],
                json!({"resourceUri": "ui://demo/view"}),
                "{list}"
            );
            assert_eq!(
                tool(&list, "refresh")["_meta"]["ui"],
                json!({"resourceUri": "ui://demo/view", "visibility": ["app"]}),
                "{caps}: {list}"
            );
            let call = send(
                &e,
                &s,
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "refresh", "arguments": {}}}),
            )
            .await;
            assert_eq!(
                call["result"]["structuredContent"],
                json!({"result": "fresh"}),
                "{call}"
            );
            assert_ne!(call["result"]["isError"], json!(true), "{call}");
        }
        let mut request = modern(3, "tools/list", json!({}));
        request["params"]["_meta"][META_CLIENT_CAPABILITIES] = ui_client;
        let list = send(&e, &e.new_session(), request).await;
        assert_eq!(
            tool(&list, "refresh")["_meta"]["ui"]["visibility"],
            json!(["app"]),
            "{list}"
        );
        let list = send(&e, &e.new_session(), modern(4, "tools/list", json!({}))).await;
        assert_eq!(
            tool(&list, "show")["_meta"]["ui"]["resourceUri"],
            "ui://demo/view",
            "{list}"
        );
    });
}

#[test]
fn a_ui_resource_is_listed_and_read_with_its_mime_type_and_metadata() {
    run(async {
        let e = engine(true);
        let ui =
            json!({"csp": {"connectDomains": ["https://api.example.com"]}, "prefersBorder": true});
        let list = send(&e, &e.new_session(), modern(1, "resources/list", json!({}))).await;
        let entry = list["result"]["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["uri"] == "ui://demo/view"))
            .cloned()
            .unwrap_or(Value::Null);
        assert_eq!(entry["mimeType"], APP_MIME_TYPE, "{list}");
        assert_eq!(entry["_meta"]["ui"], ui, "{list}");
        let (s, _) = legacy(&e, json!({})).await;
        for read in [
            send(
                &e,
                &e.new_session(),
                modern(2, "resources/read", json!({"uri": "ui://demo/view"})),
            )
            .await,
            send(
                &e,
                &s,
                json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                "params": {"uri": "ui://demo/view"}}),
            )
            .await,
        ] {
            let item = &read["result"]["contents"][0];
            assert_eq!(item["mimeType"], APP_MIME_TYPE, "{read}");
            assert_eq!(item["text"], HTML, "{read}");
            assert_eq!(item["_meta"]["ui"], ui, "{read}");
        }
    });
}
