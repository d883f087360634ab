//! JSON-RPC 2.0 envelopes: decoding what arrives and encoding what leaves.
//!
//! Decoding classifies a message as a request, a notification or a response and reports
//! malformed input as a [`DecodeError`] that already knows its JSON-RPC error code. It never
//! panics, whatever the bytes.

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use super::EncodedResult;

/// A JSON-RPC request id. MCP allows strings and integers, never null.
///
/// Numbers keep their exact textual value so they are echoed back unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// An integer id.
    Number(serde_json::Number),
    /// A string id.
    String(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(v: i64) -> Self {
        Self::Number(v.into())
    }
}

impl From<&str> for RequestId {
    fn from(v: &str) -> Self {
        Self::String(v.to_owned())
    }
}

/// The standard and MCP-defined JSON-RPC error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// The method does not exist or is not available.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// Invalid method parameters.
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// Internal JSON-RPC error.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// Resource not found, as 2025-11-25 and earlier define it (modern revisions use -32602).
    pub const LEGACY_RESOURCE_NOT_FOUND: Self = Self(-32002);
    /// URL elicitation required (2025-11-25 only).
    pub const LEGACY_URL_ELICITATION_REQUIRED: Self = Self(-32042);
    /// An HTTP header disagrees with the body (2026-07-28).
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// The request needs a client capability the client did not declare (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: Self = Self(-32021);
    /// The requested protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: Self = Self(-32022);
    /// The server is shutting down: the request was cancelled when its grace period ended
    /// (a server-defined code of this implementation).
    pub const SHUTTING_DOWN: Self = Self(-32000);
    /// The server cannot serve this request now; a retry (on this or another instance) may
    /// succeed: it is busy, shutting down, or a shared store it needs is unavailable. The
    /// same code as [`SHUTTING_DOWN`](Self::SHUTTING_DOWN); over HTTP, `503` with
    /// `Retry-After`.
    pub const UNAVAILABLE: Self = Self(-32000);
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code.
    pub code: i64,
    /// A short description. Never carries panic text, paths or backtraces.
    pub message: String,
    /// Optional structured detail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: code.0,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32602` with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }

    /// `-32601` for `method`.
    pub fn method_not_found(method: &str) -> Self {
        let shown: String = method.chars().take(128).collect();
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {shown}"),
        )
    }

    /// `-32603` with a fixed, non-leaking message.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }
}

/// A decoded message from the peer.
#[derive(Debug, Clone, PartialEq)]
pub enum IncomingMessage {
    /// A request, which expects exactly one response.
    Request {
        /// The id to echo.
        id: RequestId,
        /// The method name.
        method: String,
        /// The params object, if any.
        params: Option<Map<String, Value>>,
    },
    /// A notification, which is never answered.
    Notification {
        /// The method name.
        method: String,
        /// The params object, if any.
        params: Option<Map<String, Value>>,
    },
    /// A successful response to a request we sent.
    Response {
        /// The id of our request.
        id: RequestId,
        /// The result.
        result: Value,
    },
    /// An error response to a request we sent (or to something we sent that was unreadable).
    Error {
        /// The id of our request; `None` when the peer could not read it.
        id: Option<RequestId>,
        /// The error.
        error: ErrorObject,
    },
}

/// What a line or body decoded to.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// One message, or an invalid one with its error.
    Single(Result<IncomingMessage, DecodeError>),
    /// A JSON array: each element decoded on its own.
    Batch(Vec<Result<IncomingMessage, DecodeError>>),
}

/// Why bytes are not a valid JSON-RPC message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes are not JSON (`-32700`).
    #[error("Parse error: {0}")]
    Parse(String),
    /// The JSON is not a valid JSON-RPC message (`-32600`).
    #[error("Invalid request: {reason}")]
    Invalid {
        /// The id, when one could be read, so the error can be addressed.
        id: Option<RequestId>,
        /// What is wrong.
        reason: String,
    },
}

impl DecodeError {
    /// The error response this failure deserves: `-32700` with a null id for unparsable
    /// bytes, `-32600` (addressed to the id when one could be read) for an invalid message.
    /// As in JSON-RPC 2.0's own examples, a malformed message is answered even when it looks
    /// like a notification, because the receiver cannot trust that reading of it.
    pub fn to_response(&self) -> OutgoingMessage {
        match self {
            Self::Parse(msg) => OutgoingMessage::Error {
                id: None,
                error: ErrorObject::new(ErrorCode::PARSE_ERROR, format!("Parse error: {msg}")),
            },
            Self::Invalid { id, reason } => OutgoingMessage::Error {
                id: id.clone(),
                error: ErrorObject::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("Invalid request: {reason}"),
                ),
            },
        }
    }
}

