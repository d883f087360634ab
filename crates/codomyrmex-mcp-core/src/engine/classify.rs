//! How a transport should carry a request: the protocol rules a transport used to decide
//! itself, decided here once. [`Engine::classify`] says which path serves a message (stateless
//! 2026-07-28, `initialize`, a 2025-11-25 session, or a refusal before the engine), and parses
//! its `_meta` once ([`RequestMeta`]); [`Engine::respond_as`] says whether the answer is one
//! JSON message, a stream, or a `subscriptions/listen` stream; [`status_for`] gives the
//! [`Status`] an answer deserves; [`legacy_version_header`] judges a 2025-11-25
//! `MCP-Protocol-Version` header; [`changes_session_record`] says when a session's stored
//! record must be written again, and [`mirrored_name_field`] and [`called_tool`] which body
//! fields a 2026-07-28 request's headers mirror. What a message asks of the other instances of a cluster is
//! read here too ([`cancelled_request`], [`relayed_task`]). The media types are
//! [`media`](super::media)'s.
//!
//! Plain data in, plain data out: what the transport knows of a request besides its body
//! comes in as [`Delivery`], and the outcome is a [`Status`], transport-neutral. No HTTP type
//! is named here (the core does not depend on `http`); the HTTP transport maps a [`Status`]
//! onto its status code in one place and obeys the rest. Not a router: it does not run the
//! request. No transport matches on a method name: it asks here
//! (`crates/codomyrmex-mcp/tests/transport_obeys.rs` checks).

use super::meta::RequestMeta;
use super::{Engine, Session};
use crate::wire::jsonrpc::Decoded;
use crate::wire::{
    Era, ErrorCode, ErrorObject, IncomingMessage, OutgoingMessage, ProtocolVersion, RequestId,
};

/// What a transport knows of a request besides its body, as plain data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Delivery {
    /// The client accepts one JSON message as the answer (`Accept: application/json`).
    pub accepts_json: bool,
    /// The client accepts a stream of messages (`Accept: text/event-stream`).
    pub accepts_stream: bool,
    /// The server is configured to stream whenever the client accepts a stream.
    pub always_stream: bool,
    /// The request names a 2025-11-25 session (`Mcp-Session-Id`).
    pub has_session: bool,
}

impl Delivery {
    /// A delivery with the given facts.
    pub fn new(
        accepts_json: bool,
        accepts_stream: bool,
        always_stream: bool,
        has_session: bool,
    ) -> Self {
        Self {
            accepts_json,
            accepts_stream,
            always_stream,
            has_session,
        }
    }
}

/// Which path serves a message.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Route {
    /// A stateless 2026-07-28 request, served on a one-shot session. A request with neither a
    /// session nor `_meta` goes here too: the engine answers it `-32602` (missing `_meta`).
    Modern,
    /// `initialize` with no session: it opens a 2025-11-25 session.
    Initialize,
    /// A message of the named 2025-11-25 session.
    Legacy,
    /// Nothing to serve: acknowledge (`202`). A notification or response with no session;
    /// modern clients send none over a request-per-message transport.
    Accept,
    /// Refused before the engine: answer `message` with `status`.
    Refuse {
        /// The status.
        status: Status,
        /// The error to send.
        message: OutgoingMessage,
    },
}

/// How to answer a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Respond {
    /// One JSON message.
    Json,
    /// A stream (SSE): the request may produce messages before its response.
    Stream,
    /// A `subscriptions/listen` stream: a subscription, not a call. It is not drained as a
    /// call is at shutdown; it ends with the server's streams.
    Listen,
}

/// The outcome a transport reports for an answer or a refusal, transport-neutral: the HTTP
/// transport maps each onto its status code in one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Status {
    /// Served (HTTP `200`), an error in the body or not.
    Ok,
    /// A malformed request, bad parameters, or headers that contradict the body (`400`).
    BadRequest,
    /// The method (or what the request names) does not exist (`404`).
    NotFound,
    /// The client accepts no form the answer can take (`406`).
    NotAcceptable,
    /// The body is not of the media type messages travel as (`415`).
    UnsupportedMediaType,
    /// Retry later: busy, shutting down, or a shared store away (`503`).
    Unavailable,
}

/// A request turned away by a rule of the protocol before the engine sees it: with what
/// status, and the error to send.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Refusal {
    /// The status.
    pub status: Status,
    /// The error to send (with no id: the request was not read as one).
    pub error: ErrorObject,
}

impl Refusal {
    pub(crate) fn new(status: Status, code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            status,
            error: ErrorObject::new(code, message),
        }
    }
}

