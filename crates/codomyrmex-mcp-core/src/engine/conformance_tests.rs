//! Regression tests for what the official MCP conformance suite found in the engine. Each test
//! names the suite's scenario and check it stands for.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::context::{InputRequest, MessageSink, NullSink, ToolContext};
use crate::registry::{McpToolRegistry, ToolOutput};
use crate::test_runtime::run;
use crate::wire::ContentBlock;
use crate::wire::jsonrpc::decode;

fn engine() -> Engine {
    Engine::new(McpServerConfig::default(), Arc::new(McpToolRegistry::new()))
}

fn modern_meta() -> Value {
    json!({
        META_PROTOCOL_VERSION: "2026-07-28",
        META_CLIENT_CAPABILITIES: {},
    })
}

/// Sends one request on a fresh session and returns the wire form of the answer.
async fn answer(engine: &Engine, request: Value) -> Value {
    let session = engine.new_session();
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    let decoded = decode(request.to_string().as_bytes());
    let message = engine
        .handle_decoded(&session, decoded, &sink)
        .into_message()
        .await
        .map(|m| m.to_bytes());
    serde_json::from_slice(&message.unwrap_or_default()).unwrap_or(Value::Null)
}

/// server-stateless, `sep-2575-http-server-method-not-found-404-initialize`: under 2026-07-28
/// `initialize` is a removed method, so a request carrying modern `_meta` gets -32601, not a
/// complaint about its missing `protocolVersion` parameter.
#[test]
fn initialize_with_modern_meta_is_method_not_found() {
    run(async {
        let e = engine();
        let reply = answer(
        &e,
        json!({"jsonrpc": "2.0", "id": 500, "method": "initialize", "params": {"_meta": modern_meta()}}),
    )
    .await;
        assert_eq!(reply["id"], 500);
        assert_eq!(reply["error"]["code"], -32601, "{reply}");

        // A legacy initialize is unaffected.
        let reply = answer(
            &e,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"},
            }}),
        )
        .await;
        assert_eq!(reply["result"]["protocolVersion"], "2025-11-25", "{reply}");
    });
}

/// A tool that asks for the user's name and greets them.
fn greeter() -> Engine {
    let registry = McpToolRegistry::new();
    registry
        .register(
            "greet",
            json!({"type": "object"}),
            |_: Map<String, Value>, cx: ToolContext| async move {
                let request = InputRequest::form("Name?", json!({"type": "object"}));
                match cx.input("user_name", request).await {
                    Ok(answer) => ToolOutput::content(vec![ContentBlock::text(format!(
                        "Hello, {}!",
                        answer["content"]["name"].as_str().unwrap_or("unknown")
                    ))]),
                    Err(e) => ToolOutput::failure(e.into()),
                }
            },
        )
        .unwrap();
    Engine::new(McpServerConfig::default(), Arc::new(registry))
}

fn greet_call(input_responses: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "greet",
        "arguments": {},
        "inputResponses": input_responses,
        "_meta": {
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {"elicitation": {}},
        },
    }})
}

/// input-required-result-validate-input, `sep-2322-validate-input-responses`: an input response
/// that is not a result object is refused with -32602 rather than handed to the tool.
#[test]
fn malformed_input_responses_are_invalid_params() {
    run(async {
        let e = greeter();
        let reply = answer(&e, greet_call(json!({"user_name": 12345}))).await;
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        assert!(
            reply["error"]["message"]
                .as_str()
                .unwrap()
                .contains("user_name")
        );

        // Well-formed responses, with an extra key nobody asked for, still complete
        // (input-required-result-ignore-extra-params).
        let reply = answer(
            &e,
            greet_call(json!({
                "user_name": {"action": "accept", "content": {"name": "Ada"}},
                "unknown_extra_key": {"action": "accept", "content": {"foo": "bar"}},
            })),
        )
        .await;
        assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
        assert_eq!(reply["result"]["content"][0]["text"], "Hello, Ada!");

        // No responses at all: the input is asked for.
        let reply = answer(&e, greet_call(Value::Null)).await;
        assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
        assert_eq!(
            reply["result"]["inputRequests"]["user_name"]["method"],
            "elicitation/create"
        );
    });
}
