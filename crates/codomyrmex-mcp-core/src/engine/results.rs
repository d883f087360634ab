//! Shaping results: what every result of an era carries, cacheable list results, a tool's
//! typed result encoded once, and capping results at `max_result_size`.
//!
//! A 2026-07-28 result's constant members (`_meta` with the server's identity, and
//! `resultType`) are encoded once per engine and spliced into each result as it is encoded
//! ([`Results::respond`]); a tool's result goes from its typed parts ([`ToolResult`]) straight
//! to bytes in the transport's buffer, capped by a per-string bound of its length, or, near
//! the limit, by its encoding's length, counted (the encoder writing into a
//! [`Counter`](crate::wire::encode::Counter)), never held. It is not the encoder (`wire`).

use serde_json::{Map, Value, json};

use super::*;
use crate::registry::{RegisteredTool, ToolOutput};
use crate::schema::McpErrorDetail;
use crate::wire::encoded::{COMPLETE, ToolResult, write_object_with};
use crate::wire::{ContentBlock, EncodedResult, Era, ErrorObject, OutgoingMessage, RequestId};

/// The `_meta` object every 2026-07-28 result carries (the server's identity), encoded: made
/// once per engine, from what the engine never changes.
fn modern_meta(server_info_meta: &Value) -> Arc<[u8]> {
    let mut meta = Map::new();
    meta.insert(META_SERVER_INFO.into(), server_info_meta.clone());
    EncodedResult::of(&Value::Object(meta)).to_vec().into()
}

/// How results are shaped and capped: what every result of an era carries, and the bounds
/// and cache hints of the configuration. Made once per engine, never changed.
pub(super) struct Results {
    /// `{"name", "version"}` of the server, as every modern result's `_meta` carries it.
    server_info_meta: Value,
    /// The `_meta` object of every modern result (`server_info_meta` under its key),
    /// encoded once.
    modern_meta: Arc<[u8]>,
    /// `max_result_size`: the longest encoding of a result sent.
    max_result_size: usize,
    /// `ttlMs` of cacheable (list) results.
    list_ttl: std::time::Duration,
    /// `cacheScope` of cacheable (list) results.
    cache_scope: &'static str,
}

impl Results {
    /// The shaping `config` calls for, for a server named as `server_info` says.
    pub(super) fn new(config: &McpServerConfig, server_info: &Implementation) -> Self {
        let server_info_meta = json!({"name": server_info.name, "version": server_info.version});
        Self {
            modern_meta: modern_meta(&server_info_meta),
            server_info_meta,
            max_result_size: config.max_result_size,
            list_ttl: config.list_ttl,
            cache_scope: config.cache_scope.as_str(),
        }
    }

    /// The response to request `id`: its result, finished for the era, or its error. A
    /// 2026-07-28 result is encoded here, with the era's constant members spliced in.
    pub(super) fn respond(
        &self,
        id: RequestId,
        result: Result<Value, ErrorObject>,
        scope: &RequestScope,
    ) -> OutgoingMessage {
        match result {
            Ok(result) if scope.era == Era::Modern => OutgoingMessage::Encoded {
                id,
                result: self.encode_finished(result, scope),
            },
            Ok(result) => OutgoingMessage::Response { id, result },
            Err(error) => OutgoingMessage::Error {
                id: Some(id),
                error,
            },
        }
    }

    /// `result` finished for the era ([`finish_result`](Self::finish_result)), encoded.
    pub(super) fn encode_finished(&self, result: Value, scope: &RequestScope) -> EncodedResult {
        self.encode_finished_measured(result, scope).0
    }

    /// [`encode_finished`](Self::encode_finished), and the length of the result's encoding
    /// without the era's members (what `max_result_size` bounds).
    fn encode_finished_measured(
        &self,
        result: Value,
        scope: &RequestScope,
    ) -> (EncodedResult, usize) {
        let Value::Object(obj) = &result else {
            let encoded = EncodedResult::of(&result);
            let len = encoded.encoded_len().unwrap_or_default();
            return (encoded, len);
        };
        if scope.era != Era::Modern {
            let encoded = EncodedResult::of(&result);
            let len = encoded.encoded_len().unwrap_or_default();
            return (encoded, len);
        }
        if obj.contains_key("_meta") {
            // Its own `_meta` gets the server's identity added: rare, built as a value (and
            // measured before, as it came).
            let len = EncodedResult::of(&result).encoded_len().unwrap_or_default();
            return (EncodedResult::of(&self.finish_result(result, scope)), len);
        }
        let meta: &[u8] = &self.modern_meta;
        let mut out = Vec::with_capacity(128 + meta.len());
        let extra = if obj.contains_key("resultType") {
            write_object_with(&mut out, obj, &[("_meta", meta)])
        } else {
            write_object_with(&mut out, obj, &[("_meta", meta), ("resultType", COMPLETE)])
        };
        let len = out.len() - extra;
        (EncodedResult::from_written(out), len)
    }

