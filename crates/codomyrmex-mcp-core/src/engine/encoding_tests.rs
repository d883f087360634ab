//! The bytes a `tools/call` answer is written as (`OutgoingMessage::write_to`, the one
//! encoder) equal serde_json's serialization of the same message, for every content block
//! kind, structured content, tool errors and protocol errors, 64 KiB strings with escapes and
//! non-ASCII, in both eras.

use serde_json::{Map, Value, json};

use super::*;
use crate::registry::{RegisteredTool, ToolOutput};
use crate::schema::McpErrorDetail;
use crate::test_runtime::run;
use crate::wire::{ContentBlock, OutgoingMessage, RequestId, ResourceContents};

fn big() -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < 64 * 1024 {
        s.push_str(
            [
                "text ",
                "\"",
                "\\",
                "\n\t\r",
                "\u{0}\u{1f}\u{7f}",
                "é✓𝄞",
                "</x>",
            ][i % 7],
        );
        i += 1;
    }
    s
}

fn blocks() -> Vec<ContentBlock> {
    let mut annotated = ContentBlock::text(big());
    if let ContentBlock::Text {
        annotations, meta, ..
    } = &mut annotated
    {
        *annotations = Some(Map::from_iter([("priority".to_owned(), json!(0.5))]));
        *meta = Some(Map::from_iter([("k\"".to_owned(), json!(["v\n"]))]));
    }
    let mut link = ContentBlock::resource_link("file:///a%20b", "a b");
    if let ContentBlock::ResourceLink { fields, .. } = &mut link {
        fields.insert("mimeType".into(), json!("text/plain"));
        fields.insert("size".into(), json!(12));
    }
    vec![
        annotated,
        ContentBlock::image("aGk=", "image/png"),
        ContentBlock::audio("aGk=", "audio/wav"),
        link,
        ContentBlock::embedded(ResourceContents::Text {
            uri: "mem://x".into(),
            mime_type: Some("text/plain".into()),
            text: big(),
            meta: None,
        }),
        ContentBlock::embedded(ResourceContents::Blob {
            uri: "mem://y".into(),
            mime_type: None,
            blob: "AAEC".into(),
            meta: None,
        }),
    ]
}

fn engine() -> Engine {
    let registry = Arc::new(McpToolRegistry::new());
    registry
        .register(
            "blocks",
            json!({"type": "object"}),
            |_: Map<String, Value>| ToolOutput::content(blocks()),
        )
        .unwrap();
    registry
        .register(
            "structured",
            json!({"type": "object"}),
            |_: Map<String, Value>| -> Result<Value, McpErrorDetail> {
                Ok(json!({"text": big(), "n": [1, -2, 3.25, u64::MAX], "ok": true, "none": null}))
            },
        )
        .unwrap();
    registry
        .register(
            "fails",
            json!({"type": "object"}),
            |_: Map<String, Value>| -> Result<Value, McpErrorDetail> {
                Err(McpErrorDetail::new("Broken", big()))
            },
        )
        .unwrap();
    registry
        .register_tool(crate::registry::ToolRegistration::new(
            crate::registry::ToolDefinition::new("schema", json!({"type": "object"}))
                .with_output_schema(json!({"type": "object"})),
            |_: Map<String, Value>| ToolOutput::content(vec![]),
        ))
        .unwrap();
    Engine::new(McpServerConfig::default().with_rate_limit(None), registry)
}