/// Decodes one line or body. Never panics.
pub fn decode(bytes: &[u8]) -> Decoded {
    // A single message (the common case) is read straight into its envelope, without building
    // the top-level object as a map first. Anything else, and any input the envelope cannot
    // read, takes the general path, which also words the parse error.
    // Checking the UTF-8 once, up front, spares the parser checking each string on its own.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
        && let Ok(text) = std::str::from_utf8(bytes)
        && let Ok(envelope) = serde_json::from_str::<Envelope>(text)
    {
        return Decoded::Single(envelope.into_message());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => decode_value(value),
        Err(e) => Decoded::Single(Err(DecodeError::Parse(parse_error_text(&e)))),
    }
}

fn parse_error_text(e: &serde_json::Error) -> String {
    // serde_json's messages carry only positions and categories, never input text.
    format!("invalid JSON at line {} column {}", e.line(), e.column())
}

/// Decodes an already-parsed JSON value.
pub fn decode_value(value: Value) -> Decoded {
    match value {
        Value::Array(items) => {
            if items.is_empty() {
                return Decoded::Single(Err(DecodeError::Invalid {
                    id: None,
                    reason: "empty batch".into(),
                }));
            }
            Decoded::Batch(items.into_iter().map(decode_one).collect())
        }
        other => Decoded::Single(decode_one(other)),
    }
}

fn invalid(id: Option<RequestId>, reason: impl Into<String>) -> DecodeError {
    DecodeError::Invalid {
        id,
        reason: reason.into(),
    }
}

fn decode_one(value: Value) -> Result<IncomingMessage, DecodeError> {
    let Value::Object(obj) = value else {
        return Err(invalid(None, "a message must be a JSON object"));
    };
    Envelope::from_object(obj).into_message()
}

/// The members of a message object that JSON-RPC gives meaning to; others are ignored. A
/// member given twice keeps its last value, as in a decoded JSON object.
#[derive(Default)]
struct Envelope {
    jsonrpc: Option<JsonRpcTag>,
    id: Option<Value>,
    method: Option<Value>,
    params: Option<Value>,
    result: Option<Value>,
    error: Option<Value>,
}

impl Envelope {
    fn from_object(mut obj: Map<String, Value>) -> Self {
        Self {
            jsonrpc: obj.remove("jsonrpc").map(|v| JsonRpcTag::of(&v)),
            id: obj.remove("id"),
            method: obj.remove("method"),
            params: obj.remove("params"),
            result: obj.remove("result"),
            error: obj.remove("error"),
        }
    }

    fn into_message(self) -> Result<IncomingMessage, DecodeError> {
        // Read the id first so that later errors can be addressed to it.
        let id = match self.id {
            None => None,
            Some(Value::Null) => Some(None),
            Some(Value::String(s)) => Some(Some(RequestId::String(s))),
            Some(Value::Number(n)) => {
                if n.is_i64() || n.is_u64() {
                    Some(Some(RequestId::Number(n)))
                } else {
                    return Err(invalid(None, "id must be a string or an integer"));
                }
            }
            Some(_) => return Err(invalid(None, "id must be a string or an integer")),
        };
        let known_id = id.clone().flatten();
        if self.jsonrpc != Some(JsonRpcTag::Two) {
            return Err(invalid(known_id, "jsonrpc must be \"2.0\""));
        }
        let params = match self.params {
            None => None,
            Some(Value::Object(m)) => Some(m),
            Some(_) => return Err(invalid(known_id, "params must be an object")),
        };
        if let Some(method) = self.method {
            let Value::String(method) = method else {
                return Err(invalid(known_id, "method must be a string"));
            };
            if self.result.is_some() || self.error.is_some() {
                return Err(invalid(known_id, "a request cannot carry result or error"));
            }
            return match id {
                None => Ok(IncomingMessage::Notification { method, params }),
                Some(None) => Err(invalid(None, "request id must not be null")),
                Some(Some(id)) => Ok(IncomingMessage::Request { id, method, params }),
            };
        }
        if params.is_some() {
            return Err(invalid(known_id, "missing method"));
        }
        match (self.result, self.error) {
            (Some(result), None) => match known_id {
                Some(id) => Ok(IncomingMessage::Response { id, result }),
                None => Err(invalid(None, "a result response needs an id")),
            },
            (None, Some(error)) => {
                let error: ErrorObject = serde_json::from_value(error)
                    .map_err(|_| invalid(known_id.clone(), "malformed error object"))?;
                Ok(IncomingMessage::Error {
                    id: known_id,
                    error,
                })
            }
            (Some(_), Some(_)) => Err(invalid(
                known_id,
                "a response cannot carry both result and error",
            )),
            (None, None) => Err(invalid(known_id, "missing method")),
        }
    }
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(EnvelopeVisitor)
    }
}

