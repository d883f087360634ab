//! A request's `_meta`, parsed once into typed fields ([`RequestMeta`]), which the transports
//! (routing, header checks, tracing) and the engine (scope, tool context) share.
//!
//! It is only the parse: which fields are there and whether each is well-formed. What a field
//! means for a request (its era, the error a bad one deserves) is the engine's decision, in
//! `Engine::scope` and `Engine::classify`.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_PROTOCOL_VERSION};
use crate::wire::LoggingLevel;

/// One `_meta` field: absent, present but malformed, or present and well-formed.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum MetaField<T> {
    /// The field is not there.
    #[default]
    Absent,
    /// The field is there, but not of its type.
    Invalid,
    /// The field, parsed.
    Present(T),
}

impl<T> MetaField<T> {
    /// Whether the field is there at all (well-formed or not).
    pub fn is_sent(&self) -> bool {
        !matches!(self, Self::Absent)
    }

    /// The parsed value, if the field is there and well-formed.
    pub fn get(&self) -> Option<&T> {
        match self {
            Self::Present(v) => Some(v),
            _ => None,
        }
    }
}

/// The typed `_meta` of a request (or notification), parsed once.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/protocolVersion`: a string (the revision, not yet checked).
    pub protocol_version: MetaField<String>,
    /// `io.modelcontextprotocol/clientCapabilities`: an object, shared rather than copied.
    pub client_capabilities: MetaField<Arc<Value>>,
    /// `io.modelcontextprotocol/logLevel`: a log level.
    pub log_level: MetaField<LoggingLevel>,
    /// `progressToken`: a string or an integer.
    pub progress_token: MetaField<Value>,
    /// `traceparent` (W3C Trace Context), as sent; its syntax is the tracer's concern.
    pub traceparent: Option<String>,
}

impl RequestMeta {
    /// Parses the `_meta` of `params`; no `_meta` (or one that is not an object) is empty.
    pub fn of(params: Option<&Map<String, Value>>) -> Self {
        let Some(meta) = params
            .and_then(|p| p.get("_meta"))
            .and_then(Value::as_object)
        else {
            return Self::default();
        };
        Self::parse(meta)
    }

    /// Parses a `_meta` object.
    pub fn parse(meta: &Map<String, Value>) -> Self {
        let protocol_version = match meta.get(META_PROTOCOL_VERSION) {
            None => MetaField::Absent,
            Some(Value::String(s)) => MetaField::Present(s.clone()),
            Some(_) => MetaField::Invalid,
        };
        let client_capabilities = match meta.get(META_CLIENT_CAPABILITIES) {
            None => MetaField::Absent,
            Some(Value::Object(c)) if c.is_empty() => {
                MetaField::Present(crate::context::no_capabilities())
            }
            Some(c @ Value::Object(_)) => MetaField::Present(Arc::new(c.clone())),
            Some(_) => MetaField::Invalid,
        };
        let log_level = match meta.get(META_LOG_LEVEL) {
            None => MetaField::Absent,
            // Read from the borrowed value: no copy of the string.
            Some(l) => match <LoggingLevel as serde::Deserialize>::deserialize(l) {
                Ok(l) => MetaField::Present(l),
                Err(_) => MetaField::Invalid,
            },
        };
        let progress_token = match meta.get("progressToken") {
            None => MetaField::Absent,
            Some(t) if t.is_string() || t.is_i64() || t.is_u64() => MetaField::Present(t.clone()),
            Some(_) => MetaField::Invalid,
        };
        let traceparent = meta
            .get("traceparent")
            .and_then(Value::as_str)
            .map(str::to_owned);
        Self {
            protocol_version,
            client_capabilities,
            log_level,
            progress_token,
            traceparent,
        }
    }

    /// Whether the request names a protocol version in `_meta`, as modern-era requests do.
    pub fn names_version(&self) -> bool {
        self.protocol_version.is_sent()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(v: Value) -> RequestMeta {
        RequestMeta::of(v.as_object())
    }

    #[test]
    fn every_field_is_parsed_once_into_its_type() {
        let m = of(json!({"_meta": {
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {"sampling": {}},
            META_LOG_LEVEL: "debug",
            "progressToken": 7,
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        }}));
        assert_eq!(
            m.protocol_version.get().map(String::as_str),
            Some("2026-07-28")
        );
        assert_eq!(
            m.client_capabilities.get().map(|c| (**c).clone()),
            Some(json!({"sampling": {}}))
        );
        assert_eq!(m.log_level, MetaField::Present(LoggingLevel::Debug));
        assert_eq!(m.progress_token, MetaField::Present(json!(7)));
        assert!(m.traceparent.is_some());
        assert!(m.names_version());
    }

    #[test]
    fn malformed_fields_are_invalid_not_absent() {
        let m = of(json!({"_meta": {
            META_PROTOCOL_VERSION: 2026,
            META_CLIENT_CAPABILITIES: [],
            META_LOG_LEVEL: "loud",
            "progressToken": 1.5,
            "traceparent": 3,
        }}));
        assert_eq!(m.protocol_version, MetaField::Invalid);
        assert_eq!(m.client_capabilities, MetaField::Invalid);
        assert_eq!(m.log_level, MetaField::Invalid);
        assert_eq!(m.progress_token, MetaField::Invalid);
        assert!(m.traceparent.is_none());
        // Sent, though malformed: still a modern-era request (which then gets -32602).
        assert!(m.names_version());
    }

    #[test]
    fn no_meta_or_a_non_object_meta_is_empty() {
        for params in [json!({}), json!({"_meta": "x"}), json!({"_meta": null})] {
            let m = of(params);
            assert!(!m.names_version());
            assert!(!m.progress_token.is_sent());
            assert!(!m.log_level.is_sent());
        }
        assert!(!RequestMeta::of(None).names_version());
    }
}