async fn answers(version: &str) -> Vec<OutgoingMessage> {
    let engine = engine();
    let session = engine.new_session();
    let sink: Arc<dyn MessageSink> = Arc::new(crate::context::NullSink);
    let modern = version == "2026-07-28";
    if !modern {
        let init = IncomingMessage::Request {
            id: RequestId::from(0),
            method: "initialize".into(),
            params: json!({"protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "c", "version": "1"}})
            .as_object()
            .cloned(),
        };
        let _ = engine.handle(&session, init, &sink).into_message().await;
    }
    let mut out = Vec::new();
    for (i, name) in ["blocks", "structured", "fails", "missing"]
        .iter()
        .enumerate()
    {
        let mut params = json!({"name": name, "arguments": {}});
        if modern {
            params["_meta"] = json!({
                META_PROTOCOL_VERSION: version,
                META_CLIENT_CAPABILITIES: {},
            });
        }
        let id = if i % 2 == 0 {
            RequestId::from(i as i64)
        } else {
            RequestId::from(format!("id \"{i}\"").as_str())
        };
        let call = IncomingMessage::Request {
            id,
            method: "tools/call".into(),
            params: params.as_object().cloned(),
        };
        out.extend(engine.handle(&session, call, &sink).into_message().await);
    }
    out
}

#[test]
fn tool_call_answers_are_written_as_serde_json_serializes_them_in_both_eras() {
    run(async {
        for version in ["2026-07-28", "2025-11-25"] {
            let answers = answers(version).await;
            assert_eq!(answers.len(), 4, "{version}");
            assert!(
                matches!(answers[3], OutgoingMessage::Error { .. }),
                "{version}"
            );
            for m in &answers {
                let mut written = Vec::new();
                m.write_to(&mut written);
                assert_eq!(written, serde_json::to_vec(m).unwrap(), "{version}");
                if let Some(result) = m.result_value() {
                    assert!(
                        written.len() > 64 * 1024,
                        "the big strings are in: {version}"
                    );
                    assert_eq!(result.get("resultType").is_some(), version == "2026-07-28");
                }
            }
        }
    });
}

fn scope(engine: &Engine, era: Era) -> RequestScope {
    let version = match era {
        Era::Modern => ProtocolVersion::LATEST_MODERN,
        Era::Legacy => ProtocolVersion::LATEST_LEGACY,
    };
    RequestScope {
        era,
        version,
        client_capabilities: crate::context::no_capabilities(),
        log_level: None,
        progress_token: None,
        now: engine.now(),
    }
}

fn outputs() -> Vec<ToolOutput> {
    let detail = McpErrorDetail::new("Broken", big())
        .with_details(Map::from_iter([("k".to_owned(), json!([1, "\u{1}"]))]));
    let data = json!({"text": big(), "n": [1, -2, 3.25], "none": null});
    vec![
        ToolOutput::content(blocks()),
        ToolOutput::content(vec![]),
        ToolOutput::from_result(crate::schema::McpToolResult::success_value(data.clone())),
        ToolOutput {
            result: crate::schema::McpToolResult::success_value(data),
            content: Some(blocks()),
        },
        ToolOutput::from_result(crate::schema::McpToolResult::no_change_needed("same")),
        ToolOutput::failure(detail.clone()),
        ToolOutput {
            result: crate::schema::McpToolResult::failure(detail),
            content: Some(vec![ContentBlock::text("own text")]),
        },
    ]
}

/// The old path, kept here as the reference: the result built as a value, finished for the
/// era, then encoded.
fn by_value(
    engine: &Engine,
    tool: &RegisteredTool,
    output: ToolOutput,
    scope: &RequestScope,
) -> Vec<u8> {
    let value = engine.shared.results.tool_result(tool, output).into_value();
    serde_json::to_vec(&engine.shared.results.finish_result(value, scope)).unwrap()
}

#[test]
fn a_typed_tool_result_is_encoded_as_its_finished_value_in_both_eras() {
    let engine = engine();
    let tool = engine.shared.registry.lookup("blocks").unwrap();
    let schema_tool = engine.shared.registry.lookup("schema").unwrap();
    for era in [Era::Modern, Era::Legacy] {
        let scope = scope(&engine, era);
        for tool in [&*tool, &*schema_tool] {
            for (i, output) in outputs().into_iter().enumerate() {
                let expected = by_value(&engine, tool, output.clone(), &scope);
                // Written by the transport, straight from the typed parts.
                let answer = engine.shared.results.tool_response(
                    RequestId::from(1),
                    tool,
                    "blocks",
                    output.clone(),
                    &scope,
                );
                let mut envelope = br#"{"jsonrpc":"2.0","id":1,"result":"#.to_vec();
                envelope.extend_from_slice(&expected);
                envelope.push(b'}');
                assert_eq!(answer.to_bytes(), envelope, "{era:?} output {i}");
                // Encoded in the engine (a task's result, one near the cap).
                let (_, bytes) = engine
                    .shared
                    .results
                    .capped_tool_result(tool, "blocks", output, &scope);
                assert_eq!(
                    String::from_utf8(bytes).unwrap(),
                    String::from_utf8(expected).unwrap(),
                    "{era:?} output {i}"
                );
            }
        }
    }
}

#[test]
fn the_cap_measures_the_encoded_result_without_the_eras_members() {
    // At exactly the limit a result passes in both eras (the 2026-07-28 `_meta` and
    // `resultType` are not counted, as before); one byte over, it is replaced.
    let base = engine();
    let tool = base.shared.registry.lookup("blocks").unwrap();
    let output = || ToolOutput::content(vec![ContentBlock::text("x".repeat(5000))]);
    let legacy = by_value(&base, &tool, output(), &scope(&base, Era::Legacy)).len();
    for era in [Era::Modern, Era::Legacy] {
        for (limit, passes) in [(legacy, true), (legacy - 1, false)] {
            let engine = Engine::new(
                McpServerConfig::default().with_max_result_size(limit),
                base.shared.registry.clone(),
            );
            let scope = scope(&engine, era);
            let (result, bytes) =
                engine
                    .shared
                    .results
                    .capped_tool_result(&tool, "blocks", output(), &scope);
            let value: Value = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(!result.is_error, passes, "{era:?} {limit}");
            assert_eq!(value.get("isError").is_none(), passes, "{era:?} {limit}");
            if !passes {
                assert_eq!(value["structuredContent"]["error_type"], "RESULT_TOO_LARGE");
                assert_eq!(
                    value["structuredContent"]["error_details"]["max_result_size"],
                    json!(limit)
                );
                assert_eq!(bytes, by_value(&engine, &tool, ToolOutput::failure(
                    McpErrorDetail::new("RESULT_TOO_LARGE", format!(
                        "Tool blocks returned a result larger than the server's limit of {limit} bytes (max_result_size); it was discarded"
                    )).with_details(Map::from_iter([("max_result_size".to_owned(), json!(limit))]))
                ), &scope));
            }
            assert_eq!(value.get("resultType").is_some(), era == Era::Modern);
            // The answer a call gets: the same decision and bytes.
            let answer = engine.shared.results.tool_response(
                RequestId::from(1),
                &tool,
                "blocks",
                output(),
                &scope,
            );
            assert_eq!(answer.result_value(), Some(value), "{era:?} {limit}");
        }
    }
}

#[test]
fn every_result_is_finished_and_encoded_as_its_value_is() {
    // The 2026-07-28 `_meta` and `resultType` are spliced in, encoded once per engine; a
    // result with its own `_meta` or `resultType` keeps them, as `finish_result` does.
    let engine = engine();
    for era in [Era::Modern, Era::Legacy] {
        let scope = scope(&engine, era);
        for v in [
            json!({}),
            json!({"tools": [], "nextCursor": "61", "ttlMs": 60000, "cacheScope": "public"}),
            json!({"resultType": "input_required", "inputRequests": {}, "requestState": "s"}),
            json!({"_meta": {"own": 1}, "contents": []}),
            json!({"_meta": "not an object", "x": 1}),
            json!({"A": 1, "Z": [], "zz": {}}),
            json!([1, 2]),
            json!("text"),
        ] {
            let expected =
                serde_json::to_vec(&engine.shared.results.finish_result(v.clone(), &scope))
                    .unwrap();
            let answer = engine
                .shared
                .results
                .respond(RequestId::from(1), Ok(v.clone()), &scope);
            let mut written = Vec::new();
            answer.write_to(&mut written);
            let mut prefix = br#"{"jsonrpc":"2.0","id":1,"result":"#.to_vec();
            prefix.extend_from_slice(&expected);
            prefix.push(b'}');
            assert_eq!(
                String::from_utf8(written).unwrap(),
                String::from_utf8(prefix).unwrap(),
                "{era:?} {v}"
            );
        }
    }
}

#[test]
fn a_resource_or_prompt_result_is_capped_on_its_encoded_length_in_both_eras() {
    let base = engine();
    let result = json!({"contents": [{"uri": "mem://x", "text": big()}]});
    let own_meta = json!({"_meta": {"k": 1}, "messages": [big()]});
    for v in [result, own_meta] {
        let exact = serde_json::to_vec(&v).unwrap().len();
        for era in [Era::Modern, Era::Legacy] {
            for (limit, passes) in [(exact, true), (exact - 1, false)] {
                let engine = Engine::new(
                    McpServerConfig::default().with_max_result_size(limit),
                    base.shared.registry.clone(),
                );
                let scope = scope(&engine, era);
                let answer =
                    engine
                        .shared
                        .results
                        .respond_capped(RequestId::from(3), v.clone(), &scope);
                if passes {
                    let expected =
                        engine
                            .shared
                            .results
                            .respond(RequestId::from(3), Ok(v.clone()), &scope);
                    assert_eq!(answer.to_bytes(), expected.to_bytes(), "{era:?}");
                    continue;
                }
                let OutgoingMessage::Error { id, error } = answer else {
                    panic!("{era:?} {limit}: {answer:?}")
                };
                assert_eq!(id, Some(RequestId::from(3)));
                assert_eq!(error.code, crate::wire::ErrorCode::INTERNAL_ERROR.0);
                assert_eq!(error.data, Some(json!({"max_result_size": limit})));
            }
        }
    }
}

#[test]
fn the_bound_the_cap_trusts_is_never_below_the_encoded_length() {
    let engine = engine();
    let tool = engine.shared.registry.lookup("blocks").unwrap();
    let mut tight = ContentBlock::image("", "");
    if let ContentBlock::Image {
        annotations, meta, ..
    } = &mut tight
    {
        *annotations = Some(Map::new());
        *meta = Some(Map::new());
    }
    let mut cases = outputs();
    cases.push(ToolOutput::content(vec![tight.clone(), tight]));
    cases.push(ToolOutput::content(vec![ContentBlock::text(
        "\u{0}".repeat(100),
    )]));
    cases.push(ToolOutput::from_result(
        crate::schema::McpToolResult::success_value(
            json!({"\u{1}": [-1.7976931348623157e308, i64::MIN, u64::MAX, "\""]}),
        ),
    ));
    for (i, output) in cases.into_iter().enumerate() {
        let result = engine.shared.results.tool_result(&tool, output);
        let mut out = Vec::new();
        let exact = result.write(&mut out, None);
        assert!(
            result.len_bound() >= exact,
            "case {i}: {} < {exact}",
            result.len_bound()
        );
    }
}
