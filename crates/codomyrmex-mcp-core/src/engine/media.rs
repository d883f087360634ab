//! The media types messages travel as, and what a client's `Accept` allows: the rules of
//! the Streamable HTTP transport about bodies, decided here so the transport only obeys
//! ([`check_post`], [`check_stream`]). A body the client sent must be one JSON message
//! ([`JSON_MEDIA_TYPE`]); an answer is one JSON message or a stream of them
//! ([`STREAM_MEDIA_TYPE`]), as [`Engine::respond_as`](super::Engine::respond_as) decides.
//!
//! Plain data in (header values as bytes), a [`Refusal`] out: no HTTP type is named here.

use super::classify::{Refusal, Status};
use crate::wire::ErrorCode;

/// The media type of one JSON-RPC message as a body, sent or answered.
pub const JSON_MEDIA_TYPE: &str = "application/json";

/// The media type of a stream of messages (Server-Sent Events).
pub const STREAM_MEDIA_TYPE: &str = "text/event-stream";

/// What a request's `Accept` values allow, read in one pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Accepts {
    /// One JSON message ([`JSON_MEDIA_TYPE`]).
    pub json: bool,
    /// A stream of messages ([`STREAM_MEDIA_TYPE`]).
    pub stream: bool,
}

impl Accepts {
    /// What the `Accept` values allow: each a comma-separated list of media ranges, their
    /// parameters ignored, the types compared in any case; `*/*` allows both. A value that
    /// is not visible ASCII text is ignored as a whole.
    pub fn of<'a>(values: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut out = Self::default();
        for v in values {
            // Every byte is looked at (no early exit), which lets the check run on whole
            // words: every request carries this header.
            let bad = v.iter().fold(false, |bad, &b| {
                bad | ((b < b' ') & (b != b'\t')) | (b > b'~')
            });
            if bad {
                continue;
            }
            // Each range's type runs to the next comma or semicolon; after a semicolon its
            // parameters run to the next comma.
            let mut rest = v;
            loop {
                let Some(end) = memchr::memchr2(b',', b';', rest) else {
                    out.allow(rest.trim_ascii());
                    break;
                };
                out.allow(rest[..end].trim_ascii());
                let comma = if rest[end] == b',' {
                    Some(end)
                } else {
                    memchr::memchr(b',', &rest[end..]).map(|c| end + c)
                };
                let Some(comma) = comma else { break };
                rest = &rest[comma + 1..];
            }
        }
        out
    }

    /// Adds what one media range's type allows.
    fn allow(&mut self, media: &[u8]) {
        // In any case (RFC 9110, section 8.3.1); the usual lower case costs one comparison.
        let is = |t: &str| {
            media.len() == t.len()
                && (media == t.as_bytes() || media.eq_ignore_ascii_case(t.as_bytes()))
        };
        if media == b"*/*" {
            (self.json, self.stream) = (true, true);
        } else if is(JSON_MEDIA_TYPE) {
            self.json = true;
        } else if is(STREAM_MEDIA_TYPE) {
            self.stream = true;
        }
    }
}

/// Whether a posted message may be read: its `Content-Type` (raw, if sent) must be
/// [`JSON_MEDIA_TYPE`] (parameters ignored, any case), else `UnsupportedMediaType`; and the
/// client must accept one of the forms an answer takes, else `NotAcceptable`.
pub fn check_post(content_type: Option<&[u8]>, accepts: Accepts) -> Result<(), Refusal> {
    // A value that is not UTF-8 is refused; the type itself is compared as ASCII bytes.
    let json = content_type.is_some_and(|v| {
        std::str::from_utf8(v).is_ok() && {
            let media = v.iter().position(|b| *b == b';').map_or(v, |end| &v[..end]);
            media
                .trim_ascii()
                .eq_ignore_ascii_case(JSON_MEDIA_TYPE.as_bytes())
        }
    });
    if !json {
        return Err(Refusal::new(
            Status::UnsupportedMediaType,
            ErrorCode::INVALID_REQUEST,
            "Content-Type must be application/json",
        ));
    }
    if !accepts.json && !accepts.stream {
        return Err(Refusal::new(
            Status::NotAcceptable,
            ErrorCode::INVALID_REQUEST,
            "Accept must include application/json and text/event-stream",
        ));
    }
    Ok(())
}

