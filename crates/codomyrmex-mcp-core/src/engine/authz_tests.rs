//! Authorization through the engine, for what the HTTP tests of the CLI do not reach: the
//! Skills extension (`skills/list`, `skills/get`, `skill://` files, `SKILL.md` in
//! `resources/list`), Apps' `ui://` resources, the local caller (stdio: no principal), and
//! lists cached per grant.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::*;
use crate::apps::UiResource;
use crate::authz::{Authorization, PolicyEntry};
use crate::context::{MessageSink, NullSink, Principal};
use crate::registry::{McpToolRegistry, ToolDefinition, ToolRegistration};
use crate::resources::{McpResourceRegistry, ResourceDefinition};
use crate::schema::McpErrorDetail;
use crate::skills::{McpSkillRegistry, SkillDefinition};
use crate::test_runtime::run;
use crate::wire::jsonrpc::decode;

fn md(name: &str) -> String {
    format!("---\nname: {name}\ndescription: d\n---\n# {name}\n")
}

fn rule(name: &str, f: impl FnOnce(&mut PolicyEntry)) -> PolicyEntry {
    let mut e = PolicyEntry {
        name: name.into(),
        ..PolicyEntry::default()
    };
    f(&mut e);
    e
}

fn engine() -> Engine {
    let tools = McpToolRegistry::new();
    for name in ["echo", "admin.reset"] {
        tools
            .register_tool(ToolRegistration::new(
                ToolDefinition::new(name, json!({"type": "object"})),
                |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!("ok")) },
            ))
            .unwrap();
    }
    let resources = McpResourceRegistry::new();
    resources
        .add_text(ResourceDefinition::new("file:///notes.txt", "notes"), "n")
        .unwrap();
    UiResource::html("ui://demo/view", "view", "<html></html>")
        .register(&resources)
        .unwrap();
    let skills = McpSkillRegistry::new();
    skills
        .add(
            SkillDefinition::new("pdf", md("pdf"))
                .unwrap()
                .with_file("notes.md", "n")
                .unwrap(),
        )
        .unwrap();
    skills
        .add(SkillDefinition::new("acme/refunds", md("refunds")).unwrap())
        .unwrap();
    let policy = Authorization::compile(&[
        rule("viewer", |e| {
            e.subjects = vec!["viewer".into()];
            e.tools = vec!["echo".into()];
            e.skills = vec!["pdf".into()];
            e.apps = vec!["ui://demo/*".into()];
        }),
        rule("me", |e| {
            e.local = true;
            e.tools = vec!["*".into()];
            e.resources = vec!["file:///*".into()];
            e.skills = vec!["refunds".into()];
        }),
    ])
    .unwrap()
    .unwrap();
    let config = McpServerConfig::default().with_authorization(Some(Arc::new(policy)));
    Engine::builder(config, Arc::new(tools))
        .resources(Arc::new(resources))
        .skills(Arc::new(skills))
        .build()
}

fn modern(method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}});
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

async fn send(engine: &Engine, principal: Option<&str>, request: Value) -> Value {
    let session = engine
        .new_stateless_session()
        .with_principal(principal.map(|p| Principal::new(p, Vec::new())));
    send_on(engine, &session, request).await
}

async fn send_on(engine: &Engine, session: &Arc<Session>, request: Value) -> Value {
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    let decoded = decode(request.to_string().as_bytes());
    let message = engine
        .handle_decoded(session, decoded, &sink)
        .into_message()
        .await
        .map(|m| m.to_bytes());
    serde_json::from_slice(&message.unwrap_or_default()).unwrap_or(Value::Null)
}

