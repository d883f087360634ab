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
//!
//! It writes into a [`Sink`]: a `Vec<u8>` (the bytes), or a [`Counter`], which keeps only
//! their number and lets the encoder stop soon after a limit is passed (how a result is
//! measured against `max_result_size` without holding its encoding). The rules are the same
//! for both: there is one encoder.

use serde_json::Value;

/// Where the encoder writes: a `Vec<u8>` gets the bytes; a [`Counter`] only counts them.
pub trait Sink {
    /// Whether the encoder may stop once [`done`](Sink::done) says so (checked every
    /// [`CHUNK`] bytes of a string and between items); false for a buffer, which gets every
    /// byte, so its code path has no checks.
    const STOPS: bool = false;
    /// Writes `bytes`.
    fn put(&mut self, bytes: &[u8]);
    /// Writes one byte.
    fn put_byte(&mut self, byte: u8) {
        self.put(&[byte]);
    }
    /// Room for `additional` more bytes (a hint).
    fn reserve(&mut self, additional: usize) {
        let _ = additional;
    }
    /// How many bytes were written so far.
    fn written(&self) -> usize;
    /// Whether the rest is not wanted (only asked when [`STOPS`](Sink::STOPS)).
    fn done(&self) -> bool {
        false
    }
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
    fn put_byte(&mut self, byte: u8) {
        self.push(byte);
    }
    fn reserve(&mut self, additional: usize) {
        Vec::reserve(self, additional);
    }
    fn written(&self) -> usize {
        self.len()
    }
}

/// Counts the bytes of an encoding without keeping them, and stops the encoder soon after
/// the count passes `limit`: past it, [`written`](Sink::written) is more than `limit` (by
/// at most about one [`CHUNK`]) but no longer the whole length.
#[derive(Debug, Clone, Copy)]
pub struct Counter {
    written: usize,
    limit: usize,
}

impl Counter {
    /// A counter that stops the encoder once more than `limit` bytes were counted.
    pub fn until(limit: usize) -> Self {
        Self { written: 0, limit }
    }
}

impl Sink for Counter {
    const STOPS: bool = true;
    fn put(&mut self, bytes: &[u8]) {
        self.written = self.written.saturating_add(bytes.len());
    }
    fn written(&self) -> usize {
        self.written
    }
    fn done(&self) -> bool {
        self.written > self.limit
    }
}

/// How many bytes of a string without escapes a stopping sink is given at a time.
pub const CHUNK: usize = 4096;

/// Appends `value`'s compact JSON encoding to `out`.
pub fn write_value<S: Sink>(out: &mut S, value: &Value) {
    match value {
        Value::Null => out.put(b"null"),
        Value::Bool(true) => out.put(b"true"),
        Value::Bool(false) => out.put(b"false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.put_byte(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.put_byte(b',');
                }
                if S::STOPS && out.done() {
                    return;
                }
                write_value(out, item);
            }
            out.put_byte(b']');
        }
        Value::Object(map) => write_map(out, map),
    }
}

/// Appends an object's compact JSON encoding to `out` (as [`write_value`] writes it).
pub fn write_map<S: Sink>(out: &mut S, map: &serde_json::Map<String, Value>) {
    out.put_byte(b'{');
    for (i, (key, item)) in map.iter().enumerate() {
        if i > 0 {
            out.put_byte(b',');
        }
        if S::STOPS && out.done() {
            return;
        }
        write_str(out, key);
        out.put_byte(b':');
        write_value(out, item);
    }
    out.put_byte(b'}');
}

/// Appends a number as serde_json writes it.
pub(super) fn write_number<S: Sink>(out: &mut S, n: &serde_json::Number) {
    /// serde_json's writer, over a sink.
    struct Writer<'a, S>(&'a mut S);
    impl<S: Sink> std::io::Write for Writer<'_, S> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.put(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // Writing into a sink cannot fail; a number has no other failure.
    if serde_json::to_writer(Writer(&mut *out), n).is_err() {
        out.put(b"null");
    }
}

/// Appends `s` as a JSON string (quoted and escaped as serde_json escapes it).
pub fn write_str<S: Sink>(out: &mut S, s: &str) {
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
    out.put_byte(b'"');
    // `start..i` is a run of bytes that need no escape, not yet copied.
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8)
            && let Ok(word) = <[u8; 8]>::try_from(word)
            && !needs_escape(u64::from_ne_bytes(word))
        {
            i += 8;
            if S::STOPS && i - start >= CHUNK {
                out.put(&bytes[start..i]);
                start = i;
                if out.done() {
                    return;
                }
            }
            continue;
        }
        // The last few bytes, or a word with something to escape: byte by byte up to the end
        // of this word.
        let end = (i + 8).min(bytes.len());
        while i < end {
            let b = bytes[i];
            if let Some(escaped) = escape(b) {
                out.put(&bytes[start..i]);
                escaped.write(out);
                start = i + 1;
            }
            i += 1;
        }
        if S::STOPS && out.done() {
            return;
        }
    }
    out.put(&bytes[start..]);
    out.put_byte(b'"');
}

/// How one byte is escaped.
enum Escape {
    /// A two-byte escape: `\` and this byte.
    Short(u8),
    /// `\u00XX`.
    Unicode(u8),
}

impl Escape {
    fn write<S: Sink>(self, out: &mut S) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        match self {
            Self::Short(c) => out.put(&[b'\\', c]),
            Self::Unicode(b) => out.put(&[
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
