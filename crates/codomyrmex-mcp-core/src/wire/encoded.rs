//! Results encoded once: [`EncodedResult`], a result object already written as compact JSON,
//! which [`OutgoingMessage::Encoded`](super::OutgoingMessage::Encoded) splices into the
//! outgoing message verbatim, and the writers that produce one from typed parts (content
//! blocks, and an object with pre-encoded members spliced in at their sorted places).
//!
//! The bytes are those `serde_json::to_vec` writes for the same result built as a `Value`
//! (members in sorted order, as `serde_json::Map` keeps them); the tests compare the two. This
//! module writes; what a result holds is the engine's decision.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::ContentBlock;
use super::encode::{Counter, Sink, write_str, write_value};

/// A result object ready to be written into an outgoing message as it is: bytes already
/// encoded (a cached list page, a 2026-07-28 result with its constant members), or a tool's
/// typed result, which is encoded once, straight into the transport's output buffer.
///
/// Made by the engine, or from a `Value` with [`EncodedResult::of`]; it always writes one
/// complete JSON value. Clones of a shared one (a cached page) share the bytes. Two are equal
/// when they write the same bytes.
#[derive(Clone)]
pub struct EncodedResult(Repr);

#[derive(Clone)]
enum Repr {
    Owned(Vec<u8>),
    Shared(Arc<[u8]>),
    /// A tool's result, and the encoded `_meta` of a 2026-07-28 one.
    Tool(Box<ToolResult>, Option<Arc<[u8]>>),
}

impl EncodedResult {
    /// `value`, encoded.
    pub fn of(value: &Value) -> Self {
        let mut out = Vec::new();
        write_value(&mut out, value);
        Self(Repr::Owned(out))
    }

    /// Bytes this crate's writers produced: one complete JSON value.
    pub(crate) fn from_written(bytes: Vec<u8>) -> Self {
        Self(Repr::Owned(bytes))
    }

    /// A tool's result, to be encoded when the message is written (with the 2026-07-28
    /// members when `modern_meta`, the encoded `_meta`, is given).
    pub(crate) fn tool(result: ToolResult, modern_meta: Option<Arc<[u8]>>) -> Self {
        Self(Repr::Tool(Box::new(result), modern_meta))
    }

    /// The same result, held so that clones share its bytes (encoded now if it was not yet).
    pub(crate) fn into_shared(self) -> Self {
        match self.0 {
            Repr::Owned(v) => Self(Repr::Shared(v.into())),
            shared @ Repr::Shared(_) => Self(shared),
            tool @ Repr::Tool(..) => Self(Repr::Shared(Self(tool).to_vec().into())),
        }
    }

    /// Appends the result's encoding to `out`.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match &self.0 {
            Repr::Owned(v) => out.extend_from_slice(v),
            Repr::Shared(a) => out.extend_from_slice(a),
            Repr::Tool(result, meta) => {
                result.write(out, meta.as_deref());
            }
        }
    }

    /// The result's encoding.
    pub fn to_vec(&self) -> Vec<u8> {
        match &self.0 {
            Repr::Owned(v) => v.clone(),
            Repr::Shared(a) => a.to_vec(),
            Repr::Tool(..) => {
                let mut out = Vec::new();
                self.write_to(&mut out);
                out
            }
        }
    }

    /// The length of the bytes already encoded; `None` for a result encoded when written.
    pub(crate) fn encoded_len(&self) -> Option<usize> {
        match &self.0 {
            Repr::Owned(v) => Some(v.len()),
            Repr::Shared(a) => Some(a.len()),
            Repr::Tool(..) => None,
        }
    }

    /// The result as a JSON value, parsed from its encoding (for callers that inspect a
    /// result; the transports write the bytes). An error only for a result nested deeper than
    /// the parser's recursion limit.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_slice(&self.to_vec())
    }
}

impl PartialEq for EncodedResult {
    fn eq(&self, other: &Self) -> bool {
        self.to_vec() == other.to_vec()
    }
}

impl std::fmt::Debug for EncodedResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("EncodedResult")
            .field(&String::from_utf8_lossy(&self.to_vec()))
            .finish()
    }
}

/// `"resultType":"complete"`'s value, which every other 2026-07-28 result carries.
pub(crate) const COMPLETE: &[u8] = br#""complete""#;

/// A tool's output mapped onto `CallToolResult`, typed: what is encoded (or, for a task's
/// record, turned into a value). The engine decides what goes in; this writes it.
#[derive(Debug, Clone)]
pub(crate) struct ToolResult {
    pub(crate) content: Vec<ContentBlock>,
    /// `structuredContent`.
    pub(crate) structured: Option<Value>,
    pub(crate) is_error: bool,
}