fn listed(answer: &Value, key: &str, field: &str) -> Vec<String> {
    let mut v: Vec<String> = answer["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|i| i[field].as_str().unwrap_or_default().to_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn skills_are_listed_and_got_by_name() {
    run(async {
        let e = engine();
        let list = send(&e, Some("viewer"), modern("skills/list", json!({}))).await;
        assert_eq!(listed(&list, "skills", "uri"), ["skill://pdf/SKILL.md"]);
        let list = send(&e, None, modern("skills/list", json!({}))).await;
        assert_eq!(
            listed(&list, "skills", "uri"),
            ["skill://acme/refunds/SKILL.md"]
        );
        let got = send(
            &e,
            Some("viewer"),
            modern("skills/get", json!({"uri": "skill://pdf/SKILL.md"})),
        )
        .await;
        assert!(got["result"]["skill"].is_object(), "{got}");
        let refused = send(
            &e,
            Some("viewer"),
            modern(
                "skills/get",
                json!({"uri": "skill://acme/refunds/SKILL.md"}),
            ),
        )
        .await;
        let unknown = send(
            &e,
            Some("viewer"),
            modern("skills/get", json!({"uri": "skill://nope/SKILL.md"})),
        )
        .await;
        assert_eq!(
            refused["error"]["code"], unknown["error"]["code"],
            "{refused}"
        );
        assert!(
            refused["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("No skill is served at"),
            "{refused}"
        );
        // A skill's files follow the skill.
        let file = modern("resources/read", json!({"uri": "skill://pdf/notes.md"}));
        assert!(send(&e, Some("viewer"), file.clone()).await["result"].is_object());
        assert!(send(&e, None, file).await["error"].is_object());
    });
}

#[test]
fn ui_resources_are_the_apps_rules_and_resource_lists_are_filtered() {
    run(async {
        let e = engine();
        let view = modern("resources/read", json!({"uri": "ui://demo/view"}));
        assert!(send(&e, Some("viewer"), view.clone()).await["result"].is_object());
        let refused = send(&e, None, view).await;
        assert_eq!(
            refused["error"]["message"], "Resource not found",
            "{refused}"
        );
        let list = modern("resources/list", json!({}));
        assert_eq!(
            listed(
                &send(&e, Some("viewer"), list.clone()).await,
                "resources",
                "uri"
            ),
            ["skill://pdf/SKILL.md", "ui://demo/view"]
        );
        assert_eq!(
            listed(&send(&e, None, list.clone()).await, "resources", "uri"),
            ["file:///notes.txt", "skill://acme/refunds/SKILL.md"]
        );
        // Someone no rule matches sees nothing, and the pages cached for the others do not
        // leak to them.
        assert!(listed(&send(&e, Some("mallory"), list).await, "resources", "uri").is_empty());
    });
}

#[test]
fn the_local_caller_is_the_local_rule_and_tool_lists_are_cached_per_grant() {
    run(async {
        let e = engine();
        let tools = modern("tools/list", json!({}));
        for _ in 0..2 {
            assert_eq!(
                listed(&send(&e, None, tools.clone()).await, "tools", "name"),
                ["admin.reset", "echo"]
            );
            assert_eq!(
                listed(
                    &send(&e, Some("viewer"), tools.clone()).await,
                    "tools",
                    "name"
                ),
                ["echo"]
            );
        }
        let reset = modern("tools/call", json!({"name": "admin.reset"}));
        assert!(send(&e, None, reset.clone()).await["result"].is_object());
        let refused = send(&e, Some("viewer"), reset).await;
        assert_eq!(
            refused["error"]["message"], "Unknown tool: admin.reset",
            "{refused}"
        );
        let denials = e.config().authorization.as_ref().unwrap().denials();
        assert_eq!(denials[0], ("viewer", 1));
    });
}

/// A replaced policy decides the next request, cached list pages built under the old one
/// are not served again, and listeners hear that the lists changed.
#[test]
fn a_replaced_policy_decides_at_once_and_lists_are_rebuilt() {
    run(async {
        let e = engine();
        let mut events = e.listeners().events();
        assert_eq!(listed_to_viewer(&e).await, ["echo"]);
        let policy = Authorization::compile(&[rule("viewer", |r| {
            r.subjects = vec!["viewer".into()];
            r.tools = vec!["admin.*".into()];
        })])
        .unwrap()
        .unwrap();
        e.set_authorization(Some(Arc::new(policy)));
        assert_eq!(listed_to_viewer(&e).await, ["admin.reset"]);
        let call = |name: &str| modern("tools/call", json!({"name": name}));
        assert!(send(&e, Some("viewer"), call("admin.reset")).await["result"].is_object());
        let refused = send(&e, Some("viewer"), call("echo")).await;
        assert_eq!(
            refused["error"]["message"], "Unknown tool: echo",
            "{refused}"
        );
        assert!(matches!(
            events.next().await,
            Some(ServerEvent::ToolsListChanged)
        ));
        // No policy: everything again.
        e.set_authorization(None);
        assert_eq!(listed_to_viewer(&e).await, ["admin.reset", "echo"]);
    });
}

/// The tools `viewer` is listed.
async fn listed_to_viewer(e: &Engine) -> Vec<String> {
    let tools = modern("tools/list", json!({}));
    listed(&send(e, Some("viewer"), tools).await, "tools", "name")
}

#[test]
fn a_legacy_subscription_to_a_refused_uri_is_refused_as_unknown() {
    run(async {
        let e = engine();
        for (principal, allowed) in [(None, true), (Some("viewer"), false)] {
            let s = e
                .new_session()
                .with_principal(principal.map(|p| Principal::new(p, Vec::new())));
            send_on(
                &e,
                &s,
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"}}}),
            )
            .await;
            let sub = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
                             "params": {"uri": "file:///notes.txt"}});
            let answer = send_on(&e, &s, sub).await;
            if allowed {
                assert_eq!(answer["result"], json!({}), "{answer}");
            } else {
                assert_eq!(answer["error"]["message"], "Resource not found", "{answer}");
            }
        }
    });
}
