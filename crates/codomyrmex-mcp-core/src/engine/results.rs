//! Shaping results: what every result of an era carries, cacheable list results, a tool's
//! typed result encoded once, and capping results at `max_result_size`.
//!
//! A 2026-07-28 result's constant members (`_meta` with the server's identity, and
//! `resultType`) are encoded once per engine and spliced into each result as it is encoded
//! ([`Engine::respond`]); a tool's result goes from its typed parts ([`ToolResult`]) straight
//! to bytes, and its size is the length of those bytes.

use serde_json::{Map, Value, json};

use super::*;
use crate::registry::{RegisteredTool, ToolOutput};
use crate::schema::McpErrorDetail;
use crate::wire::encode::write_value;
use crate::wire::encoded::{write_blocks, write_object_with};
use crate::wire::{ContentBlock, EncodedResult, Era, ErrorObject, OutgoingMessage, RequestId};

/// `"resultType":"complete"`'s value, which every other 2026-07-28 result carries.
const COMPLETE: &[u8] = br#""complete""#;

/// The `_meta` object every 2026-07-28 result carries (the server's identity), encoded: made
/// once per engine, from what the engine never changes.
pub(super) fn modern_meta(server_info_meta: &Value) -> Box<[u8]> {
    let mut meta = Map::new();
    meta.insert(META_SERVER_INFO.into(), server_info_meta.clone());
    EncodedResult::of(&Value::Object(meta)).as_bytes().into()
}

/// A tool's output mapped onto `CallToolResult`, typed: what is encoded (or, for a task's
/// record, turned into a value).
#[derive(Debug)]
pub(super) struct ToolResult {
    pub(super) content: Vec<ContentBlock>,
    /// `structuredContent`.
    pub(super) structured: Option<Value>,
    pub(super) is_error: bool,
}

impl ToolResult {
    /// The result as a JSON value, the members [`write`](Self::write) encodes (for a task's
    /// record).
    pub(super) fn into_value(self) -> Value {
        let mut obj = Map::new();
        obj.insert("content".into(), blocks_value(self.content));
        if self.is_error {
            obj.insert("isError".into(), Value::Bool(true));
        }
        if let Some(s) = self.structured {
            obj.insert("structuredContent".into(), s);
        }
        Value::Object(obj)
    }

