//! Modern-era (2026-07-28) request header validation: `MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name` and `Mcp-Param-*` must agree with the body, or the request gets `400` and
//! `-32020` (`HeaderMismatch`).

use std::borrow::Cow;

use axum::http::{HeaderMap, HeaderName};
use base64::Engine as _;
use serde_json::{Map, Value};

use crate::wire::{ErrorCode, ErrorObject};
use crate::{HeaderParam, McpToolRegistry};

/// `MCP-Protocol-Version`, in the parsed form a lookup needs (a `&str` name is parsed anew on
/// every lookup).
pub(crate) static PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
static METHOD: HeaderName = HeaderName::from_static("mcp-method");
static NAME: HeaderName = HeaderName::from_static("mcp-name");

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

fn mismatch(message: String) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::HEADER_MISMATCH,
        format!("Header mismatch: {message}"),
    )
}

/// A header's value, trimmed of surrounding whitespace, if present and visible ASCII.
fn header<'a>(headers: &'a HeaderMap, name: &HeaderName) -> Result<Option<&'a str>, ErrorObject> {
    match headers.get(name) {
        None => Ok(None),
        Some(v) => v
            .to_str()
            .map(|s| Some(s.trim()))
            .map_err(|_| mismatch(format!("{name} header contains invalid characters"))),
    }
}

/// Decodes the `=?base64?...?=` sentinel form; plain values are literal.
pub(crate) fn decode_value(raw: &str) -> Result<String, String> {
    decode(raw).map(Cow::into_owned)
}

/// [`decode_value`] without copying a plain value (the common case, on every request).
fn decode(raw: &str) -> Result<Cow<'_, str>, String> {
    if let Some(inner) = raw
        .strip_prefix(SENTINEL_START)
        .and_then(|r| r.strip_suffix(SENTINEL_END))
    {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(inner)
            .map_err(|_| "invalid Base64".to_owned())?;
        return String::from_utf8(bytes)
            .map(Cow::Owned)
            .map_err(|_| "Base64 value is not UTF-8".to_owned());
    }
    Ok(Cow::Borrowed(raw))
}

/// Validates the standard headers of a modern request, reading its `_meta` version from
/// `params` (the fuzz target's and the tests' entry; the endpoint uses [`validate_with`]).
pub(crate) fn validate(
    headers: &HeaderMap,
    method: &str,
    params: &Map<String, Value>,
    registry: &McpToolRegistry,
) -> Result<(), ErrorObject> {
    let meta = crate::engine::RequestMeta::of(Some(params));
    validate_with(
        headers,
        method,
        params,
        meta.protocol_version.get().map(String::as_str),
        registry,
    )
}

/// Validates the standard headers of a modern request against its body: `meta_version` is
/// the `_meta` protocol version, as the engine's classification parsed it.
pub(crate) fn validate_with(
    headers: &HeaderMap,
    method: &str,
    params: &Map<String, Value>,
    meta_version: Option<&str>,
    registry: &McpToolRegistry,
) -> Result<(), ErrorObject> {
    match header(headers, &PROTOCOL_VERSION)? {
        None => return Err(mismatch("missing MCP-Protocol-Version header".into())),
        Some(h) => {
            if let Some(m) = meta_version
                && h != m
            {
                return Err(mismatch(format!(
                    "MCP-Protocol-Version header {h:?} does not match _meta protocol version {m:?}"
                )));
            }
        }
    }
    match header(headers, &METHOD)? {
        None => return Err(mismatch("missing Mcp-Method header".into())),
        Some(h) if h != method => {
            return Err(mismatch(format!(
                "Mcp-Method header value {h:?} does not match body method {method:?}"
            )));
        }
        Some(_) => {}
    }
    // Which body field `Mcp-Name` mirrors is the core's to say.
    if let Some(field) = crate::engine::mirrored_name_field(method) {
        let body = params.get(field).and_then(Value::as_str);
        match header(headers, &NAME)? {
            None => return Err(mismatch("missing Mcp-Name header".into())),
            Some(raw) => {
                let h = decode(raw).map_err(|e| mismatch(format!("Mcp-Name: {e}")))?;
                if Some(h.as_ref()) != body {
                    return Err(mismatch(format!(
                        "Mcp-Name header value {h:?} does not match body {field}"
                    )));
                }
            }
        }
    }
    if registry.has_header_params()
        && let Some((name, args)) = crate::engine::called_tool(method, params)
    {
        // Borrowed from the registered tool, not cloned with its definition.
        registry
            .with_header_params(name, |annotated| validate_params(headers, annotated, args))
            .unwrap_or(Ok(()))?;
    }
    Ok(())
}