    /// The response to request `id` with a resource's or prompt's `result`, or `-32603` when
    /// its encoding exceeds `max_result_size`. Measured on the bytes written, once.
    pub(super) fn respond_capped(
        &self,
        id: RequestId,
        result: Value,
        scope: &RequestScope,
    ) -> OutgoingMessage {
        let limit = self.max_result_size;
        let (encoded, len) = self.encode_finished_measured(result, scope);
        if len <= limit {
            return OutgoingMessage::Encoded {
                id,
                result: encoded,
            };
        }
        drop(encoded);
        OutgoingMessage::Error {
            id: Some(id),
            error: ErrorObject::internal(format!(
                "The result is larger than the server's limit of {limit} bytes (max_result_size)"
            ))
            .with_data(json!({"max_result_size": limit})),
        }
    }

    /// Adds what every result of the request's era carries.
    pub(super) fn finish_result(&self, result: Value, scope: &RequestScope) -> Value {
        let Value::Object(mut obj) = result else {
            return result;
        };
        if scope.era == Era::Modern {
            obj.entry("resultType").or_insert_with(|| json!("complete"));
            let meta = obj
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert(META_SERVER_INFO.into(), self.server_info_meta.clone());
            }
        }
        Value::Object(obj)
    }

    /// The response to a `tools/call` whose tool produced `output`: its typed result, which
    /// the transport encodes once, straight into its output buffer. Over `max_result_size`, a
    /// `RESULT_TOO_LARGE` failure in its place ([`cap`](Self::cap)).
    pub(super) fn tool_response(
        &self,
        id: RequestId,
        tool: &RegisteredTool,
        name: &str,
        output: ToolOutput,
        scope: &RequestScope,
    ) -> OutgoingMessage {
        let result = self.cap(tool, name, self.tool_result(tool, output));
        let meta = (scope.era == Era::Modern).then(|| self.modern_meta.clone());
        OutgoingMessage::Encoded {
            id,
            result: EncodedResult::tool(result, meta),
        }
    }

    /// A tool's result and its encoding for the era, or a `RESULT_TOO_LARGE` failure in its
    /// place ([`cap`](Self::cap)).
    pub(super) fn capped_tool_result(
        &self,
        tool: &RegisteredTool,
        name: &str,
        output: ToolOutput,
        scope: &RequestScope,
    ) -> (ToolResult, Vec<u8>) {
        let result = self.cap(tool, name, self.tool_result(tool, output));
        let meta = (scope.era == Era::Modern).then_some(&*self.modern_meta);
        let mut out = Vec::with_capacity(result.len_hint(meta));
        result.write(&mut out, meta);
        (result, out)
    }

    /// `result`, or the `RESULT_TOO_LARGE` failure in its place when it (without the era's
    /// constant members) encodes to more than `max_result_size` bytes. When a bound of the
    /// encoding (each string at six bytes a byte, counted per string, not per byte) is within
    /// the limit, nothing is measured; otherwise the encoding is counted, never held, and the
    /// count stops soon after it passes the limit.
    fn cap(&self, tool: &RegisteredTool, name: &str, result: ToolResult) -> ToolResult {
        let limit = self.max_result_size;
        if result.len_bound() <= limit || result.len_within(limit).is_some() {
            return result;
        }
        tracing::warn!(tool = %name, limit, "a tool result exceeded max_result_size");
        drop(result);
        let detail = McpErrorDetail::new(
            "RESULT_TOO_LARGE",
            format!(
                "Tool {name} returned a result larger than the server's limit of {limit} bytes (max_result_size); it was discarded"
            ),
        )
        .with_details(Map::from_iter([(
            "max_result_size".to_owned(),
            json!(limit),
        )]));
        self.tool_result(tool, ToolOutput::failure(detail))
    }

    pub(super) fn cacheable(&self, mut obj: Map<String, Value>, scope: &RequestScope) -> Value {
        if scope.era == Era::Modern {
            let ttl = u64::try_from(self.list_ttl.as_millis()).unwrap_or(u64::MAX);
            obj.insert("ttlMs".into(), json!(ttl));
            obj.insert("cacheScope".into(), json!(self.cache_scope));
        }
        Value::Object(obj)
    }

    pub(super) fn page_result(
        &self,
        key: &str,
        items: Vec<Value>,
        next: Option<String>,
        scope: &RequestScope,
    ) -> Value {
        let mut obj = Map::new();
        obj.insert(key.into(), Value::Array(items));
        if let Some(next) = next {
            obj.insert("nextCursor".into(), json!(encode_cursor(&next)));
        }
        self.cacheable(obj, scope)
    }

    /// Maps a tool's output onto `CallToolResult`.
    pub(super) fn tool_result(&self, tool: &RegisteredTool, output: ToolOutput) -> ToolResult {
        let ToolOutput { result, content } = output;
        if result.is_failure() {
            let detail = result.error().cloned().unwrap_or_else(|| {
                McpErrorDetail::new("InternalError", "the tool failed without detail")
            });
            let mut text = format!("{}: {}", detail.error_type, detail.error_message);
            if let Some(details) = &detail.error_details
                && let Ok(d) = serde_json::to_string(details)
            {
                text.push_str("\nDetails: ");
                text.push_str(&d);
            }
            // A failure whose content the handler wrote itself is sent as written.
            let written = content.is_some();
            let content = content.unwrap_or_else(|| vec![ContentBlock::text(text)]);
            let structured = if tool.definition.output_schema.is_none() && !written {
                serde_json::to_value(&detail).ok()
            } else {
                None
            };
            return ToolResult {
                content,
                structured,
                is_error: true,
            };
        }
        // Taken apart: the data moves into `structuredContent` rather than being copied.
        let parts = result.into_parts();
        let blocks = match content {
            Some(blocks) => blocks,
            None => {
                let mut blocks = Vec::with_capacity(2);
                if let Some(data) = &parts.data {
                    blocks.push(ContentBlock::text(
                        serde_json::to_string(data).unwrap_or_default(),
                    ));
                }
                if let Some(explanation) = parts.explanation {
                    blocks.push(ContentBlock::text(explanation));
                }
                blocks
            }
        };
        ToolResult {
            content: blocks,
            structured: parts.data.map(Value::Object),
            is_error: false,
        }
    }
}