struct EnvelopeVisitor;

impl<'de> serde::de::Visitor<'de> for EnvelopeVisitor {
    type Value = Envelope;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC message object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
        let mut e = Envelope::default();
        while let Some(member) = map.next_key::<Member>()? {
            let slot = match member {
                Member::JsonRpc => {
                    e.jsonrpc = Some(map.next_value()?);
                    continue;
                }
                Member::Id => &mut e.id,
                Member::Method => &mut e.method,
                Member::Params => &mut e.params,
                Member::Result => &mut e.result,
                Member::Error => &mut e.error,
                Member::Other => {
                    // Parsed, not skipped: `IgnoredAny` takes numbers out of `f64`'s range and
                    // nesting past the recursion limit, which the general path refuses. An
                    // unknown member is rare, so the cost does not matter.
                    map.next_value::<Value>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value()?);
        }
        Ok(e)
    }
}

/// The `jsonrpc` member: `"2.0"` or anything else, read without copying the string (a
/// non-string value is parsed all the same, so that input the general path refuses is refused
/// here too).
#[derive(PartialEq)]
enum JsonRpcTag {
    Two,
    Other,
}

impl JsonRpcTag {
    fn of(value: &Value) -> Self {
        if value.as_str() == Some("2.0") {
            Self::Two
        } else {
            Self::Other
        }
    }
}

