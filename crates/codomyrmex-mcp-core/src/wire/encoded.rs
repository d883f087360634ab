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
use super::encode::{write_str, write_value};

/// A result object already encoded as compact JSON, written into the outgoing message as it is.
///
/// Made by the engine (a tool call's result, a cached list page, any 2026-07-28 result) or
/// from a `Value` with [`EncodedResult::of`]; it always holds one complete JSON value.
/// Clones of a shared one (a cached page) share the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct EncodedResult(Repr);

#[derive(Clone, PartialEq, Eq)]
enum Repr {
    Owned(Vec<u8>),
    Shared(Arc<[u8]>),
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

    /// The same bytes, held so that clones share them (one copy now, none per clone).
    pub(crate) fn into_shared(self) -> Self {
        match self.0 {
            Repr::Owned(v) => Self(Repr::Shared(v.into())),
            shared @ Repr::Shared(_) => Self(shared),
        }
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Owned(v) => v,
            Repr::Shared(a) => a,
        }
    }

    /// The encoding's length in bytes.
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Whether there are no bytes (never, for a result the engine made).
    pub fn is_empty(&self) -> bool {
        self.as_bytes().is_empty()
    }

    /// The result as a JSON value, parsed from the bytes (for callers that inspect a result;
    /// the transports write the bytes). An error only for a result nested deeper than the
    /// parser's recursion limit.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_slice(self.as_bytes())
    }
}

impl std::fmt::Debug for EncodedResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("EncodedResult")
            .field(&String::from_utf8_lossy(self.as_bytes()))
            .finish()
    }
}

/// Appends `block` as `write_value(&block.clone().into_value())` would, without building the
/// tree for the common kinds (text, image and audio).
pub fn write_block(out: &mut Vec<u8>, block: &ContentBlock) {
    // Members in sorted order: `_meta` < `annotations` < `data` < `mimeType` < `text` < `type`.
    fn head(
        out: &mut Vec<u8>,
        meta: Option<&Map<String, Value>>,
        ann: Option<&Map<String, Value>>,
    ) {
        out.push(b'{');
        if let Some(meta) = meta {
            out.extend_from_slice(br#""_meta":"#);
            super::encode::write_map(out, meta);
            out.push(b',');
        }
        if let Some(ann) = ann {
            out.extend_from_slice(br#""annotations":"#);
            super::encode::write_map(out, ann);
            out.push(b',');
        }
    }
    match block {
        ContentBlock::Text {
            text,
            annotations,
            meta,
        } => {
            head(out, meta.as_ref(), annotations.as_ref());
            out.extend_from_slice(br#""text":"#);
            write_str(out, text);
            out.extend_from_slice(br#","type":"text"}"#);
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
            out.extend_from_slice(br#""data":"#);
            write_str(out, data);
            out.extend_from_slice(br#","mimeType":"#);
            write_str(out, mime_type);
            out.extend_from_slice(if matches!(block, ContentBlock::Image { .. }) {
                br#","type":"image"}"#
            } else {
                br#","type":"audio"}"#
            });
        }
        other => write_value(out, &other.clone().into_value()),
    }
}

/// Appends `blocks` as a JSON array of [`write_block`]s.
pub fn write_blocks(out: &mut Vec<u8>, blocks: &[ContentBlock]) {
    out.push(b'[');
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_block(out, block);
    }
    out.push(b']');
}

/// Appends `map` as a JSON object with `extras` (member name, encoded value) written among its
/// members at their sorted places, as if they had been inserted into the map. `extras` must be
/// sorted by name and name no member of `map` (the caller checks). Returns how many bytes the
/// extras took, separators included.
pub fn write_object_with(
    out: &mut Vec<u8>,
    map: &Map<String, Value>,
    extras: &[(&str, &[u8])],
) -> usize {
    let mut members = 0usize;
    let mut extra_bytes = 0;
    let mut name = |out: &mut Vec<u8>, name: &str| {
        if members > 0 {
            out.push(b',');
        }
        members += 1;
        write_str(out, name);
        out.push(b':');
    };
    let mut pending = extras.iter().peekable();
    out.push(b'{');
    for (key, item) in map {
        while let Some((extra, value)) = pending.next_if(|(extra, _)| *extra < key.as_str()) {
            let at = out.len();
            name(out, extra);
            out.extend_from_slice(value);
            extra_bytes += out.len() - at;
        }
        name(out, key);
        write_value(out, item);
    }
    for (extra, value) in pending {
        let at = out.len();
        name(out, extra);
        out.extend_from_slice(value);
        extra_bytes += out.len() - at;
    }
    out.push(b'}');
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
        assert_eq!(e.as_bytes(), serde_json::to_vec(&v).unwrap());
        assert_eq!(e.to_value().unwrap(), v);
        let shared = e.clone().into_shared();
        assert_eq!(shared, EncodedResult::of(&v).into_shared());
        assert_eq!(shared.as_bytes(), e.as_bytes());
        assert!(!shared.is_empty());
    }
}