/// What [`Engine::classify`] made of a message: its route and its `_meta`, parsed once.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Classification {
    /// Which path serves it.
    pub route: Route,
    /// Its `_meta` (empty for anything but a single request or notification).
    pub meta: RequestMeta,
}

fn refuse(status: Status, code: ErrorCode, message: &str) -> Route {
    Route::Refuse {
        status,
        message: OutgoingMessage::Error {
            id: None,
            error: ErrorObject::new(code, message),
        },
    }
}

impl Engine {
    /// Which path serves `decoded`, and its `_meta`, parsed once. A request naming a
    /// protocol version in `_meta` is modern whatever else it carries; otherwise a session
    /// makes it legacy, and `initialize` with no session opens one.
    pub fn classify(&self, decoded: &Decoded, delivery: Delivery) -> Classification {
        let meta = match decoded {
            Decoded::Single(Ok(
                IncomingMessage::Request { params, .. }
                | IncomingMessage::Notification { params, .. },
            )) => RequestMeta::of(params.as_ref()),
            _ => RequestMeta::default(),
        };
        let route = match decoded {
            Decoded::Single(Ok(IncomingMessage::Request { .. })) if meta.names_version() => {
                Route::Modern
            }
            Decoded::Single(Ok(IncomingMessage::Request { method, .. }))
                if !delivery.has_session && method == INITIALIZE =>
            {
                Route::Initialize
            }
            _ if delivery.has_session => Route::Legacy,
            Decoded::Single(Ok(IncomingMessage::Request { .. })) => Route::Modern,
            Decoded::Single(Err(e)) => Route::Refuse {
                status: Status::BadRequest,
                message: e.to_response(),
            },
            Decoded::Single(Ok(IncomingMessage::Notification { .. })) => Route::Accept,
            _ => refuse(
                Status::BadRequest,
                ErrorCode::INVALID_REQUEST,
                "Missing Mcp-Session-Id header",
            ),
        };
        Classification { route, meta }
    }

    /// Whether to answer `message` as one JSON message or as a stream: a stream when the
    /// client accepts one and the request may produce messages before its response (a
    /// `tools/call` with a progress token or a log level, or, on a 2025-11-25 `session`, one
    /// that set a log level or declared a capability the server may ask for). A stateless
    /// `subscriptions/listen` is a [`Respond::Listen`] stream, and has no JSON form: without
    /// a stream it is refused (`406`, `-32600`).
    pub fn respond_as(
        &self,
        message: &IncomingMessage,
        meta: &RequestMeta,
        delivery: Delivery,
        session: Option<&Session>,
    ) -> Result<Respond, Route> {
        let method = match message {
            IncomingMessage::Request { method, .. } => Some(method.as_str()),
            _ => None,
        };
        if method == Some(LISTEN) && session.is_none() {
            if !delivery.accepts_stream {
                return Err(refuse(
                    Status::NotAcceptable,
                    ErrorCode::INVALID_REQUEST,
                    "subscriptions/listen needs Accept: text/event-stream",
                ));
            }
            return Ok(Respond::Listen);
        }
        if !delivery.accepts_stream {
            return Ok(Respond::Json);
        }
        if delivery.always_stream {
            return Ok(Respond::Stream);
        }
        let stream = match method {
            Some(LISTEN) => true,
            Some(CALL_TOOL) => {
                let legacy_input = session.is_some_and(|s| {
                    s.log_level().is_some()
                        || s.has_any_client_capability(&["sampling", "elicitation", "roots"])
                });
                meta.progress_token.is_sent() || meta.log_level.is_sent() || legacy_input
            }
            _ => false,
        };
        Ok(if stream {
            Respond::Stream
        } else {
            Respond::Json
        })
    }
}

const INITIALIZE: &str = "initialize";
const LISTEN: &str = "subscriptions/listen";
const CALL_TOOL: &str = "tools/call";
const SET_LEVEL: &str = "logging/setLevel";
const TASK_RESULT: &str = "tasks/result";
const CANCELLED: &str = "notifications/cancelled";