#[cfg(test)]
#[path = "encoding_tests.rs"]
mod encoding_tests;

#[cfg(test)]
mod result_size_tests {
    use super::*;
    use crate::wire::ContentBlock;

    #[test]
    fn moved_content_blocks_equal_their_serde_encoding() {
        let mut annotated = ContentBlock::text("hi");
        if let ContentBlock::Text {
            annotations, meta, ..
        } = &mut annotated
        {
            *annotations = Some(Map::from_iter([("priority".to_owned(), json!(1))]));
            *meta = Some(Map::from_iter([("k".to_owned(), json!("v"))]));
        }
        for block in [
            ContentBlock::text("a \"quoted\" text"),
            annotated,
            ContentBlock::image("aGk=", "image/png"),
            ContentBlock::audio("aGk=", "audio/wav"),
            ContentBlock::resource_link("file:///x", "x"),
        ] {
            assert_eq!(
                block.clone().into_value(),
                serde_json::to_value(&block).unwrap()
            );
        }
    }

    #[test]
    fn an_oversized_tool_result_becomes_a_result_too_large_failure() {
        crate::test_runtime::run(async {
            let registry = Arc::new(McpToolRegistry::new());
            registry
                .register(
                    "big",
                    json!({"type": "object"}),
                    |_: Map<String, Value>| -> Result<Value, McpErrorDetail> {
                        Ok(json!({"blob": "x".repeat(10_000)}))
                    },
                )
                .unwrap();
            registry
                .register(
                    "small",
                    json!({"type": "object"}),
                    |_: Map<String, Value>| -> Result<Value, McpErrorDetail> {
                        Ok(json!({"ok": 1}))
                    },
                )
                .unwrap();
            let engine = Engine::new(
                McpServerConfig::default()
                    .with_rate_limit(None)
                    .with_max_result_size(4096),
                registry,
            );
            let session = engine.new_session();
            let sink: Arc<dyn MessageSink> = Arc::new(crate::context::NullSink);
            let call = |name: &str| {
                let meta = json!({
                    META_PROTOCOL_VERSION: "2026-07-28",
                    META_CLIENT_CAPABILITIES: {},
                });
                IncomingMessage::Request {
                    id: RequestId::from(1),
                    method: "tools/call".into(),
                    params: json!({"name": name, "_meta": meta}).as_object().cloned(),
                }
            };
            let answer = engine
                .handle(&session, call("big"), &sink)
                .into_message()
                .await;
            let Some(result) = answer.as_ref().and_then(OutgoingMessage::result_value) else {
                panic!("a response expected: {answer:?}")
            };
            assert_eq!(result["isError"], json!(true));
            assert_eq!(
                result["structuredContent"]["error_type"],
                "RESULT_TOO_LARGE"
            );
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            assert!(text.contains("max_result_size"), "{text}");
            assert!(serde_json::to_vec(&result).unwrap().len() < 4096);
            let answer = engine
                .handle(&session, call("small"), &sink)
                .into_message()
                .await;
            let Some(result) = answer.as_ref().and_then(OutgoingMessage::result_value) else {
                panic!("a response expected: {answer:?}")
            };
            assert_eq!(result["structuredContent"], json!({"ok": 1}));
            assert_eq!(session.in_flight(), 0);
        });
    }
}
