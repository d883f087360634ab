//! The client's protocol logic, with no I/O: request ids and response matching, the
//! `_meta` a modern request carries, era negotiation (`server/discover` first, `initialize`
//! as the fallback), the multi round-trip loop of 2026-07-28 (`inputRequests` answered,
//! `requestState` passed back untouched) and list caching by `ttlMs` and `cacheScope`.
//!
//! It imports no runtime or HTTP types (std, serde_json and the wire types only): it lives in
//! the sans-IO core beside the server's engine. It is not a transport and not the
//! public client API: the library's `McpClient` drives it, and the transports
//! (`stdio`, `http`) move its bytes. Time is an input (`now`), never read here.

use std::collections::HashMap;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value, json};

use crate::engine::{META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION};
use crate::wire::jsonrpc::{Decoded, decode};
use crate::wire::{ErrorCode, ErrorObject, IncomingMessage, ProtocolVersion, RequestId};

pub use super::list_cache::{
    ListCache, MAX_CACHE_BYTES, MAX_CACHE_ENTRIES, list_changed_method, page_len,
};

/// The most rounds of a multi round-trip request before the client gives up: a server that
/// keeps asking for input cannot keep the client busy forever.
pub const MAX_INPUT_ROUNDS: usize = 16;

/// The most input requests one round may carry: each is answered by a handler (or, in the
/// gateway, asked of its own client), so a server cannot make one result cost more.
pub const MAX_INPUT_REQUESTS: usize = 64;

/// Ids of the requests this client sent, and what waits for each answer.
#[derive(Debug)]
pub struct RequestTable<T> {
    next: i64,
    waiting: HashMap<RequestId, T>,
}

impl<T> Default for RequestTable<T> {
    fn default() -> Self {
        Self {
            next: 1,
            waiting: HashMap::new(),
        }
    }
}

impl<T> RequestTable<T> {
    /// A fresh id, never handed out before by this table, with `waiter` entered under it.
    pub fn insert(&mut self, waiter: T) -> RequestId {
        let id = RequestId::from(self.next);
        self.next = self.next.wrapping_add(1);
        self.waiting.insert(id.clone(), waiter);
        id
    }

    /// The id the next [`insert`](Self::insert) will return.
    pub fn peek_next(&self) -> RequestId {
        RequestId::from(self.next)
    }

    /// Takes the waiter of `id`: `None` when the id is not ours or was answered already.
    pub fn take(&mut self, id: &RequestId) -> Option<T> {
        self.waiting.remove(id)
    }

    /// How many requests wait for an answer.
    pub fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether no request waits.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// Every waiter, for failing them when the connection ends.
    pub fn drain(&mut self) -> Vec<T> {
        self.waiting.drain().map(|(_, w)| w).collect()
    }
}

/// Who this client is and what it can do: what a modern request carries in `_meta` and
/// what `initialize` sends.
#[derive(Debug, Clone)]
pub struct ClientIdentity {
    /// `clientInfo`: name and version.
    pub info: Value,
    /// `capabilities`, derived from the handlers the client has.
    pub capabilities: Value,
}

/// Which server-to-client requests the client can answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InputKinds {
    /// `sampling/createMessage`.
    pub sampling: bool,
    /// `elicitation/create` in form mode.
    pub elicitation_form: bool,
    /// `elicitation/create` in URL mode.
    pub elicitation_url: bool,
    /// `roots/list`.
    pub roots: bool,
}

/// The `capabilities` object declaring exactly the handlers the client has.
pub fn capabilities(kinds: InputKinds) -> Value {
    let mut caps = Map::new();
    if kinds.sampling {
        caps.insert("sampling".into(), json!({}));
    }
    if kinds.elicitation_form || kinds.elicitation_url {
        let mut e = Map::new();
        if kinds.elicitation_form {
            e.insert("form".into(), json!({}));
        }
        if kinds.elicitation_url {
            e.insert("url".into(), json!({}));
        }
        caps.insert("elicitation".into(), Value::Object(e));
    }
    if kinds.roots {
        caps.insert("roots".into(), json!({"listChanged": true}));
    }
    Value::Object(caps)
}