/// Whether a 2025-11-25 request's `MCP-Protocol-Version` header (its raw value, if sent) is
/// acceptable (2025-11-25, "Protocol Version Header"): absent (clients of 2025-03-26 and
/// earlier do not send it) or any legacy revision this server speaks (some clients send an
/// older one than they negotiated, and the spec does not forbid that). Anything else is
/// refused `400`, `-32600`, naming (the start of) what was sent.
pub fn legacy_version_header(value: Option<&[u8]>) -> Result<(), Refusal> {
    let Some(raw) = value else {
        return Ok(());
    };
    let v = std::str::from_utf8(raw).map(str::trim).unwrap_or("");
    match ProtocolVersion::parse(v) {
        Some(p) if p.era() == Era::Legacy => Ok(()),
        _ => Err(Refusal::new(
            Status::BadRequest,
            ErrorCode::INVALID_REQUEST,
            format!(
                "Unsupported MCP-Protocol-Version header: {}",
                v.chars().take(32).collect::<String>()
            ),
        )),
    }
}

/// Whether handling `message` on a 2025-11-25 session changes what the session's stored
/// record holds (its log level, `logging/setLevel`): a transport with a shared session
/// store writes the record again after handling it, so other instances see the change.
pub fn changes_session_record(message: &IncomingMessage) -> bool {
    matches!(message, IncomingMessage::Request { method, .. } if method == SET_LEVEL)
}

/// The request a cancellation names (`notifications/cancelled`'s `requestId`); `None` for
/// any other message, or one that names no valid id.
pub fn cancelled_request(message: &IncomingMessage) -> Option<RequestId> {
    match message {
        IncomingMessage::Notification { method, params } if method == CANCELLED => {
            cancelled_id(params.as_ref()?)
        }
        _ => None,
    }
}

/// The `requestId` of a `notifications/cancelled`'s params: the one reading of it, here and
/// in the engine's handling.
pub(super) fn cancelled_id(
    params: &serde_json::Map<String, serde_json::Value>,
) -> Option<RequestId> {
    params
        .get("requestId")
        .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok())
}

/// The task whose messages a 2025-11-25 `tasks/result` waits for (its `taskId`): the
/// instance running that task relays what it sends the client to the stream this request is
/// answered on. `None` for any other message.
pub fn relayed_task(message: &IncomingMessage) -> Option<&str> {
    match message {
        IncomingMessage::Request { method, params, .. } if method == TASK_RESULT => params
            .as_ref()?
            .get("taskId")
            .and_then(serde_json::Value::as_str),
        _ => None,
    }
}

/// The parameter a 2026-07-28 request's `Mcp-Name` header mirrors, by its method: the tool
/// or prompt name, the resource URI, or (SEP-2663) the task id that routes a `tasks/*`
/// request. `None`: the method has no `Mcp-Name`.
pub fn mirrored_name_field(method: &str) -> Option<&'static str> {
    match method {
        CALL_TOOL | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// The tool a `tools/call` (`method`, `params`) names, with its arguments: the request whose
/// tool's `x-mcp-header` parameters are mirrored in headers. `None` for any other request.
pub fn called_tool<'a>(
    method: &str,
    params: &'a serde_json::Map<String, serde_json::Value>,
) -> Option<(
    &'a str,
    Option<&'a serde_json::Map<String, serde_json::Value>>,
)> {
    if method != CALL_TOOL {
        return None;
    }
    let name = params.get("name").and_then(serde_json::Value::as_str)?;
    Some((
        name,
        params
            .get("arguments")
            .and_then(serde_json::Value::as_object),
    ))
}

/// The [`Status`] that `message`, the answer to a request on `route`, deserves.
/// 2026-07-28 maps errors onto statuses: unknown method `NotFound`; malformed messages, bad
/// parameters and the header/`_meta` mismatch errors `BadRequest`; anything else `Ok`, with
/// the error in the body. A refused `initialize` is `BadRequest`. 2025-11-25 answers every
/// message `Ok`. Busy, shutting down or a store away is `Unavailable` in either era.
pub fn status_for(message: &OutgoingMessage, route: &Route) -> Status {
    match (route, message) {
        (Route::Refuse { status, .. }, _) => *status,
        // Retry later, in either era: busy, shutting down, or a shared store away.
        (_, OutgoingMessage::Error { error, .. }) if error.code == ErrorCode::UNAVAILABLE.0 => {
            Status::Unavailable
        }
        (Route::Modern, OutgoingMessage::Error { error, .. }) => modern_status(error),
        (Route::Initialize, OutgoingMessage::Response { .. } | OutgoingMessage::Encoded { .. }) => {
            Status::Ok
        }
        (Route::Initialize, _) => Status::BadRequest,
        _ => Status::Ok,
    }
}

/// The status of a 2026-07-28 error.
fn modern_status(e: &ErrorObject) -> Status {
    match e.code {
        -32601 => Status::NotFound,
        -32700 | -32600 | -32602 | -32020 | -32021 | -32022 => Status::BadRequest,
        _ => Status::Ok,
    }
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