/// Whether a client asking for a session's standalone stream (or its resumption) accepts
/// one: else `NotAcceptable`.
pub fn check_stream(accepts: Accepts) -> Result<(), Refusal> {
    if accepts.stream {
        Ok(())
    } else {
        Err(Refusal::new(
            Status::NotAcceptable,
            ErrorCode::INVALID_REQUEST,
            "Accept must include text/event-stream",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_values_are_read_once_with_parameters_and_wildcards() {
        let both = Accepts {
            json: true,
            stream: true,
        };
        assert_eq!(Accepts::of([b"*/*".as_slice()]), both);
        assert_eq!(
            Accepts::of([b"application/json;q=0.9, text/event-stream".as_slice()]),
            both
        );
        let json = Accepts::of([b"application/json".as_slice()]);
        assert!(json.json && !json.stream);
        // Media types compare in any case (RFC 9110, section 8.3.1); spaces and tabs around
        // a range do not count, nor an empty one.
        assert_eq!(
            Accepts::of([b" Application/JSON ;q=1,,\tTEXT/Event-Stream\t".as_slice()]),
            both
        );
        assert_eq!(Accepts::of([b"".as_slice()]), Accepts::default());
        // Two values: what each allows adds up.
        assert_eq!(
            Accepts::of([
                b"text/event-stream".as_slice(),
                b"application/json".as_slice()
            ]),
            both
        );
        // A type's parameter that names the other type allows nothing.
        assert_eq!(
            Accepts::of([b"text/html;x=application/json".as_slice()]),
            Accepts::default()
        );
        assert_eq!(
            Accepts::of([b"text/html;application/json;text/event-stream".as_slice()]),
            Accepts::default()
        );
        // A value that is not text is ignored as a whole, ranges before the bad byte too.
        assert_eq!(
            Accepts::of([b"text/event-stream\xff".as_slice()]),
            Accepts::default()
        );
        assert_eq!(
            Accepts::of([
                b"application/json, text/\x01event-stream".as_slice(),
                b"text/event-stream".as_slice()
            ]),
            Accepts {
                json: false,
                stream: true
            }
        );
    }

    /// The rule written plainly: every comma ends a range, a range's first semicolon its
    /// type; a value with a byte that is not visible ASCII or a tab counts for nothing.
    fn plainly(values: &[Vec<u8>]) -> Accepts {
        let mut out = Accepts::default();
        for v in values {
            if v.iter().any(|b| *b != b'\t' && !(b' '..=b'~').contains(b)) {
                continue;
            }
            for range in v.split(|b| *b == b',') {
                let media = range.split(|b| *b == b';').next().unwrap_or(range);
                let media = String::from_utf8_lossy(media.trim_ascii()).to_ascii_lowercase();
                out.json |= media == "*/*" || media == JSON_MEDIA_TYPE;
                out.stream |= media == "*/*" || media == STREAM_MEDIA_TYPE;
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn accept_values_are_read_as_the_plain_rule_reads_them(
            values in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::prop_oneof![
                        proptest::sample::select(vec![
                            b',', b';', b' ', b'\t', b'*', b'/', b'=', b'\x7f', b'\x01', b'\xc3'
                        ]),
                        proptest::sample::select(b"application/json text/event-stream APPLICATION/JSON".to_vec()),
                    ],
                    0..48,
                ),
                0..3,
            ),
            whole in proptest::sample::select(vec![
                "", "application/json, text/event-stream", "*/*", "Text/Event-Stream;q=1",
                "text/html;application/json", "a;b;text/event-stream, c",
            ]),
        ) {
            // Random bytes rarely spell a type: a whole one is put in front of the first value.
            let mut values = values;
            if let Some(first) = values.first_mut() {
                first.splice(0..0, whole.bytes().chain([b',']));
            }
            let read = Accepts::of(values.iter().map(Vec::as_slice));
            proptest::prop_assert_eq!(read, plainly(&values));
        }
    }

    #[test]
    fn a_post_needs_a_json_body_and_an_answer_the_client_takes() {
        let both = Accepts::of([b"*/*".as_slice()]);
        assert_eq!(
            check_post(Some(b"Application/JSON; charset=utf-8"), both),
            Ok(())
        );
        assert_eq!(check_post(Some(b"\tapplication/json"), both), Ok(()));
        // A body not text, or another type, is refused.
        for wrong in [
            b"application/json\xff".as_slice(),
            b"application/json; charset=\xff",
            b"application/jsonx",
            b"x;application/json",
            b"",
        ] {
            let e = check_post(Some(wrong), both).unwrap_err();
            assert_eq!(e.status, Status::UnsupportedMediaType, "{wrong:?}");
        }
        let e = check_post(Some(b"text/plain"), both).unwrap_err();
        assert_eq!(e.status, Status::UnsupportedMediaType);
        assert_eq!(
            check_post(None, both).unwrap_err().status,
            Status::UnsupportedMediaType
        );
        let none = Accepts::default();
        let e = check_post(Some(b"application/json"), none).unwrap_err();
        assert_eq!(e.status, Status::NotAcceptable);
        assert_eq!(e.error.code, ErrorCode::INVALID_REQUEST.0);
        assert_eq!(
            check_stream(none).unwrap_err().status,
            Status::NotAcceptable
        );
        assert_eq!(check_stream(both), Ok(()));
    }
}
