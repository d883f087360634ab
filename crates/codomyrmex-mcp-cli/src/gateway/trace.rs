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
    // The span id (8 bytes) and a new trace's id (16): one draw, since every forwarded call
    // makes one.
    let ids = random_ids()?;
    let (span, new_trace) = ids.split_at(8);
    let mut out = String::with_capacity(55);
    out.push_str("00-");
    let flags = match incoming {
        Some((trace, flags)) => {
            out.push_str(trace);
            flags
        }
        None => {
            push_hex(&mut out, new_trace);
            "01"
        }
    };
    out.push('-');
    push_hex(&mut out, span);
    out.push('-');
    out.push_str(flags);
    tracing::debug!(trace_id = %&out[3..35], span_id = %&out[36..52], "forwarded with a traceparent");
    Some(out)
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

/// 24 secure random bytes whose first 8 (a span id) and last 16 (a trace id) are each not
/// all zero, as W3C Trace Context requires; `None` without randomness.
fn random_ids() -> Option<[u8; 24]> {
    let entropy = codomyrmex_mcp::platform::Platform::default_platform().entropy;
    let nonzero = |b: &[u8]| b.iter().any(|b| *b != 0);
    for _ in 0..4 {
        let mut ids = [0u8; 24];
        entropy.fill(&mut ids).ok()?;
        if nonzero(&ids[..8]) && nonzero(&ids[8..]) {
            return Some(ids);
        }
    }
    None
}

/// `bytes` as lowercase hex, appended to `out`.
fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
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

    #[test]
    fn every_call_gets_its_own_span_and_a_new_trace_its_own_id() {
        let tps: Vec<String> = (0..64)
            .map(|_| upstream_traceparent(&Map::new()).unwrap())
            .collect();
        for tp in &tps {
            assert_eq!(tp.len(), 55, "{tp}");
            assert_eq!(parse(tp).map(|(_, flags)| flags), Some("01"), "{tp}");
        }
        let spans: std::collections::HashSet<&str> = tps.iter().map(|t| &t[36..52]).collect();
        let traces: std::collections::HashSet<&str> = tps.iter().map(|t| &t[3..35]).collect();
        assert_eq!((spans.len(), traces.len()), (64, 64));
        let mut hex = String::new();
        push_hex(&mut hex, &[0x00, 0x0f, 0xa5, 0xff]);
        assert_eq!(hex, "000fa5ff");
    }
}