/// What a server asks of the client, in either era's form.
#[derive(Debug, Clone, PartialEq)]
pub enum InputRequest {
    /// `ping` (legacy server request): answered with `{}`.
    Ping,
    /// `sampling/createMessage`.
    Sampling(Value),
    /// `elicitation/create` with `mode: "form"` (or no mode).
    ElicitationForm(Value),
    /// `elicitation/create` with `mode: "url"`.
    ElicitationUrl(Value),
    /// `roots/list`.
    Roots(Value),
    /// Anything else: answered with method-not-found.
    Unknown(String),
}

impl InputRequest {
    /// Classifies a server request or an `inputRequests` entry by its method and params.
    pub fn classify(method: &str, params: Value) -> Self {
        match method {
            "ping" => Self::Ping,
            "sampling/createMessage" => Self::Sampling(params),
            "elicitation/create" => {
                if params.get("mode").and_then(Value::as_str) == Some("url") {
                    Self::ElicitationUrl(params)
                } else {
                    Self::ElicitationForm(params)
                }
            }
            "roots/list" => Self::Roots(params),
            other => Self::Unknown(other.to_owned()),
        }
    }
}

/// A message from the server, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerMessage {
    /// The answer to one of our requests.
    Response {
        /// The id we sent.
        id: RequestId,
        /// Its result or error.
        outcome: Result<Value, ErrorObject>,
    },
    /// A request the server sends us (legacy era).
    Request {
        /// The id to answer.
        id: RequestId,
        /// The method.
        method: String,
        /// The params (an object; `{}` when absent).
        params: Value,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
        /// The params (an object; `{}` when absent).
        params: Value,
    },
    /// An error the server could not address to a request (it could not read ours).
    Unaddressed(ErrorObject),
    /// Bytes that are not a JSON-RPC message (or a batch, which servers never send us).
    Invalid(String),
}

/// Classifies one message's bytes. Never panics, whatever the bytes.
pub fn classify(bytes: &[u8]) -> ServerMessage {
    match decode(bytes) {
        Decoded::Single(Ok(message)) => from_incoming(message),
        Decoded::Single(Err(e)) => ServerMessage::Invalid(e.to_string()),
        Decoded::Batch(_) => ServerMessage::Invalid("a JSON-RPC batch from the server".into()),
    }
}

fn from_incoming(message: IncomingMessage) -> ServerMessage {
    let obj = |p: Option<Map<String, Value>>| Value::Object(p.unwrap_or_default());
    match message {
        IncomingMessage::Response { id, result } => ServerMessage::Response {
            id,
            outcome: Ok(result),
        },
        IncomingMessage::Error {
            id: Some(id),
            error,
        } => ServerMessage::Response {
            id,
            outcome: Err(error),
        },
        IncomingMessage::Error { id: None, error } => ServerMessage::Unaddressed(error),
        IncomingMessage::Request { id, method, params } => ServerMessage::Request {
            id,
            method,
            params: obj(params),
        },
        IncomingMessage::Notification { method, params } => ServerMessage::Notification {
            method,
            params: obj(params),
        },
    }
}

