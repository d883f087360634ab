//! Every handler kind leaves the engine as an [`Invocation`] value, and its outcome is
//! whatever the test delivers: a timeout or a panic is an `Outcome` the test chooses, with no
//! clock, no runtime and no handler actually misbehaving (the sans-IO contract).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;
use crate::context::MessageSink;
use crate::invocation::{Failure, HandlerKind, InvocationParts, Outcome};
use crate::prompts::{PromptArgument, PromptDefinition, PromptMessage, PromptResult};
use crate::resources::{Completer, ResourceDefinition, ResourceTemplateDefinition};
use crate::schema::{JsonObject, McpErrorDetail};
use crate::wire::jsonrpc::decode;
use crate::wire::{ContentBlock, OutgoingMessage, ResourceContents};

struct Null;
impl MessageSink for Null {
    fn send(&self, _: OutgoingMessage) -> bool {
        true
    }
}

const TIMEOUT: Duration = Duration::from_secs(7);

fn engine() -> Engine {
    let tools = McpToolRegistry::new();
    tools
        .register(
            "echo",
            json!({"type": "object"}),
            |args: JsonObject| -> Result<Value, McpErrorDetail> { Ok(Value::Object(args)) },
        )
        .unwrap();
    let resources = McpResourceRegistry::new();
    resources
        .add_text(ResourceDefinition::new("mem://a", "a"), "A")
        .unwrap();
    let completer: Completer =
        Arc::new(|partial: &str, _: &BTreeMap<String, String>| vec![format!("{partial}1")]);
    resources
        .add_template(
            ResourceTemplateDefinition::new("mem://t/{x}", "t"),
            |r: crate::resources::ResourceRequest| async move {
                Ok(vec![ResourceContents::Text {
                    uri: r.uri,
                    mime_type: None,
                    text: "T".into(),
                    meta: None,
                }])
            },
            BTreeMap::from([("x".to_owned(), completer.clone())]),
        )
        .unwrap();
    let prompts = McpPromptRegistry::new();
    prompts.add_with_completion(
        PromptDefinition::new("greet", "Greets").with_argument(PromptArgument::required("who", "")),
        |r: crate::prompts::PromptRequest| async move {
            Ok(PromptResult {
                description: None,
                messages: vec![PromptMessage::user(ContentBlock::text(format!(
                    "hi {}",
                    r.arguments.get("who").cloned().unwrap_or_default()
                )))],
            })
        },
        BTreeMap::from([("who".to_owned(), completer)]),
    );
    let config = McpServerConfig::new("invocation-tests", "1")
        .with_rate_limit(None)
        .with_tool_timeout(TIMEOUT);
    Engine::builder(config, Arc::new(tools))
        .resources(Arc::new(resources))
        .prompts(Arc::new(prompts))
        .build()
}

fn modern(method: &str, params: Value) -> String {
    let mut params = params;
    params.as_object_mut().unwrap().insert(
        "_meta".into(),
        json!({
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {},
            META_CLIENT_INFO: {"name": "t", "version": "0"},
        }),
    );
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

/// One request per handler kind: (kind, the name it is invoked under, method, params).
fn each_kind() -> Vec<(HandlerKind, &'static str, &'static str, Value)> {
    vec![
        (
            HandlerKind::Tool,
            "echo",
            "tools/call",
            json!({"name": "echo", "arguments": {"k": 1}}),
        ),
        (
            HandlerKind::Resource,
            "mem://a",
            "resources/read",
            json!({"uri": "mem://a"}),
        ),
        (
            HandlerKind::Resource,
            "mem://t/q",
            "resources/read",
            json!({"uri": "mem://t/q"}),
        ),
        (
            HandlerKind::Prompt,
            "greet",
            "prompts/get",
            json!({"name": "greet", "arguments": {"who": "x"}}),
        ),
        (
            HandlerKind::Completer,
            "greet",
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"},
                   "argument": {"name": "who", "value": "a"}}),
        ),
        (
            HandlerKind::Completer,
            "mem://t/{x}",
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "mem://t/{x}"},
                   "argument": {"name": "x", "value": "a"}}),
        ),
    ]
}

fn invoke(e: &Engine, session: &Arc<Session>, method: &str, params: &Value) -> InvocationParts {
    let sink: Arc<dyn MessageSink> = Arc::new(Null);
    let line = modern(method, params.clone());
    match e.handle_decoded(session, decode(line.as_bytes()), &sink) {
        Handled::Invoke(invocation) => invocation.into_parts(),
        other => panic!("{method}: an invocation expected, got {other:?}"),
    }
}

fn wire(m: &OutgoingMessage) -> Value {
    serde_json::from_slice(&m.to_bytes()).unwrap()
}

