//! One call of an OpenAPI tool: the HTTP request built from the arguments (the path
//! templated with percent-encoded values, the query, headers, the JSON body, the
//! upstream's credentials), and the answer turned into the tool's result: a 2xx JSON answer
//! as structured content, any other 2xx body as text, a non-2xx answer as a failure naming
//! the status with at most [`MAX_ERROR_BODY`] characters of its body, and an answer larger
//! than the upstream's byte cap as a failure. The call's admission, deadline and
//! concurrency are the upstream's `UpstreamPolicy`'s (`super::mount`), not this module's.

use bytes::Bytes;
use codomyrmex_mcp::ToolOutput;
use codomyrmex_mcp::{ContentBlock, McpErrorDetail, McpToolResult};
use http_body_util::Full;
use hyper::header::{self, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::Api;
use super::spec::{Location, Operation};

/// The most characters of a non-2xx answer's body put in the failure.
pub const MAX_ERROR_BODY: usize = 1_000;

/// The W3C Trace Context header.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// A failure of the call, with its code.
fn failure(code: &str, message: String) -> ToolOutput {
    ToolOutput::failure(McpErrorDetail::new(code, message))
}

/// RFC 3986 percent-encoding of everything but the unreserved characters: safe in a path
/// segment and in a query key or value.
pub fn encode(text: &str) -> String {
    codomyrmex_mcp::client::oauth::form_encode(text)
}

/// A parameter value as the text it is sent as (`simple`/`form` style): strings as they
/// are, numbers and booleans written out, arrays joined with commas, objects as
/// `key,value,...`.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join(","),
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| [k.clone(), text_of(v)])
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

/// A call's request line, its own headers and its body (the API's fixed headers are added
/// when it is sent).
#[derive(Debug)]
pub struct Request {
    /// The method.
    pub method: hyper::Method,
    /// The path and query: the base URL's path, then the operation's.
    pub target: String,
    /// The header parameters, and `Content-Type` with a body.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The JSON body, empty when none.
    pub body: Bytes,
}

/// Builds the request of `op` for `arguments` (already checked against the input schema by
/// the engine), after `base_path` (the base URL's path and query); an argument the operation
/// does not take is refused.
pub fn build(
    base_path: &str,
    op: &Operation,
    arguments: &Map<String, Value>,
) -> Result<Request, String> {
    for name in arguments.keys() {
        let known = op.params.iter().any(|p| &p.name == name) || op.body.as_ref() == Some(name);
        if !known {
            return Err(format!("{} takes no argument {name:?}", op.tool));
        }
    }
    let base_path = base_path.trim_end_matches('/');
    let mut target = String::with_capacity(base_path.len() + op.path.len() + 16);
    target.push_str(base_path);
    let mut rest = op.path.as_str();
    while let Some(open) = rest.find('{') {
        let close = rest[open..]
            .find('}')
            .map(|c| open + c)
            .ok_or_else(|| format!("the path {:?} has an unclosed '{{'", op.path))?;
        target.push_str(&rest[..open]);
        let name = &rest[open + 1..close];
        let value = arguments
            .get(name)
            .filter(|v| !v.is_null())
            .ok_or_else(|| format!("the path parameter {name:?} is missing"))?;
        let text = text_of(value);
        if text.is_empty() {
            return Err(format!("the path parameter {name:?} is empty"));
        }
        target.push_str(&encode(&text));
        rest = &rest[close + 1..];
    }
    target.push_str(rest);
    let mut query: Vec<String> = Vec::new();
    let mut headers = Vec::new();
    for p in &op.params {
        let Some(value) = arguments.get(&p.name).filter(|v| !v.is_null()) else {
            continue;
        };
        match p.location {
            Location::Path => {}
            Location::Query => match value {
                Value::Array(items) if p.explode => {
                    for item in items {
                        query.push(format!("{}={}", encode(&p.name), encode(&text_of(item))));
                    }
                }
                Value::Object(map) if p.explode => {
                    for (k, v) in map {
                        query.push(format!("{}={}", encode(k), encode(&text_of(v))));
                    }
                }
                _ => query.push(format!("{}={}", encode(&p.name), encode(&text_of(value)))),
            },
            Location::Header => {
                let text = text_of(value);
                if text.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                    return Err(format!("the header {:?} holds a line break", p.name));
                }
                let name = HeaderName::from_bytes(p.name.as_bytes())
                    .map_err(|_| format!("{:?} is not a header name", p.name))?;
                let value = HeaderValue::from_str(&text)
                    .map_err(|_| format!("the header {:?} is not a valid header value", p.name))?;
                headers.push((name, value));
            }
        }
    }
    let mut body = Bytes::new();
    if let Some(key) = &op.body
        && let Some(value) = arguments.get(key)
    {
        body = serde_json::to_vec(value).map_err(|e| e.to_string())?.into();
        headers.push((
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ));
    }
    if !query.is_empty() {
        target.push(if target.contains('?') { '&' } else { '?' });
        target.push_str(&query.join("&"));
    }
    let method = hyper::Method::from_bytes(op.method.as_bytes())
        .map_err(|_| format!("{:?} is not an HTTP method", op.method))?;
    Ok(Request {
        method,
        target,
        headers,
        body,
    })
}