/// Params as an object (`null` and non-objects become `{}`).
fn object(params: Value) -> Map<String, Value> {
    match params {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// The params of a modern request: `_meta` gets the protocol version, capabilities and client
/// info unless the caller set them.
pub fn modern_params(params: Value, version: &str, identity: &ClientIdentity) -> Value {
    let mut obj = object(params);
    let meta = obj.entry("_meta").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    if let Value::Object(meta) = meta {
        meta.entry(META_PROTOCOL_VERSION)
            .or_insert_with(|| json!(version));
        meta.entry(META_CLIENT_CAPABILITIES)
            .or_insert_with(|| identity.capabilities.clone());
        meta.entry(META_CLIENT_INFO)
            .or_insert_with(|| identity.info.clone());
    }
    Value::Object(obj)
}

/// Sets `_meta.progressToken` on `params`.
pub fn with_progress_token(params: Value, token: &Value) -> Value {
    let mut obj = object(params);
    let meta = obj.entry("_meta").or_insert_with(|| json!({}));
    if !meta.is_object() {
        *meta = json!({});
    }
    if let Value::Object(meta) = meta {
        meta.insert("progressToken".into(), token.clone());
    }
    Value::Object(obj)
}

/// A request's bytes, written straight from the borrowed parts (no copy of `params`).
pub fn request_bytes(id: &RequestId, method: &str, params: &Value) -> Vec<u8> {
    encode(&Request {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// A modern request's bytes: `params` with the `_meta` of [`modern_params`] (protocol version,
/// capabilities and client info unless the caller set them), written at encoding time from
/// the connection's identity: no per-request copy of the identity or of `params`.
pub fn modern_request_bytes(
    id: &RequestId,
    method: &str,
    params: &Value,
    version: &str,
    identity: &ClientIdentity,
) -> Vec<u8> {
    encode(&Request {
        jsonrpc: "2.0",
        id,
        method,
        params: &ModernParams {
            params: params.as_object(),
            meta: ModernMeta {
                caller: None,
                version,
                identity,
            },
        },
    })
}

/// Compact JSON of `message`. Writing borrowed `Value`s and strings into a `Vec` cannot fail
/// (keys are strings, the writer is infallible); an empty vector if it ever did.
fn encode(message: &impl Serialize) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    if serde_json::to_writer(&mut out, message).is_err() {
        out.clear();
    }
    out
}

/// A JSON-RPC request, borrowed.
#[derive(Serialize)]
struct Request<'a, P: Serialize> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    method: &'a str,
    params: &'a P,
}

/// A modern request's params: the caller's (an object, or none) with its `_meta` completed.
struct ModernParams<'a> {
    params: Option<&'a Map<String, Value>>,
    meta: ModernMeta<'a>,
}

/// A modern request's `_meta`: the caller's entries (an object, or none), then the protocol
/// version, capabilities and client info the caller did not set.
#[derive(Clone, Copy)]
struct ModernMeta<'a> {
    caller: Option<&'a Map<String, Value>>,
    version: &'a str,
    identity: &'a ClientIdentity,
}

impl Serialize for ModernParams<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(None)?;
        let mut meta_written = false;
        for (key, value) in self.params.into_iter().flatten() {
            if key == "_meta" {
                let meta = ModernMeta {
                    caller: value.as_object(),
                    ..self.meta
                };
                m.serialize_entry(key, &meta)?;
                meta_written = true;
            } else {
                m.serialize_entry(key, value)?;
            }
        }
        if !meta_written {
            m.serialize_entry("_meta", &self.meta)?;
        }
        m.end()
    }
}

impl Serialize for ModernMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(None)?;
        for (key, value) in self.caller.into_iter().flatten() {
            m.serialize_entry(key, value)?;
        }
        let missing = |key: &str| !self.caller.is_some_and(|c| c.contains_key(key));
        if missing(META_PROTOCOL_VERSION) {
            m.serialize_entry(META_PROTOCOL_VERSION, self.version)?;
        }
        if missing(META_CLIENT_CAPABILITIES) {
            m.serialize_entry(META_CLIENT_CAPABILITIES, &self.identity.capabilities)?;
        }
        if missing(META_CLIENT_INFO) {
            m.serialize_entry(META_CLIENT_INFO, &self.identity.info)?;
        }
        m.end()
    }
}

/// A notification's bytes.
pub fn notification_bytes(method: &str, params: &Value) -> Vec<u8> {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
        .to_string()
        .into_bytes()
}

/// The bytes answering a server request.
pub fn answer_bytes(id: &RequestId, outcome: &Result<Value, ErrorObject>) -> Vec<u8> {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    }
    .to_string()
    .into_bytes()
}

/// `notifications/cancelled` for our request `id`.
pub fn cancel_bytes(id: &RequestId, reason: &str) -> Vec<u8> {
    notification_bytes(
        "notifications/cancelled",
        &json!({"requestId": id, "reason": reason}),
    )
}

/// `initialize`'s params, offering the newest legacy revision.
pub fn initialize_params(identity: &ClientIdentity) -> Value {
    json!({
        "protocolVersion": ProtocolVersion::LATEST_LEGACY.as_str(),
        "capabilities": identity.capabilities,
        "clientInfo": identity.info,
    })
}

/// The legacy revision the server chose in its `initialize` result, if this client speaks it.
pub fn negotiated_legacy_version(result: &Value) -> Result<ProtocolVersion, String> {
    let Some(v) = result.get("protocolVersion").and_then(Value::as_str) else {
        return Err("the initialize result has no protocolVersion".into());
    };
    match ProtocolVersion::parse(v) {
        Some(p) if p.era() == crate::wire::Era::Legacy => Ok(p),
        _ => Err(format!(
            "the server chose protocol version {v:?}, which this client does not speak"
        )),
    }
}

