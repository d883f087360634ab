//! The bytes a `tools/call` answer is written as (`OutgoingMessage::write_to`, the one
//! encoder) equal serde_json's serialization of the same message, for every content block
//! kind, structured content, tool errors and protocol errors, 64 KiB strings with escapes and
//! non-ASCII, in both eras.

use serde_json::{Map, Value, json};

use super::*;
use crate::registry::ToolOutput;
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
                if let OutgoingMessage::Response { result, .. } = m {
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
