//! Compact JSON encoding straight into a byte buffer: the one encoder of what leaves the
//! server ([`OutgoingMessage::write_to`](super::OutgoingMessage::write_to) and everything
//! built on it, over every transport).
//!
//! The bytes are exactly those of `serde_json::to_writer` (compact, the same escapes, members
//! in the map's own order); the difference is speed on long strings. serde_json looks every
//! byte of a string up in an escape table (about nine instructions a byte, most of a 64 KiB
//! echo's CPU); here a string is scanned eight bytes at a time for the bytes JSON must escape
//! (`"`, `\` and controls below `0x20`), and the runs between them are copied whole.
//!
//! It is not a serializer for arbitrary `Serialize` types: it writes [`Value`] trees and
//! strings. Numbers are written by serde_json itself, so their text cannot differ.

use serde_json::Value;

/// Appends `value`'s compact JSON encoding to `out`.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_map(out, map),
    }
}

/// Appends an object's compact JSON encoding to `out` (as [`write_value`] writes it).
pub fn write_map(out: &mut Vec<u8>, map: &serde_json::Map<String, Value>) {
    out.push(b'{');
    for (i, (key, item)) in map.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, key);
        out.push(b':');
        write_value(out, item);
    }
    out.push(b'}');
}

/// Appends a number as serde_json writes it.
pub(super) fn write_number(out: &mut Vec<u8>, n: &serde_json::Number) {
    // Writing into a Vec cannot fail; a number has no other failure.
    if serde_json::to_writer(&mut *out, n).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// Appends `s` as a JSON string (quoted and escaped as serde_json escapes it).
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    const SPACES: u64 = u64::from_ne_bytes([0x20; 8]);
    // Whether any byte of `w` is zero: exact as an any-test (a borrow can only mark bytes
    // above a byte that really is zero). `w - 0x20..` does the same for bytes below 0x20.
    let zero_byte = |w: u64| w.wrapping_sub(ONES) & !w & HIGHS != 0;
    let needs_escape = |w: u64| {
        zero_byte(w ^ QUOTES)
            || zero_byte(w ^ BACKSLASHES)
            || w.wrapping_sub(SPACES) & !w & HIGHS != 0
    };
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // `start..i` is a run of bytes that need no escape, not yet copied.
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8)
            && let Ok(word) = <[u8; 8]>::try_from(word)
            && !needs_escape(u64::from_ne_bytes(word))
        {
            i += 8;
            continue;
        }
        // The last few bytes, or a word with something to escape: byte by byte up to the end
        // of this word.
        let end = (i + 8).min(bytes.len());
        while i < end {
            let b = bytes[i];
            if let Some(escaped) = escape(b) {
                out.extend_from_slice(&bytes[start..i]);
                escaped.write(out);
                start = i + 1;
            }
            i += 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// How one byte is escaped.
enum Escape {
    /// A two-byte escape: `\` and this byte.
    Short(u8),
    /// `\u00XX`.
    Unicode(u8),
}

impl Escape {
    fn write(self, out: &mut Vec<u8>) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        match self {
            Self::Short(c) => out.extend_from_slice(&[b'\\', c]),
            Self::Unicode(b) => out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(b >> 4)],
                HEX[usize::from(b & 0xf)],
            ]),
        }
    }
}

/// The escape of `b`, if JSON (as serde_json writes it) escapes it.
fn escape(b: u8) -> Option<Escape> {
    Some(match b {
        b'"' => Escape::Short(b'"'),
        b'\\' => Escape::Short(b'\\'),
        0x08 => Escape::Short(b'b'),
        0x09 => Escape::Short(b't'),
        0x0a => Escape::Short(b'n'),
        0x0c => Escape::Short(b'f'),
        0x0d => Escape::Short(b'r'),
        0x00..=0x1f => Escape::Unicode(b),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ours(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        write_value(&mut out, v);
        out
    }

    #[test]
    fn every_byte_value_is_escaped_as_serde_json_escapes_it_at_every_position() {
        for b in 0u8..=0x7f {
            for len in 0..20 {
                for at in 0..=len {
                    let mut s: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                    s.insert(at, b);
                    let s = String::from_utf8(s).unwrap();
                    let v = Value::String(s);
                    assert_eq!(
                        ours(&v),
                        serde_json::to_vec(&v).unwrap(),
                        "{b:#x} {len} {at}"
                    );
                }
            }
        }
    }

    #[test]
    fn long_strings_with_escapes_and_non_ascii_encode_as_serde_json_does() {
        let mut s = String::new();
        let pieces = [
            "plain text ",
            "\"q\"",
            "\\",
            "\n\r\t",
            "\u{1}\u{1f}\u{7f}",
            "é✓𝄞",
            "</script>",
        ];
        let mut i = 0;
        while s.len() < 64 * 1024 {
            s.push_str(pieces[i % pieces.len()]);
            s.push_str(&"x".repeat(i % 13));
            i += 1;
        }
        for v in [
            Value::String(s.clone()),
            Value::String("y".repeat(64 * 1024)),
            Value::String("é".repeat(32 * 1024)),
            json!({"content": [{"type": "text", "text": s}]}),
        ] {
            assert_eq!(ours(&v), serde_json::to_vec(&v).unwrap());
        }
    }

    #[test]
    fn every_outgoing_message_kind_encodes_as_its_serialize_implementation() {
        use crate::wire::{ErrorCode, ErrorObject, OutgoingMessage, RequestId};
        let big = format!("{}\"\n{}", "é".repeat(40_000), "z".repeat(30_000));
        let messages = vec![
            OutgoingMessage::Response {
                id: RequestId::from(7),
                result: json!({"content": [{"type": "text", "text": big}], "isError": false}),
            },
            OutgoingMessage::Response {
                id: RequestId::from("a\"b\u{1}"),
                result: json!({}),
            },
            OutgoingMessage::Error {
                id: None,
                error: ErrorObject::new(ErrorCode::INVALID_REQUEST, "bad \"x\""),
            },
            OutgoingMessage::Error {
                id: Some(RequestId::from(-3)),
                error: ErrorObject::invalid_params("p").with_data(json!({"k": [1.25]})),
            },
            OutgoingMessage::Notification {
                method: "notifications/message",
                params: json!({"level": "info", "data": "\u{7}"}),
            },
            OutgoingMessage::Request {
                id: RequestId::from(u64::MAX.to_string().as_str()),
                method: "sampling/createMessage",
                params: json!({"messages": []}),
            },
            OutgoingMessage::Batch(vec![]),
        ];
        let batch = OutgoingMessage::Batch(messages.clone());
        for m in messages.iter().chain([&batch]) {
            assert_eq!(m.to_bytes(), serde_json::to_vec(m).unwrap(), "{m:?}");
        }
    }

    #[test]
    fn trees_numbers_and_keys_encode_as_serde_json_does() {
        for v in [
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-17),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.5),
            json!(-1.7976931348623157e308),
            json!(1e-7),
            json!([]),
            json!({}),
            json!([1, "a", null, [], {}]),
            json!({"b": 1, "a": {"\"k\\": ["\u{0}"]}, "": [true, false]}),
        ] {
            assert_eq!(ours(&v), serde_json::to_vec(&v).unwrap(), "{v}");
        }
    }
}