/// What the `server/discover` probe found out.
#[derive(Debug, Clone, PartialEq)]
pub enum DiscoverOutcome {
    /// A modern server speaking this version.
    Modern(ProtocolVersion),
    /// A modern server that speaks none of our modern versions (it lists what it speaks).
    ModernUnsupported(Vec<String>),
    /// Anything else: a legacy server. Fall back to `initialize`.
    Legacy(String),
}

/// Judges the answer to `server/discover` (or, over HTTP, the error a transport made of a
/// 4xx answer). A recognized modern error identifies a modern server; any other error a
/// legacy one, as 2026-07-28 "Backward Compatibility" says.
pub fn judge_discover(outcome: Result<&Value, &ErrorObject>) -> DiscoverOutcome {
    match outcome {
        Ok(result) => {
            let versions: Vec<&str> = result
                .get("supportedVersions")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if versions.is_empty() {
                // A DiscoverResult without versions: the version we asked for was accepted.
                return DiscoverOutcome::Modern(ProtocolVersion::LATEST_MODERN);
            }
            match versions
                .iter()
                .filter_map(|v| ProtocolVersion::parse(v))
                .find(|v| v.era() == crate::wire::Era::Modern)
            {
                Some(v) => DiscoverOutcome::Modern(v),
                None => DiscoverOutcome::ModernUnsupported(
                    versions.iter().map(|v| (*v).to_owned()).collect(),
                ),
            }
        }
        Err(e) if is_modern_error(e) => {
            let supported: Vec<String> = e
                .data
                .as_ref()
                .and_then(|d| d.get("supported").or_else(|| d.get("supportedVersions")))
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            match supported
                .iter()
                .filter_map(|v| ProtocolVersion::parse(v))
                .find(|v| v.era() == crate::wire::Era::Modern)
            {
                Some(v) if e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0 => {
                    DiscoverOutcome::Modern(v)
                }
                _ if e.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0 => {
                    DiscoverOutcome::ModernUnsupported(supported)
                }
                // A modern error about something else (headers, capabilities): still modern.
                _ => DiscoverOutcome::Modern(ProtocolVersion::LATEST_MODERN),
            }
        }
        Err(e) => DiscoverOutcome::Legacy(format!("error {}: {}", e.code, e.message)),
    }
}

/// The JSON-RPC errors only a modern server sends.
pub fn is_modern_error(e: &ErrorObject) -> bool {
    [
        ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        ErrorCode::HEADER_MISMATCH,
    ]
    .iter()
    .any(|c| c.0 == e.code)
}

/// One round's `InputRequiredResult`.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    /// The requests to answer, by key, as (method, params).
    pub requests: Vec<(String, String, Value)>,
    /// The state to pass back untouched.
    pub request_state: Option<String>,
}

/// `Some` when `result` is an `InputRequiredResult`; an error when it is one but malformed.
pub fn input_required(result: &Value) -> Option<Result<InputRequired, String>> {
    if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
        return None;
    }
    let request_state = match result.get("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Some(Err("requestState is not a string".into())),
    };
    let mut requests = Vec::new();
    match result.get("inputRequests") {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            if let Err(e) = input_requests_within_bound(map.len()) {
                return Some(Err(e));
            }
            for (key, request) in map {
                let Some(method) = request.get("method").and_then(Value::as_str) else {
                    return Some(Err(format!("inputRequests[{key:?}] has no method")));
                };
                let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
                requests.push((key.clone(), method.to_owned(), params));
            }
        }
        Some(_) => return Some(Err("inputRequests is not an object".into())),
    }
    Some(Ok(InputRequired {
        requests,
        request_state,
    }))
}

/// Refuses a round of more than [`MAX_INPUT_REQUESTS`] input requests (before any is
/// answered): a request's own rounds and a task's `input_required` alike.
pub fn input_requests_within_bound(count: usize) -> Result<(), String> {
    if count > MAX_INPUT_REQUESTS {
        return Err(format!(
            "the server asked for {count} inputs in one round; the limit is {MAX_INPUT_REQUESTS}"
        ));
    }
    Ok(())
}