/// Sends the call of `op` with `arguments` and turns the answer into the tool's output;
/// `traceparent` (the W3C trace context of the gateway's span, [`super::super::trace`]) goes
/// as a header when there is one.
pub async fn run(
    api: &Api,
    op: &Operation,
    arguments: &Map<String, Value>,
    traceparent: Option<&str>,
) -> ToolOutput {
    let upstream = &api.namespace;
    let request = match build(&api.base.path, op, arguments) {
        Ok(r) => r,
        Err(e) => return failure("INVALID_ARGUMENTS", e),
    };
    let what = || format!("{} {}", op.method, op.path);
    let uri = match hyper::Uri::try_from(request.target.as_str()) {
        Ok(uri) => uri,
        Err(e) => return failure("INVALID_ARGUMENTS", format!("{}: {e}", what())),
    };
    let traceparent = traceparent.and_then(|t| HeaderValue::from_str(t).ok());
    let mut retried = false;
    let answer = loop {
        let mut headers = match api.headers().await {
            Ok(h) => h,
            Err(e) => {
                return failure(
                    "UPSTREAM_AUTH",
                    format!("upstream {upstream}: no credentials for {}: {e}", what()),
                );
            }
        };
        for (name, value) in &request.headers {
            headers.append(name.clone(), value.clone());
        }
        if let Some(value) = &traceparent {
            headers.insert(TRACEPARENT, value.clone());
        }
        let mut sent = hyper::Request::new(Full::new(request.body.clone()));
        *sent.method_mut() = request.method.clone();
        *sent.uri_mut() = uri.clone();
        *sent.headers_mut() = headers;
        let sent = api
            .client
            .send_request(&api.base, sent, api.max_response_bytes)
            .await;
        match sent {
            // A refused OAuth token is fetched anew once.
            Ok(a) if a.status == 401 && !retried && api.forget_token().await => retried = true,
            Ok(a) => break a,
            Err(e) => {
                tracing::debug!(upstream = %upstream, error = %e, "REST call failed");
                return failure(
                    "UPSTREAM_UNAVAILABLE",
                    format!("upstream {upstream} is not reachable ({})", what()),
                );
            }
        }
    };
    if answer.truncated {
        return failure(
            "UPSTREAM_RESPONSE_TOO_LARGE",
            format!(
                "upstream {upstream}: the answer to {} is larger than {} bytes",
                what(),
                api.max_response_bytes
            ),
        );
    }
    if !(200..300).contains(&answer.status) {
        let text = String::from_utf8_lossy(&answer.body);
        let mut shown: String = text.chars().take(MAX_ERROR_BODY).collect();
        if shown.len() < text.len() {
            shown.push('…');
        }
        let shown = codomyrmex_mcp::util::inert_text(&shown);
        return failure(
            "UPSTREAM_HTTP_STATUS",
            format!(
                "upstream {upstream}: {} answered HTTP {}: {shown}",
                what(),
                answer.status
            ),
        );
    }
    if op.structured {
        let parsed = if answer.body.is_empty() {
            None
        } else {
            serde_json::from_slice::<Value>(&answer.body).ok()
        };
        let Some(value) = parsed else {
            return failure(
                "UPSTREAM_MALFORMED",
                format!(
                    "upstream {upstream}: the answer to {} is not the JSON its operation declares",
                    what()
                ),
            );
        };
        let data = if op.wrapped {
            json!({"result": value})
        } else {
            value
        };
        return ToolOutput::from_result(McpToolResult::success_value(data));
    }
    let is_json = answer.content_type.as_deref().is_some_and(|t| {
        let t = t.split(';').next().unwrap_or("").trim();
        t == "application/json" || t.ends_with("+json")
    });
    if is_json && let Ok(value) = serde_json::from_slice::<Value>(&answer.body) {
        return ToolOutput::content(vec![ContentBlock::text(value.to_string())]);
    }
    let text = String::from_utf8_lossy(&answer.body);
    ToolOutput::content(vec![ContentBlock::text(text.into_owned())])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::spec::Param;
    use super::*;

    fn op() -> Operation {
        Operation {
            tool: "t".into(),
            method: "GET".into(),
            path: "/repos/{owner}/{repo}/issues".into(),
            params: vec![
                Param {
                    name: "owner".into(),
                    location: Location::Path,
                    explode: false,
                },
                Param {
                    name: "repo".into(),
                    location: Location::Path,
                    explode: false,
                },
                Param {
                    name: "labels".into(),
                    location: Location::Query,
                    explode: true,
                },
                Param {
                    name: "sort".into(),
                    location: Location::Query,
                    explode: true,
                },
                Param {
                    name: "X-Trace".into(),
                    location: Location::Header,
                    explode: false,
                },
            ],
            body: None,
            wrapped: false,
            structured: false,
        }
    }

    #[test]
    fn path_values_are_percent_encoded_and_queries_exploded() {
        let args = json!({"owner": "a b/../c", "repo": "r?x#", "labels": ["x&y", "z"], "sort": 3,
                          "X-Trace": "t1"});
        let r = build("/api/", &op(), args.as_object().unwrap()).unwrap();
        assert_eq!(
            r.target,
            "/api/repos/a%20b%2F..%2Fc/r%3Fx%23/issues?labels=x%26y&labels=z&sort=3"
        );
        assert_eq!(r.method, hyper::Method::GET);
        assert!(r.headers.contains(&(
            HeaderName::from_static("x-trace"),
            HeaderValue::from_static("t1")
        )));
        assert!(r.body.is_empty());
    }

    #[test]
    fn unknown_arguments_and_header_injection_are_refused() {
        let e = build(
            "/",
            &op(),
            json!({"owner": "a", "repo": "b", "nope": 1})
                .as_object()
                .unwrap(),
        );
        assert!(e.unwrap_err().contains("\"nope\""));
        let e = build(
            "/",
            &op(),
            json!({"owner": "a", "repo": "b", "X-Trace": "a\r\nX: y"})
                .as_object()
                .unwrap(),
        );
        assert!(e.unwrap_err().contains("line break"));
        let e = build("/", &op(), json!({"owner": "a"}).as_object().unwrap());
        assert!(e.unwrap_err().contains("\"repo\""));
    }
}