    /// Appends the result's encoding, with the 2026-07-28 members when `modern_meta` is given
    /// (members in sorted order, as the value's encoding has them). Returns the length of the
    /// result without those members: what `max_result_size` bounds.
    fn write(&self, out: &mut Vec<u8>, modern_meta: Option<&[u8]>) -> usize {
        let start = out.len();
        let mut era = 0;
        out.push(b'{');
        if let Some(meta) = modern_meta {
            let at = out.len();
            out.extend_from_slice(br#""_meta":"#);
            out.extend_from_slice(meta);
            out.push(b',');
            era += out.len() - at;
        }
        out.extend_from_slice(br#""content":"#);
        write_blocks(out, &self.content);
        if self.is_error {
            out.extend_from_slice(br#","isError":true"#);
        }
        if modern_meta.is_some() {
            let at = out.len();
            out.extend_from_slice(br#","resultType":"#);
            out.extend_from_slice(COMPLETE);
            era += out.len() - at;
        }
        if let Some(s) = &self.structured {
            out.extend_from_slice(br#","structuredContent":"#);
            write_value(out, s);
        }
        out.push(b'}');
        out.len() - start - era
    }
}

impl Engine {
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
        let Value::Object(obj) = &result else {
            return EncodedResult::of(&result);
        };
        if scope.era != Era::Modern || obj.contains_key("_meta") {
            // Its own `_meta` gets the server's identity added: rare, built as a value.
            return EncodedResult::of(&self.finish_result(result, scope));
        }
        let meta: &[u8] = &self.shared.modern_meta;
        let mut out = Vec::with_capacity(128 + meta.len());
        if obj.contains_key("resultType") {
            write_object_with(&mut out, obj, &[("_meta", meta)]);
        } else {
            write_object_with(&mut out, obj, &[("_meta", meta), ("resultType", COMPLETE)]);
        }
        EncodedResult::from_written(out)
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
                meta.insert(
                    META_SERVER_INFO.into(),
                    self.shared.server_info_meta.clone(),
                );
            }
        }
        Value::Object(obj)
    }

    /// The response to a `tools/call` whose tool produced `output`: its result encoded once,
    /// for the era.
    pub(super) fn tool_response(
        &self,
        id: RequestId,
        tool: &RegisteredTool,
        name: &str,
        output: ToolOutput,
        scope: &RequestScope,
    ) -> OutgoingMessage {
        let (_, bytes) = self.capped_tool_result(tool, name, output, scope);
        OutgoingMessage::Encoded {
            id,
            result: EncodedResult::from_written(bytes),
        }
    }

    /// A tool's result and its encoding for the era, or a `RESULT_TOO_LARGE` failure in its
    /// place when the result (without the era's constant members) encodes to more than
    /// `max_result_size` bytes. Measured on the bytes written, once.
    pub(super) fn capped_tool_result(
        &self,
        tool: &RegisteredTool,
        name: &str,
        output: ToolOutput,
        scope: &RequestScope,
    ) -> (ToolResult, Vec<u8>) {
        let limit = self.shared.config.max_result_size;
        let meta = (scope.era == Era::Modern).then_some(&*self.shared.modern_meta);
        let result = self.call_tool_result(tool, output, scope);
        let mut out = Vec::new();
        if result.write(&mut out, meta) <= limit {
            return (result, out);
        }
        tracing::warn!(tool = %name, limit, "a tool result exceeded max_result_size");
        drop(result);
        out.clear();
        out.shrink_to(256);
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
        let result = self.call_tool_result(tool, ToolOutput::failure(detail), scope);
        result.write(&mut out, meta);
        (result, out)
    }

    pub(super) fn cacheable(&self, mut obj: Map<String, Value>, scope: &RequestScope) -> Value {
        if scope.era == Era::Modern {
            let ttl = u64::try_from(self.shared.config.list_ttl.as_millis()).unwrap_or(u64::MAX);
            obj.insert("ttlMs".into(), json!(ttl));
            obj.insert(
                "cacheScope".into(),
                json!(self.shared.config.cache_scope.as_str()),
            );
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

    /// A resource or prompt result, or `-32603` when its encoding exceeds `max_result_size`.
    pub(super) fn cap_result(&self, result: Value) -> Result<Value, ErrorObject> {
        let limit = self.shared.config.max_result_size;
        if encodes_within(&result, limit) {
            return Ok(result);
        }
        Err(ErrorObject::internal(format!(
            "The result is larger than the server's limit of {limit} bytes (max_result_size)"
        ))
        .with_data(json!({"max_result_size": limit})))
    }
}

/// Content blocks as a JSON array, moving their text.
pub(super) fn blocks_value(blocks: Vec<ContentBlock>) -> Value {
    Value::Array(blocks.into_iter().map(ContentBlock::into_value).collect())
}

/// Whether `value`'s compact JSON encoding is at most `limit` bytes. A walk of the tree that
/// counts nodes, not bytes, settles almost every case; only a value that might be over the
/// limit is measured exactly.
pub(super) fn encodes_within(value: &Value, limit: usize) -> bool {
    encoded_len_bound(value) <= limit || encoded_len_within(value, limit).is_some()
}

/// An upper bound of `value`'s compact JSON encoding: every string byte escaped as `\u00XX`
/// (6 bytes) and every number at its longest (24 bytes).
pub(super) fn encoded_len_bound(value: &Value) -> usize {
    let string = |s: &str| s.len().saturating_mul(6).saturating_add(2);
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(s) => string(s),
        Value::Array(items) => items.iter().fold(2usize, |n, v| {
            n.saturating_add(encoded_len_bound(v)).saturating_add(1)
        }),
        Value::Object(map) => map.iter().fold(2usize, |n, (k, v)| {
            n.saturating_add(string(k))
                .saturating_add(encoded_len_bound(v))
                .saturating_add(2)
        }),
    }
}

/// The length of `value`'s compact JSON encoding if it is at most `limit` bytes. Counts
/// without allocating and stops as soon as the limit is passed.
pub(super) fn encoded_len_within(value: &Value, limit: usize) -> Option<usize> {
    struct Counter {
        written: usize,
        limit: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.written = self.written.saturating_add(buf.len());
            if self.written > self.limit {
                return Err(std::io::Error::other("over the limit"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { written: 0, limit };
    serde_json::to_writer(&mut counter, value).ok()?;
    Some(counter.written)
}

#[cfg(test)]
#[path = "encoding_tests.rs"]
mod encoding_tests;

#[cfg(test)]
mod result_size_tests {
    use super::*;

    #[test]
    fn encoded_length_is_exact_up_to_the_limit() {
        let v = json!({"content": [{"type": "text", "text": "x".repeat(100)}]});
        let exact = serde_json::to_vec(&v).map(|b| b.len()).unwrap_or_default();
        assert_eq!(encoded_len_within(&v, exact), Some(exact));
        assert_eq!(encoded_len_within(&v, usize::MAX), Some(exact));
        assert_eq!(encoded_len_within(&v, exact - 1), None);
        assert_eq!(encoded_len_within(&json!(null), 3), None);
    }

    #[test]
    fn the_quick_bound_is_never_below_the_exact_length() {
        for v in [
            json!(null),
            json!(true),
            json!(-1.7976931348623157e308),
            json!(u64::MAX),
            json!("\u{0}\u{1f}\"\\é✓"),
            json!({"a": [1, {"b": "\n"}], "": []}),
        ] {
            let exact = serde_json::to_vec(&v).unwrap().len();
            assert!(encoded_len_bound(&v) >= exact, "{v}");
            assert!(encodes_within(&v, exact));
            assert!(!encodes_within(&v, exact - 1));
        }
    }

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

    #[tokio::test]
    async fn an_oversized_tool_result_becomes_a_result_too_large_failure() {
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
                |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!({"ok": 1})) },
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
    }
}