/// The params of the retry: the original params with `inputResponses` and the
/// `requestState` exactly as the server sent it.
pub fn retry_params(
    original: &Value,
    responses: Map<String, Value>,
    request_state: Option<&str>,
) -> Value {
    let mut obj = object(original.clone());
    obj.insert("inputResponses".into(), Value::Object(responses));
    match request_state {
        Some(s) => {
            obj.insert("requestState".into(), Value::String(s.to_owned()));
        }
        None => {
            obj.remove("requestState");
        }
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity() -> ClientIdentity {
        ClientIdentity {
            info: json!({"name": "t", "version": "1"}),
            capabilities: capabilities(InputKinds {
                sampling: true,
                elicitation_form: true,
                elicitation_url: false,
                roots: true,
            }),
        }
    }

    #[test]
    fn ids_are_unique_and_answers_match_once() {
        let mut t = RequestTable::default();
        let a = t.insert("a");
        let b = t.insert("b");
        assert_ne!(a, b);
        assert_eq!(t.take(&b), Some("b"));
        assert_eq!(t.take(&b), None, "an id is answered once");
        assert_eq!(t.take(&RequestId::from("unknown")), None);
        assert_eq!(t.drain(), vec!["a"]);
        assert!(t.is_empty());
    }

    #[test]
    fn capabilities_follow_the_handlers() {
        assert_eq!(capabilities(InputKinds::default()), json!({}));
        assert_eq!(
            identity().capabilities,
            json!({"sampling": {}, "elicitation": {"form": {}}, "roots": {"listChanged": true}})
        );
        let url_only = capabilities(InputKinds {
            elicitation_url: true,
            ..InputKinds::default()
        });
        assert_eq!(url_only, json!({"elicitation": {"url": {}}}));
    }

    #[test]
    fn modern_request_bytes_equal_the_modern_params_encoded() {
        let id = RequestId::Number(7.into());
        for params in [
            json!(null),
            json!({"name": "x"}),
            json!({"name": "x", "_meta": "not an object"}),
            json!({"name": "x", "_meta": {"progressToken": "p1", META_PROTOCOL_VERSION: "custom"}}),
            json!({"_meta": {META_CLIENT_INFO: {"name": "mine"}, META_CLIENT_CAPABILITIES: {}}}),
        ] {
            let bytes = modern_request_bytes(&id, "tools/call", &params, "2026-07-28", &identity());
            let expected = request_bytes(
                &id,
                "tools/call",
                &modern_params(params.clone(), "2026-07-28", &identity()),
            );
            let got: Value = serde_json::from_slice(&bytes).unwrap();
            let want: Value = serde_json::from_slice(&expected).unwrap();
            assert_eq!(got, want, "{params}");
            assert_eq!(got["jsonrpc"], "2.0");
            assert_eq!(got["id"], 7);
        }
    }

    #[test]
    fn modern_params_keep_what_the_caller_set() {
        let p = modern_params(
            json!({"name": "x", "_meta": {META_PROTOCOL_VERSION: "custom"}}),
            "2026-07-28",
            &identity(),
        );
        assert_eq!(p["_meta"][META_PROTOCOL_VERSION], "custom");
        assert_eq!(p["_meta"][META_CLIENT_INFO]["name"], "t");
        assert_eq!(p["_meta"][META_CLIENT_CAPABILITIES]["sampling"], json!({}));
        let p = modern_params(json!(null), "2026-07-28", &identity());
        assert_eq!(p["_meta"][META_PROTOCOL_VERSION], "2026-07-28");
    }

    #[test]
    fn server_messages_are_classified_without_panicking() {
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":3,"result":{"a":1}}"#),
            ServerMessage::Response { outcome: Ok(_), .. }
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"m"}}"#),
            ServerMessage::Response {
                outcome: Err(_),
                ..
            }
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#),
            ServerMessage::Request { ref method, .. } if method == "roots/list"
        ));
        assert!(matches!(
            classify(
                br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#
            ),
            ServerMessage::Notification { .. }
        ));
        for bad in [
            &b"{not json"[..],
            b"",
            b"[]",
            b"42",
            b"\xff\xfe",
            b"{\"jsonrpc\":\"2.0\"}",
        ] {
            assert!(
                matches!(classify(bad), ServerMessage::Invalid(_)),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn input_requests_are_classified_by_method_and_mode() {
        assert_eq!(
            InputRequest::classify("ping", json!({})),
            InputRequest::Ping
        );
        assert!(matches!(
            InputRequest::classify(
                "elicitation/create",
                json!({"mode": "url", "url": "https://x"})
            ),
            InputRequest::ElicitationUrl(_)
        ));
        assert!(matches!(
            InputRequest::classify("elicitation/create", json!({"message": "m"})),
            InputRequest::ElicitationForm(_)
        ));
        assert_eq!(
            InputRequest::classify("x/y", json!({})),
            InputRequest::Unknown("x/y".into())
        );
    }

    #[test]
    fn discover_falls_back_only_on_non_modern_errors() {
        let ok = json!({"supportedVersions": ["2026-07-28", "2025-11-25"]});
        assert_eq!(
            judge_discover(Ok(&ok)),
            DiscoverOutcome::Modern(ProtocolVersion::V2026_07_28)
        );
        let legacy_only = json!({"supportedVersions": ["2099-01-01"]});
        assert!(matches!(
            judge_discover(Ok(&legacy_only)),
            DiscoverOutcome::ModernUnsupported(_)
        ));
        let not_found = ErrorObject::method_not_found("server/discover");
        assert!(matches!(
            judge_discover(Err(&not_found)),
            DiscoverOutcome::Legacy(_)
        ));
        let unsupported = ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "no")
            .with_data(json!({"supported": ["2026-07-28"]}));
        assert_eq!(
            judge_discover(Err(&unsupported)),
            DiscoverOutcome::Modern(ProtocolVersion::V2026_07_28)
        );
        let unsupported = ErrorObject::new(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, "no")
            .with_data(json!({"supported": ["2030-01-01"]}));
        assert!(matches!(
            judge_discover(Err(&unsupported)),
            DiscoverOutcome::ModernUnsupported(_)
        ));
    }

    #[test]
    fn legacy_negotiation_checks_the_chosen_version() {
        assert_eq!(
            negotiated_legacy_version(&json!({"protocolVersion": "2025-06-18"})),
            Ok(ProtocolVersion::V2025_06_18)
        );
        assert!(negotiated_legacy_version(&json!({"protocolVersion": "2026-07-28"})).is_err());
        assert!(negotiated_legacy_version(&json!({"protocolVersion": "1999"})).is_err());
        assert!(negotiated_legacy_version(&json!({})).is_err());
        let p = initialize_params(&identity());
        assert_eq!(p["protocolVersion"], "2025-11-25");
        assert_eq!(p["capabilities"]["roots"]["listChanged"], true);
    }

    /// A server's one round cannot ask for more inputs than the bound: each is a handler
    /// call (a question to the user, a sampling request) or, in the gateway, a request to
    /// its client (issue #26, a peer-fed loop with no bound).
    #[test]
    fn a_round_asking_for_too_many_inputs_is_refused() {
        let asks = |n: usize| {
            let requests: Map<String, Value> = (0..n)
                .map(|i| (format!("k{i}"), json!({"method": "roots/list"})))
                .collect();
            json!({"resultType": "input_required", "inputRequests": requests})
        };
        let ir = input_required(&asks(MAX_INPUT_REQUESTS)).unwrap().unwrap();
        assert_eq!(ir.requests.len(), MAX_INPUT_REQUESTS);
        let e = match input_required(&asks(100_000)).unwrap() {
            Ok(ir) => panic!("{} inputs accepted in one round", ir.requests.len()),
            Err(e) => e,
        };
        assert!(e.contains("100000") && e.contains("64"), "{e}");
    }

    #[test]
    fn input_required_round_trips_the_state_untouched() {
        let state = "opaque.{\"not\": json}==";
        let r = json!({
            "resultType": "input_required",
            "inputRequests": {"k": {"method": "roots/list", "params": {}}},
            "requestState": state,
        });
        let ir = input_required(&r).unwrap().unwrap();
        assert_eq!(
            ir.requests,
            vec![("k".into(), "roots/list".into(), json!({}))]
        );
        let mut responses = Map::new();
        responses.insert("k".into(), json!({"roots": []}));
        let retry = retry_params(
            &json!({"name": "t", "arguments": {"a": 1}, "requestState": "old"}),
            responses,
            ir.request_state.as_deref(),
        );
        assert_eq!(retry["requestState"], state);
        assert_eq!(retry["arguments"], json!({"a": 1}));
        assert_eq!(retry["inputResponses"]["k"]["roots"], json!([]));
        assert!(input_required(&json!({"resultType": "complete"})).is_none());
        assert!(input_required(&json!({"content": []})).is_none());
        assert!(
            input_required(&json!({"resultType": "input_required", "inputRequests": []}))
                .unwrap()
                .is_err()
        );
        assert!(
            input_required(&json!({"resultType": "input_required", "requestState": 5}))
                .unwrap()
                .is_err()
        );
    }
}
