//! The W3C trace context of a forwarded call (issue #31 item 5): the gateway's span is the
//! parent of the upstream's. Every call, prompt and read sent upstream carries a
//! `traceparent` in its `_meta` (the MCP convention, which a stdio upstream reads); the HTTP
//! client transport mirrors it in the `traceparent` header for an HTTP upstream.
//!
//! Its trace id is the trace the gateway's request belongs to: the caller's, when the
//! request came with a valid `_meta.traceparent` (with the `otel` feature exporting, the
//! HTTP header's too, which the transport makes the span's parent), else a new one. Its parent id is the gateway's span: with the `otel` feature
//! exporting, the id of the span the call is handled in; otherwise a new random span id,
//! logged at DEBUG with the trace id so the two ends can be matched. The caller's trace flags
//! are kept (a new trace is `01`, sampled). A malformed incoming value is ignored, as W3C
//! Trace Context asks.

use serde_json::{Map, Value};

/// The `traceparent` to send upstream for a request whose `_meta` is `meta`.
pub fn upstream_traceparent(meta: &Map<String, Value>) -> Option<String> {
    #[cfg(feature = "otel")]
    if let Some(own) = crate::otel::current_traceparent() {
        return Some(own);
    }
    let incoming = meta
        .get("traceparent")
        .and_then(Value::as_str)
        .and_then(parse);
    let span = random_hex(8)?;
    let (trace, flags) = match incoming {
        Some((trace, flags)) => (trace.to_owned(), flags.to_owned()),
        None => (random_hex(16)?, "01".to_owned()),
    };
    tracing::debug!(trace_id = %trace, span_id = %span, "forwarded with a traceparent");
    Some(format!("00-{trace}-{span}-{flags}"))
}

/// The trace id and flags of a valid `traceparent` (version `00`, or a later one's first four
/// fields).
fn parse(value: &str) -> Option<(&str, &str)> {
    let mut parts = value.trim().splitn(5, '-');
    let (version, trace, parent, flags) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let rest = parts.next();
    let hex = |s: &str, n: usize| {
        s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    let zero = |s: &str| s.bytes().all(|b| b == b'0');
    let ok = hex(version, 2)
        && version != "ff"
        && !(version == "00" && rest.is_some())
        && hex(trace, 32)
        && !zero(trace)
        && hex(parent, 16)
        && !zero(parent)
        && hex(flags, 2);
    ok.then_some((trace, flags))
}

/// `bytes` secure random bytes as lowercase hex, not all zero; `None` without randomness.
fn random_hex(bytes: usize) -> Option<String> {
    let entropy = codomyrmex_mcp::platform::Platform::default_platform().entropy;
    for _ in 0..4 {
        let mut buf = vec![0u8; bytes];
        entropy.fill(&mut buf).ok()?;
        if buf.iter().any(|b| *b != 0) {
            return Some(buf.iter().map(|b| format!("{b:02x}")).collect());
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_callers_trace_continues_under_a_new_span() {
        let mut meta = Map::new();
        meta.insert(
            "traceparent".into(),
            "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
        );
        let tp = upstream_traceparent(&meta).unwrap();
        let (trace, flags) = parse(&tp).unwrap();
        assert_eq!(trace, "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(flags, "01");
        assert!(!tp.contains("b7ad6b7169203331"), "{tp}");
        // A malformed one is ignored: a new trace.
        meta.insert("traceparent".into(), "00-xyz".into());
        let tp = upstream_traceparent(&meta).unwrap();
        assert!(parse(&tp).is_some() && !tp.contains("0af76519"), "{tp}");
    }
}