impl ToolResult {
    /// The result as a JSON value, the members [`write`](Self::write) encodes (for a task's
    /// record).
    pub(crate) fn into_value(self) -> Value {
        let mut obj = Map::new();
        let blocks = self.content.into_iter().map(ContentBlock::into_value);
        obj.insert("content".into(), Value::Array(blocks.collect()));
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
    pub(crate) fn write<S: Sink>(&self, out: &mut S, modern_meta: Option<&[u8]>) -> usize {
        out.reserve(self.len_hint(modern_meta));
        let start = out.written();
        let mut era = 0;
        out.put_byte(b'{');
        if let Some(meta) = modern_meta {
            let at = out.written();
            out.put(br#""_meta":"#);
            out.put(meta);
            out.put_byte(b',');
            era += out.written() - at;
        }
        out.put(br#""content":"#);
        write_blocks(out, &self.content);
        if self.is_error {
            out.put(br#","isError":true"#);
        }
        if modern_meta.is_some() {
            let at = out.written();
            out.put(br#","resultType":"#);
            out.put(COMPLETE);
            era += out.written() - at;
        }
        if let Some(s) = &self.structured {
            out.put(br#","structuredContent":"#);
            write_value(out, s);
        }
        out.put_byte(b'}');
        out.written() - start - era
    }

    /// The exact length of the encoding without the 2026-07-28 members (what
    /// `max_result_size` bounds) when it is at most `limit`; `None` past it. Counted, never
    /// held: the encoder stops soon after the count passes `limit`.
    pub(crate) fn len_within(&self, limit: usize) -> Option<usize> {
        let mut counter = Counter::until(limit);
        let len = self.write(&mut counter, None);
        (!counter.done() && len <= limit).then_some(len)
    }

    /// About the encoding's length when nothing needs escaping (room to reserve, so that the
    /// buffer is not grown, and copied, part-way).
    pub(crate) fn len_hint(&self, modern_meta: Option<&[u8]>) -> usize {
        let blocks: usize = self.content.iter().map(|b| block_len(b, 1)).sum();
        96 + modern_meta.map_or(0, <[u8]>::len) + blocks
    }

    /// An upper bound of the encoding's length without the 2026-07-28 members: every string
    /// byte escaped as `\u00XX`, counted per string and per node, not per byte. A kind of block
    /// this does not bound counts as `usize::MAX` (so the result is measured exactly).
    pub(crate) fn len_bound(&self) -> usize {
        let blocks = self
            .content
            .iter()
            .fold(0usize, |n, b| n.saturating_add(block_len(b, 6)));
        let structured = self.structured.as_ref().map_or(0, value_len_bound);
        blocks.saturating_add(structured).saturating_add(96)
    }
}

/// A content block's encoded length with each string byte counted `per_byte` times (1: a
/// hint, 6: a bound), plus room for its members' names.
fn block_len(block: &ContentBlock, per_byte: usize) -> usize {
    let maps = |a: &Option<Map<String, Value>>, m: &Option<Map<String, Value>>| {
        let map = |m: &Option<Map<String, Value>>| {
            m.as_ref()
                .map_or(0, |m| if per_byte == 1 { 0 } else { map_len_bound(m) })
        };
        map(a).saturating_add(map(m))
    };
    // Room for the members' names, quotes, braces and the comma after the block: 96 covers
    // the longest (an image or audio block with `_meta` and `annotations`, 65).
    let strings = |s: &[&String]| {
        s.iter().fold(96usize, |n, s| {
            n.saturating_add(s.len().saturating_mul(per_byte))
        })
    };
    match block {
        ContentBlock::Text {
            text,
            annotations,
            meta,
        } => strings(&[text]).saturating_add(maps(annotations, meta)),
        ContentBlock::Image {
            data,
            mime_type,
            annotations,
            meta,
        }
        | ContentBlock::Audio {
            data,
            mime_type,
            annotations,
            meta,
        } => strings(&[data, mime_type]).saturating_add(maps(annotations, meta)),
        _ if per_byte == 1 => 64,
        _ => usize::MAX,
    }
}

/// An upper bound of `value`'s compact encoding: every string byte escaped as `\u00XX`
/// (6 bytes), every number at its longest (24 bytes).
fn value_len_bound(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 24,
        Value::String(s) => s.len().saturating_mul(6).saturating_add(2),
        Value::Array(items) => items.iter().fold(2usize, |n, v| {
            n.saturating_add(value_len_bound(v)).saturating_add(1)
        }),
        Value::Object(map) => map_len_bound(map),
    }
}

fn map_len_bound(map: &Map<String, Value>) -> usize {
    map.iter().fold(2usize, |n, (k, v)| {
        n.saturating_add(k.len().saturating_mul(6).saturating_add(2))
            .saturating_add(value_len_bound(v))
            .saturating_add(2)
    })
}

/// Appends `block` as `write_value(&block.clone().into_value())` would, without building the
/// tree for the common kinds (text, image and audio).
pub fn write_block<S: Sink>(out: &mut S, block: &ContentBlock) {
    // Members in sorted order: `_meta` < `annotations` < `data` < `mimeType` < `text` < `type`.
    fn head<S: Sink>(
        out: &mut S,
        meta: Option<&Map<String, Value>>,
        ann: Option<&Map<String, Value>>,
    ) {
        out.put_byte(b'{');
        if let Some(meta) = meta {
            out.put(br#""_meta":"#);
            super::encode::write_map(out, meta);
            out.put_byte(b',');
        }
        if let Some(ann) = ann {
            out.put(br#""annotations":"#);
            super::encode::write_map(out, ann);
            out.put_byte(b',');
        }
    }
    match block {
        ContentBlock::Text {
            text,
            annotations,
            meta,
        } => {
            head(out, meta.as_ref(), annotations.as_ref());
            out.put(br#""text":"#);
            write_str(out, text);
            out.put(br#","type":"text"}"#);
        }
        ContentBlock::Image {
            data,
            mime_type,
            annotations,
            meta,
        }
        | ContentBlock::Audio {
            data,
            mime_type,
            annotations,
            meta,
        } => {
            head(out, meta.as_ref(), annotations.as_ref());
            out.put(br#""data":"#);
            write_str(out, data);
            out.put(br#","mimeType":"#);
            write_str(out, mime_type);
            out.put(if matches!(block, ContentBlock::Image { .. }) {
                br#","type":"image"}"#
            } else {
                br#","type":"audio"}"#
            });
        }
        other => write_value(out, &other.clone().into_value()),
    }
}

/// Appends `blocks` as a JSON array of [`write_block`]s.
pub fn write_blocks<S: Sink>(out: &mut S, blocks: &[ContentBlock]) {
    out.put_byte(b'[');
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.put_byte(b',');
        }
        if S::STOPS && out.done() {
            return;
        }
        write_block(out, block);
    }
    out.put_byte(b']');
}

/// Appends `map` as a JSON object with `extras` (member name, encoded value) written among its
/// members at their sorted places, as if they had been inserted into the map. `extras` must be
/// sorted by name and name no member of `map` (the caller checks). Returns how many bytes the
/// extras took, separators included.
pub fn write_object_with<S: Sink>(
    out: &mut S,
    map: &Map<String, Value>,
    extras: &[(&str, &[u8])],
) -> usize {
    let mut members = 0usize;
    let mut extra_bytes = 0;
    let mut name = |out: &mut S, name: &str| {
        if members > 0 {
            out.put_byte(b',');
        }
        members += 1;
        write_str(out, name);
        out.put_byte(b':');
    };
    let mut pending = extras.iter().peekable();
    out.put_byte(b'{');
    for (key, item) in map {
        while let Some((extra, value)) = pending.next_if(|(extra, _)| *extra < key.as_str()) {
            let at = out.written();
            name(out, extra);
            out.put(value);
            extra_bytes += out.written() - at;
        }
        name(out, key);
        write_value(out, item);
    }
    for (extra, value) in pending {
        let at = out.written();
        name(out, extra);
        out.put(value);
        extra_bytes += out.written() - at;
    }
    out.put_byte(b'}');
    // Each extra costs its member and one comma. An extra written first put no comma before
    // itself, but made the next member write one: the total is the same, except when there is
    // no member of the map at all (then the first extra's comma is not there).
    let first_extra_first = !extras.is_empty()
        && map
            .keys()
            .next()
            .is_none_or(|k| extras.first().is_some_and(|(e, _)| *e < k.as_str()));
    if first_extra_first && !map.is_empty() {
        extra_bytes + 1
    } else {
        extra_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_encode_as_their_values_do() {
        let mut annotated = ContentBlock::text("hi \"there\"\n");
        if let ContentBlock::Text {
            annotations, meta, ..
        } = &mut annotated
        {
            *annotations = Some(Map::from_iter([("priority".to_owned(), json!(1))]));
            *meta = Some(Map::from_iter([("k".to_owned(), json!("v"))]));
        }
        let mut image = ContentBlock::image("aGk=", "image/png");
        if let ContentBlock::Image { meta, .. } = &mut image {
            *meta = Some(Map::new());
        }
        let blocks = vec![
            ContentBlock::text("a"),
            ContentBlock::text(""),
            annotated,
            image,
            ContentBlock::audio("aGk=", "audio/wav"),
            ContentBlock::resource_link("file:///x", "x"),
            ContentBlock::embedded(super::super::ResourceContents::Text {
                uri: "u".into(),
                mime_type: None,
                text: "t".into(),
                meta: None,
            }),
        ];
        for block in &blocks {
            let mut out = Vec::new();
            write_block(&mut out, block);
            assert_eq!(
                out,
                serde_json::to_vec(&block.clone().into_value()).unwrap()
            );
        }
        let mut out = Vec::new();
        write_blocks(&mut out, &blocks);
        let values: Vec<Value> = blocks.into_iter().map(ContentBlock::into_value).collect();
        assert_eq!(out, serde_json::to_vec(&values).unwrap());
    }

    #[test]
    fn spliced_members_land_where_the_map_would_sort_them() {
        let extras: [(&str, &[u8]); 2] = [("_meta", br#"{"s":1}"#), ("resultType", br#""x""#)];
        for map in [
            json!({}),
            json!({"A": 1}),
            json!({"Z": 1, "a": 2}),
            json!({"content": [], "isError": true, "structuredContent": {"k": "v"}}),
            json!({"tools": [], "ttlMs": 5, "nextCursor": "ab", "cacheScope": "public"}),
            json!({"zzz": 1}),
            json!({"_": 0, "_metb": 0, "resultTypf": 0}),
        ] {
            let Value::Object(map) = map else { panic!() };
            let mut out = Vec::new();
            let extra = write_object_with(&mut out, &map, &extras);
            let mut merged = map.clone();
            merged.insert("_meta".into(), json!({"s": 1}));
            merged.insert("resultType".into(), json!("x"));
            assert_eq!(
                String::from_utf8(out.clone()).unwrap(),
                serde_json::to_string(&merged).unwrap()
            );
            let plain = serde_json::to_vec(&map).unwrap().len();
            assert_eq!(out.len() - extra, plain, "{map:?}");
            let mut bare = Vec::new();
            assert_eq!(write_object_with(&mut bare, &map, &[]), 0);
            assert_eq!(bare, serde_json::to_vec(&map).unwrap());
        }
    }

    #[test]
    fn an_encoded_result_reads_back_as_its_value() {
        let v = json!({"content": [{"type": "text", "text": "é\u{1}"}]});
        let e = EncodedResult::of(&v);
        assert_eq!(e.to_vec(), serde_json::to_vec(&v).unwrap());
        assert_eq!(e.to_value().unwrap(), v);
        let shared = e.clone().into_shared();
        assert_eq!(shared, EncodedResult::of(&v).into_shared());
        assert_eq!(shared.to_vec(), e.to_vec());
        let tool = ToolResult {
            content: vec![ContentBlock::text("é\u{1}")],
            structured: None,
            is_error: false,
        };
        let typed = EncodedResult::tool(tool, None);
        assert_eq!(typed.encoded_len(), None);
        assert_eq!(typed, e);
        assert_eq!(
            typed.clone().into_shared().encoded_len(),
            Some(e.to_vec().len())
        );
    }

    #[test]
    fn measuring_an_oversized_result_stops_soon_after_the_limit() {
        use super::super::encode::CHUNK;
        let big = |text: String| ToolResult {
            content: vec![ContentBlock::text(text)],
            structured: Some(json!({"k": "v"})),
            is_error: false,
        };
        // 10 MB without escapes, with escapes only, and over many blocks: each measured
        // against 1 KiB is given at most the limit and about one chunk, never its encoding.
        let plain = big("x".repeat(10 << 20));
        let escaped = big("\n".repeat(5 << 20));
        let many = ToolResult {
            content: (0..100_000)
                .map(|_| ContentBlock::text("y".repeat(100)))
                .collect(),
            structured: None,
            is_error: false,
        };
        for result in [&plain, &escaped, &many] {
            let mut counter = Counter::until(1024);
            result.write(&mut counter, None);
            assert!(counter.done());
            let given = counter.written();
            assert!(given <= 1024 + CHUNK + 128, "{given}");
            assert_eq!(result.len_within(1024), None);
        }
        // At and around the limit the length is exact, as a buffer measures it.
        for text in ["", "a", "é\"\u{1}", &"z".repeat(3 * CHUNK + 5)] {
            let result = big(text.to_owned());
            let mut out = Vec::new();
            let exact = result.write(&mut out, None);
            assert_eq!(exact, out.len());
            assert_eq!(result.len_within(exact), Some(exact));
            assert_eq!(result.len_within(exact - 1), None);
            assert_eq!(result.len_within(usize::MAX), Some(exact));
        }
    }
}
