//! W3C Trace Context: a request's `traceparent`, from its `_meta` (the MCP convention, which
//! wins) or the HTTP header, is continued in the `tracing` span its handling runs in, so the
//! events of the engine and of the handler carry the caller's trace id.
//!
//! The span is `mcp.request` with the fields `rpc.method` (the bounded method label),
//! `trace_id`, `parent_span_id` and `trace_flags`; without a valid `traceparent` it has only
//! the method. A malformed value is ignored, as W3C Trace Context asks. This is not an
//! OpenTelemetry exporter: a subscriber that exports spans (for example through
//! `tracing-opentelemetry`) reads these fields, and [`set_trace_parent_hook`] lets it adopt
//! the caller's context as the span's parent (the binary's `otel` feature does).
//! `tracestate` and `baggage` are not read.

use axum::http::{HeaderMap, HeaderName};
use std::sync::OnceLock;

use tracing::{Instrument, Span};

use crate::engine::Handled;

/// The `traceparent` header's name, parsed once (a `&str` name is parsed at every lookup).
static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// A parsed `traceparent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TraceParent {
    /// 32 lowercase hex digits, not all zero.
    pub(crate) trace_id: String,
    /// 16 lowercase hex digits, not all zero: the caller's span.
    pub(crate) parent_id: String,
    /// The trace flags, 2 hex digits (`01`: sampled).
    pub(crate) flags: String,
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl TraceParent {
    /// Parses `version-traceid-parentid-flags` (W3C Trace Context level 1); `None` when
    /// malformed. A version above `00` may carry more fields after the flags.
    pub(crate) fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        let mut parts = value.splitn(5, '-');
        let version = parts.next()?;
        let trace_id = parts.next()?;
        let parent_id = parts.next()?;
        let flags = parts.next()?;
        let rest = parts.next();
        if !is_hex(version, 2) || version == "ff" || (version == "00" && rest.is_some()) {
            return None;
        }
        if !is_hex(trace_id, 32) || trace_id.bytes().all(|b| b == b'0') {
            return None;
        }
        if !is_hex(parent_id, 16) || parent_id.bytes().all(|b| b == b'0') {
            return None;
        }
        if !is_hex(flags, 2) {
            return None;
        }
        Some(Self {
            trace_id: trace_id.to_owned(),
            parent_id: parent_id.to_owned(),
            flags: flags.to_owned(),
        })
    }
}

/// The trace context of a request: `_meta.traceparent`, else the `traceparent` header.
#[cfg(test)]
pub(crate) fn trace_parent(
    headers: &HeaderMap,
    params: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Option<TraceParent> {
    let meta = crate::engine::RequestMeta::of(params);
    trace_parent_from(headers, meta.traceparent.as_deref())
}

/// The trace context of a request: `meta` (its `_meta.traceparent`, as the engine's
/// classification parsed it), else the `traceparent` header.
pub(crate) fn trace_parent_from(headers: &HeaderMap, meta: Option<&str>) -> Option<TraceParent> {
    let meta = meta.and_then(TraceParent::parse);
    meta.or_else(|| {
        let mut values = headers.get_all(&TRACEPARENT).iter();
        let first = values.next()?;
        // Several headers: ambiguous, ignored.
        if values.next().is_some() {
            return None;
        }
        TraceParent::parse(first.to_str().ok()?)
    })
}

/// Called with each new `mcp.request` span that continues a caller's trace, and the
/// caller's `traceparent` (validated, version `00`), before the span is entered: a tracing
/// layer that exports spans (OpenTelemetry, say) makes that context the span's parent.
pub type TraceParentHook = fn(&Span, &str);

static TRACE_PARENT_HOOK: OnceLock<TraceParentHook> = OnceLock::new();

/// Registers the process's [`TraceParentHook`]. Only the first registration counts: this
/// returns `false` when one was registered already.
pub fn set_trace_parent_hook(hook: TraceParentHook) -> bool {
    TRACE_PARENT_HOOK.set(hook).is_ok()
}

/// The span a request is handled in.
pub(crate) fn request_span(method: &'static str, parent: Option<&TraceParent>) -> Span {
    match parent {
        Some(p) => {
            let span = tracing::info_span!(
                "mcp.request",
                rpc.method = method,
                trace_id = %p.trace_id,
                parent_span_id = %p.parent_id,
                trace_flags = %p.flags,
            );
            if let Some(hook) = TRACE_PARENT_HOOK.get() {
                hook(
                    &span,
                    &format!("00-{}-{}-{}", p.trace_id, p.parent_id, p.flags),
                );
            }
            span
        }
        None => tracing::info_span!("mcp.request", rpc.method = method),
    }
}

/// `handled`'s deferred work, run in the current span wherever it is driven (an SSE body, a
/// spawned task).
pub(crate) fn in_current_span(handled: Handled) -> Handled {
    match handled {
        h @ (Handled::Nothing | Handled::Reply(_)) => h,
        // Invocations too: the driver's future runs the handler, in this span.
        other => Handled::Pending(Box::pin(crate::runtime::drive(other).in_current_span())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const VALID: &str = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";

    #[test]
    fn traceparents_are_parsed_strictly() {
        let p = TraceParent::parse(VALID).unwrap();
        assert_eq!(p.trace_id, "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(p.parent_id, "00f067aa0ba902b7");
        assert_eq!(p.flags, "01");
        for bad in [
            "",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "00-0AF7651916CD43DD8448EB211C80319C-00f067aa0ba902b7-01",
            "ff-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-extra",
            "00-0af7651916cd43dd8448eb211c8031-00f067aa0ba902b7-01",
        ] {
            assert!(TraceParent::parse(bad).is_none(), "{bad}");
        }
        // A later version may add fields.
        assert!(
            TraceParent::parse("01-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01-x")
                .is_some()
        );
    }

    #[test]
    fn meta_wins_over_the_header() {
        let mut headers = HeaderMap::new();
        headers.insert(
            "traceparent",
            HeaderValue::from_static("00-11111111111111111111111111111111-2222222222222222-00"),
        );
        let from_header = trace_parent(&headers, None).unwrap();
        assert_eq!(from_header.trace_id, "1".repeat(32));
        let params = serde_json::json!({"_meta": {"traceparent": VALID}});
        let from_meta = trace_parent(&headers, params.as_object()).unwrap();
        assert_eq!(from_meta.trace_id, "0af7651916cd43dd8448eb211c80319c");
        // A malformed `_meta` value falls back to the header.
        let params = serde_json::json!({"_meta": {"traceparent": "nonsense"}});
        assert_eq!(
            trace_parent(&headers, params.as_object()),
            Some(from_header)
        );
    }
}