/// Checks the `Mcp-Param-{Name}` header of every `x-mcp-header` parameter of a tool.
fn validate_params(
    headers: &HeaderMap,
    annotated: &[HeaderParam],
    args: Option<&Map<String, Value>>,
) -> Result<(), ErrorObject> {
    for param in annotated {
        let name = &param.name;
        let value = param
            .path
            .split_last()
            .and_then(|(last, parents)| {
                parents
                    .iter()
                    .try_fold(args?, |obj, key| obj.get(key)?.as_object())?
                    .get(last)
            })
            .filter(|v| !v.is_null());
        // The registry holds the declared name; the header is this transport's concern.
        let raw = match HeaderName::from_bytes(
            format!("mcp-param-{}", name.to_ascii_lowercase()).as_bytes(),
        ) {
            Ok(h) => header(headers, &h)?,
            // Not a valid header name, so no such header can have been sent.
            Err(_) => None,
        };
        match (value, raw) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{name} header present but the argument is absent"
                )));
            }
            (Some(_), None) => {
                return Err(mismatch(format!("missing Mcp-Param-{name} header")));
            }
            (Some(v), Some(raw)) => {
                let h = decode(raw).map_err(|e| mismatch(format!("Mcp-Param-{name}: {e}")))?;
                let same = match v {
                    Value::String(s) => *s == *h,
                    Value::Bool(b) => h == if *b { "true" } else { "false" },
                    Value::Number(n) => match (n.as_f64(), h.parse::<f64>()) {
                        (Some(a), Ok(b)) => a == b,
                        _ => false,
                    },
                    _ => false,
                };
                if !same {
                    return Err(mismatch(format!(
                        "Mcp-Param-{name} header value does not match the argument"
                    )));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;
    use serde_json::json;

    #[test]
    fn base64_sentinel() {
        assert_eq!(decode_value("us-west1").unwrap(), "us-west1");
        assert_eq!(
            decode_value("=?base64?SGVsbG8sIOS4lueVjA==?=").unwrap(),
            "Hello, 世界"
        );
        assert!(decode_value("=?base64?!!!?=").is_err());
        assert!(decode_value("=?base64?SGVsbG8?=").is_err());
    }

    fn h(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        m
    }

    #[test]
    fn standard_headers_must_match() {
        let r = McpToolRegistry::new();
        let params = json!({"name": "echo", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
        let params = params.as_object().unwrap();
        let ok = h(&[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", " tools/call "),
            ("mcp-name", "echo"),
        ]);
        assert!(validate(&ok, "tools/call", params, &r).is_ok());
        for bad in [
            h(&[("mcp-method", "tools/call"), ("mcp-name", "echo")]),
            h(&[
                ("mcp-protocol-version", "2025-11-25"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "echo"),
            ]),
            h(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "TOOLS/CALL"),
                ("mcp-name", "echo"),
            ]),
            h(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
            ]),
            h(&[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "other"),
            ]),
        ] {
            let e = validate(&bad, "tools/call", params, &r).unwrap_err();
            assert_eq!(e.code, -32020);
        }
    }

    #[test]
    fn mcp_name_of_tasks_requests_is_the_task_id() {
        let r = McpToolRegistry::new();
        let params = json!({"taskId": "t1", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
        let params = params.as_object().unwrap();
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let with = |name: Option<&str>| {
                let mut pairs = vec![
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", method),
                ];
                pairs.extend(name.map(|n| ("mcp-name", n)));
                h(&pairs)
            };
            assert!(validate(&with(Some("t1")), method, params, &r).is_ok());
            for bad in [with(Some("t2")), with(None)] {
                assert_eq!(validate(&bad, method, params, &r).unwrap_err().code, -32020);
            }
        }
    }

    #[test]
    fn nested_param_headers_follow_their_path() {
        let r = McpToolRegistry::new();
        r.register(
            "deep",
            json!({"type":"object","properties":{"opts":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}}),
            |_: Map<String, Value>| -> Result<Value, crate::McpErrorDetail> { Ok(json!(1)) },
        )
        .unwrap();
        let base = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "deep"),
        ];
        let with = json!({"name": "deep", "arguments": {"opts": {"region": "eu"}}});
        let without = json!({"name": "deep", "arguments": {"opts": "eu"}});
        let mut sent = h(&base);
        sent.insert("mcp-param-region", HeaderValue::from_static("eu"));
        assert!(validate(&sent, "tools/call", with.as_object().unwrap(), &r).is_ok());
        assert!(validate(&h(&base), "tools/call", with.as_object().unwrap(), &r).is_err());
        // A path through a non-object holds no value, so a header for it is refused.
        assert!(validate(&sent, "tools/call", without.as_object().unwrap(), &r).is_err());
        assert!(validate(&h(&base), "tools/call", without.as_object().unwrap(), &r).is_ok());
    }

    #[test]
    fn custom_param_headers() {
        let r = McpToolRegistry::new();
        r.register(
            "sql",
            json!({"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"}}}),
            |_: Map<String, Value>| -> Result<Value, crate::McpErrorDetail> { Ok(json!(1)) },
        )
        .unwrap();
        let params = json!({"name": "sql", "arguments": {"region": "Hello, 世界", "n": 42}});
        let params = params.as_object().unwrap();
        let base = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "sql"),
        ];
        let mut ok = h(&base);
        ok.insert(
            "mcp-param-region",
            HeaderValue::from_static("=?base64?SGVsbG8sIOS4lueVjA==?="),
        );
        ok.insert("mcp-param-n", HeaderValue::from_static("42"));
        assert!(validate(&ok, "tools/call", params, &r).is_ok());
        let mut missing = h(&base);
        missing.insert("mcp-param-n", HeaderValue::from_static("42"));
        assert_eq!(
            validate(&missing, "tools/call", params, &r)
                .unwrap_err()
                .code,
            -32020
        );
        let mut wrong = ok.clone();
        wrong.insert("mcp-param-n", HeaderValue::from_static("43"));
        assert_eq!(
            validate(&wrong, "tools/call", params, &r).unwrap_err().code,
            -32020
        );
        let mut literal = ok.clone();
        literal.insert(
            "mcp-param-region",
            HeaderValue::from_static("SGVsbG8sIOS4lueVjA=="),
        );
        assert_eq!(
            validate(&literal, "tools/call", params, &r)
                .unwrap_err()
                .code,
            -32020
        );
    }
}