impl<'de> Deserialize<'de> for JsonRpcTag {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TagVisitor;
        impl<'de> serde::de::Visitor<'de> for TagVisitor {
            type Value = JsonRpcTag;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<JsonRpcTag, E> {
                Ok(if v == "2.0" {
                    JsonRpcTag::Two
                } else {
                    JsonRpcTag::Other
                })
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<JsonRpcTag, E> {
                Ok(JsonRpcTag::Other)
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<JsonRpcTag, E> {
                Ok(JsonRpcTag::Other)
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<JsonRpcTag, E> {
                Ok(JsonRpcTag::Other)
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<JsonRpcTag, E> {
                Ok(JsonRpcTag::Other)
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<JsonRpcTag, E> {
                Ok(JsonRpcTag::Other)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<JsonRpcTag, A::Error> {
                Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
                Ok(JsonRpcTag::Other)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<JsonRpcTag, A::Error> {
                Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(JsonRpcTag::Other)
            }
        }
        deserializer.deserialize_any(TagVisitor)
    }
}

/// A member name, matched without copying it.
enum Member {
    JsonRpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl<'de> Deserialize<'de> for Member {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MemberVisitor;
        impl serde::de::Visitor<'_> for MemberVisitor {
            type Value = Member;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Member, E> {
                Ok(match v {
                    "jsonrpc" => Member::JsonRpc,
                    "id" => Member::Id,
                    "method" => Member::Method,
                    "params" => Member::Params,
                    "result" => Member::Result,
                    "error" => Member::Error,
                    _ => Member::Other,
                })
            }
        }
        deserializer.deserialize_str(MemberVisitor)
    }
}

/// A message to send to the peer.
#[derive(Debug, Clone, PartialEq)]
pub enum OutgoingMessage {
    /// A successful response.
    Response {
        /// The request's id, echoed.
        id: RequestId,
        /// The result object.
        result: Value,
    },
    /// A successful response whose result is already encoded (a tool call's result, a cached
    /// list page, a 2026-07-28 result with its constant members): the bytes are written as they
    /// are. On the wire it is a response like [`Response`](Self::Response).
    Encoded {
        /// The request's id, echoed.
        id: RequestId,
        /// The result object, encoded.
        result: EncodedResult,
    },
    /// An error response. `id` is `None` (`null` on the wire) when the request's id is unknown.
    Error {
        /// The request's id, echoed, if known.
        id: Option<RequestId>,
        /// The error.
        error: ErrorObject,
    },
    /// A notification.
    Notification {
        /// The method.
        method: &'static str,
        /// The params.
        params: Value,
    },
    /// A request from the server to the client.
    Request {
        /// The id the server chose.
        id: RequestId,
        /// The method.
        method: &'static str,
        /// The params.
        params: Value,
    },
    /// The answers to a batch, in one JSON array.
    Batch(Vec<OutgoingMessage>),
}

impl OutgoingMessage {
    /// Encodes the message as compact JSON with no embedded newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Most answers fit, so the buffer is seldom grown.
        let mut out = Vec::with_capacity(256);
        self.write_to(&mut out);
        out
    }

    /// Appends the compact JSON encoding to `out`: the bytes `serde_json::to_writer` writes
    /// for this message, produced by the one fast encoder ([`super::encode`]) straight into
    /// `out`, with no intermediate buffer.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        use super::encode::{write_str, write_value};
        match self {
            Self::Response { id, result } => {
                out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
                write_id(out, id);
                out.extend_from_slice(br#","result":"#);
                write_value(out, result);
                out.push(b'}');
            }
            Self::Encoded { id, result } => {
                if let Some(len) = result.encoded_len() {
                    out.reserve(len + 48);
                }
                out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
                write_id(out, id);
                out.extend_from_slice(br#","result":"#);
                result.write_to(out);
                out.push(b'}');
            }
            Self::Notification { method, params } => {
                out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
                write_str(out, method);
                out.extend_from_slice(br#","params":"#);
                write_value(out, params);
                out.push(b'}');
            }
            Self::Request { id, method, params } => {
                out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
                write_id(out, id);
                out.extend_from_slice(br#","method":"#);
                write_str(out, method);
                out.extend_from_slice(br#","params":"#);
                write_value(out, params);
                out.push(b'}');
            }
            Self::Batch(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.write_to(out);
                }
                out.push(b']');
            }
            // Small, and rare on hot paths: serde_json's own encoding.
            Self::Error { .. } => {
                // Serialising into a Vec cannot fail: keys are strings, and the writer is
                // infallible. Fall back to an internal error object all the same.
                let mark = out.len();
                if serde_json::to_writer(&mut *out, self).is_err() {
                    out.truncate(mark);
                    out.extend_from_slice(
                        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#,
                    );
                }
            }
        }
    }

    /// The id this message answers, if it is a response.
    pub fn response_id(&self) -> Option<&RequestId> {
        match self {
            Self::Response { id, .. } | Self::Encoded { id, .. } => Some(id),
            Self::Error { id, .. } => id.as_ref(),
            _ => None,
        }
    }

    /// The result of a successful response as a JSON value (parsed, for an
    /// [`Encoded`](Self::Encoded) one), if this is one.
    pub fn result_value(&self) -> Option<Value> {
        match self {
            Self::Response { result, .. } => Some(result.clone()),
            Self::Encoded { result, .. } => result.to_value().ok(),
            _ => None,
        }
    }

    /// Whether this is a response (result or error) rather than a notification or request.
    pub fn is_response(&self) -> bool {
        matches!(
            self,
            Self::Response { .. } | Self::Encoded { .. } | Self::Error { .. }
        )
    }
}

/// Appends a request id as its `Serialize` implementation writes it.
fn write_id(out: &mut Vec<u8>, id: &RequestId) {
    match id {
        RequestId::String(s) => super::encode::write_str(out, s),
        RequestId::Number(n) => super::encode::write_number(out, n),
    }
}

impl Serialize for OutgoingMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Response { id, result } => {
                let mut m = serializer.serialize_map(Some(3))?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("id", id)?;
                m.serialize_entry("result", result)?;
                m.end()
            }
            Self::Encoded { id, result } => {
                // Serializers other than `write_to` get the parsed tree.
                let result = result.to_value().map_err(serde::ser::Error::custom)?;
                let mut m = serializer.serialize_map(Some(3))?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("id", id)?;
                m.serialize_entry("result", &result)?;
                m.end()
            }
            Self::Error { id, error } => {
                let mut m = serializer.serialize_map(Some(3))?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("id", id)?;
                m.serialize_entry("error", error)?;
                m.end()
            }
            Self::Notification { method, params } => {
                let mut m = serializer.serialize_map(Some(3))?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("method", method)?;
                m.serialize_entry("params", params)?;
                m.end()
            }
            Self::Request { id, method, params } => {
                let mut m = serializer.serialize_map(Some(4))?;
                m.serialize_entry("jsonrpc", "2.0")?;
                m.serialize_entry("id", id)?;
                m.serialize_entry("method", method)?;
                m.serialize_entry("params", params)?;
                m.end()
            }
            Self::Batch(items) => items.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn single(bytes: &str) -> Result<IncomingMessage, DecodeError> {
        match decode(bytes.as_bytes()) {
            Decoded::Single(r) => r,
            Decoded::Batch(_) => panic!("unexpected batch"),
        }
    }

    #[test]
    fn every_jsonrpc_member_decodes_as_the_general_path_decodes_it() {
        // The envelope reads `jsonrpc` without copying it; what it accepts and refuses, and
        // the error each refusal gets, are the general path's (a map decoded first).
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        for tag in [
            r#""2.0""#,
            r#""2\u002e0""#,
            r#""2.1""#,
            r#""""#,
            "2",
            "2.0",
            "-1",
            "1e999",
            "null",
            "true",
            "[]",
            r#"["2.0"]"#,
            "{}",
            r#"{"a":"2.0"}"#,
            &deep,
        ] {
            let line = format!(r#"{{"jsonrpc":{tag},"id":7,"method":"x","params":{{}}}}"#);
            let general = match serde_json::from_str::<Value>(&line) {
                Ok(v) => decode_value(v),
                Err(e) => Decoded::Single(Err(DecodeError::Parse(parse_error_text(&e)))),
            };
            assert_eq!(decode(line.as_bytes()), general, "{line}");
        }
    }

    #[test]
    fn decodes_request_and_keeps_id_exact() {
        let m = single(r#"{"jsonrpc":"2.0","id":12345678901234,"method":"ping"}"#).unwrap();
        let IncomingMessage::Request { id, method, params } = m else {
            panic!()
        };
        assert_eq!(method, "ping");
        assert!(params.is_none());
        let out = OutgoingMessage::Response {
            id,
            result: json!({}),
        };
        assert_eq!(
            String::from_utf8(out.to_bytes()).unwrap(),
            r#"{"jsonrpc":"2.0","id":12345678901234,"result":{}}"#
        );
        let m = single(r#"{"jsonrpc":"2.0","id":"a\"b","method":"x","params":{}}"#).unwrap();
        assert!(
            matches!(m, IncomingMessage::Request { id: RequestId::String(ref s), .. } if s == "a\"b")
        );
    }

    #[test]
    fn notifications_and_responses() {
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap(),
            IncomingMessage::Notification { .. }
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":1,"result":{"a":1}}"#).unwrap(),
            IncomingMessage::Response { .. }
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"x"}}"#).unwrap(),
            IncomingMessage::Error { .. }
        ));
    }

    #[test]
    fn malformed_input_is_classified() {
        assert!(matches!(single("{not json"), Err(DecodeError::Parse(_))));
        assert!(matches!(single(""), Err(DecodeError::Parse(_))));
        let e = single(r#"{"jsonrpc":"1.0","id":7,"method":"x"}"#).unwrap_err();
        assert_eq!(
            e,
            DecodeError::Invalid {
                id: Some(7.into()),
                reason: "jsonrpc must be \"2.0\"".into()
            }
        );
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#),
            Err(DecodeError::Invalid { id: None, .. })
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#),
            Err(DecodeError::Invalid { .. })
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#),
            Err(DecodeError::Invalid { .. })
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":1,"method":3}"#),
            Err(DecodeError::Invalid { .. })
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
            Err(DecodeError::Invalid { .. })
        ));
        assert!(matches!(single(r#"[]"#), Err(DecodeError::Invalid { .. })));
        assert!(matches!(single(r#"42"#), Err(DecodeError::Invalid { .. })));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":1}"#),
            Err(DecodeError::Invalid { .. })
        ));
    }

    #[test]
    fn parse_error_response_has_null_id() {
        let e = single("{").unwrap_err();
        let bytes = e.to_response().to_bytes();
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["id"], Value::Null);
        assert_eq!(v["error"]["code"], -32700);
    }

    #[test]
    fn batches_decode_each_element() {
        let Decoded::Batch(items) = decode(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}, 5]"#)
        else {
            panic!()
        };
        assert_eq!(items.len(), 2);
        assert!(items[0].is_ok());
        assert!(items[1].is_err());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        assert!(matches!(single(&deep), Err(DecodeError::Parse(_))));
    }
}