#[test]
fn every_handler_kind_comes_out_as_an_invocation_with_its_deadline() {
    let e = engine();
    let session = e.new_session();
    for (kind, name, method, params) in each_kind() {
        let sink: Arc<dyn MessageSink> = Arc::new(Null);
        let line = modern(method, params.clone());
        let Handled::Invoke(inv) = e.handle_decoded(&session, decode(line.as_bytes()), &sink)
        else {
            panic!("{method}: not an invocation");
        };
        assert_eq!(inv.kind(), kind, "{method}");
        assert_eq!(inv.name(), name, "{method}");
        assert_eq!(inv.deadline(), Some(TIMEOUT), "{method}");
        assert_eq!(
            inv.is_blocking(),
            kind == HandlerKind::Completer,
            "completers are plain functions, run off the runtime's workers"
        );
        assert!(!inv.cancellation_token().is_cancelled());
    }
}

#[test]
fn a_delivered_timeout_is_answered_as_one_without_a_clock() {
    let e = engine();
    let session = e.new_session();
    for (kind, _, method, params) in each_kind() {
        let parts = invoke(&e, &session, method, &params);
        let reply = e
            .complete(
                e.now(),
                parts.job,
                Outcome::Failed(Failure::TimedOut(TIMEOUT)),
            )
            .expect("a timeout is answered");
        let v = wire(&reply);
        if kind == HandlerKind::Tool {
            assert_eq!(v["result"]["isError"], json!(true), "{v}");
            let text = v["result"]["content"][0]["text"].as_str().unwrap();
            assert!(text.starts_with("TIMEOUT"), "{text}");
        } else {
            assert_eq!(v["error"]["code"], json!(-32603), "{method}: {v}");
            let msg = v["error"]["message"].as_str().unwrap();
            assert!(msg.contains("did not finish within 7000 ms"), "{msg}");
        }
    }
}

#[test]
fn a_delivered_panic_costs_only_its_request() {
    let e = engine();
    let session = e.new_session();
    for (kind, _, method, params) in each_kind() {
        let parts = invoke(&e, &session, method, &params);
        let v = wire(
            &e.complete(e.now(), parts.job, Outcome::Failed(Failure::Panicked))
                .expect("a panic is answered"),
        );
        if kind == HandlerKind::Tool {
            assert_eq!(v["result"]["isError"], json!(true), "{v}");
        } else {
            assert_eq!(v["error"]["code"], json!(-32603), "{method}: {v}");
            assert!(!v.to_string().contains("panicked"), "no panic text: {v}");
        }
        // The next request of the same kind is served as usual.
        let parts = invoke(&e, &session, method, &params);
        let output = futures_executor::block_on(parts.work);
        let v = wire(
            &e.complete(e.now(), parts.job, Outcome::Done(output))
                .unwrap(),
        );
        assert!(v.get("result").is_some(), "{method}: {v}");
        assert_ne!(v["result"]["isError"], json!(true), "{method}: {v}");
    }
}

#[test]
fn a_cancelled_invocation_sends_nothing_and_leaves_nothing_in_flight() {
    let e = engine();
    let session = e.new_session();
    for (_, _, method, params) in each_kind() {
        let parts = invoke(&e, &session, method, &params);
        assert_eq!(
            e.complete(e.now(), parts.job, Outcome::Cancelled),
            None,
            "{method}"
        );
        assert_eq!(session.in_flight(), 0, "{method}");
    }
}

#[test]
fn an_invocation_holds_its_admission_until_it_is_completed_or_dropped() {
    let config = McpServerConfig::new("t", "1")
        .with_rate_limit(None)
        .with_max_concurrent_requests(1)
        .with_max_queued_requests(0);
    let tools = McpToolRegistry::new();
    tools
        .register(
            "echo",
            json!({"type": "object"}),
            |args: JsonObject| -> Result<Value, McpErrorDetail> { Ok(Value::Object(args)) },
        )
        .unwrap();
    let e = Engine::builder(config, Arc::new(tools)).build();
    // Stateless requests share one gate.
    let params = json!({"name": "echo", "arguments": {}});
    let first = invoke(&e, &e.new_stateless_session(), "tools/call", &params);
    let sink: Arc<dyn MessageSink> = Arc::new(Null);
    let line = modern("tools/call", params.clone());
    let session = e.new_stateless_session();
    let Handled::Reply(refused) = e.handle_decoded(&session, decode(line.as_bytes()), &sink) else {
        panic!("past the bound a call is refused at once");
    };
    let refused = wire(&refused).to_string();
    assert!(refused.contains("OVERLOADED"), "{refused}");
    drop(first);
    let _second = invoke(&e, &e.new_stateless_session(), "tools/call", &params);
}
