//! How a transport should carry a request: the protocol rules a transport used to decide
//! itself, decided here once. [`Engine::classify`] says which path serves a message (stateless
//! 2026-07-28, `initialize`, a 2025-11-25 session, or a refusal before the engine), and parses
//! its `_meta` once ([`RequestMeta`]); [`Engine::respond_as`] says whether the answer is one
//! JSON message or a stream; [`status_for`] gives the status an answer deserves.
//!
//! Plain data in, plain data out: what the transport knows of a request besides its body
//! comes in as [`Delivery`], and statuses are HTTP status codes as numbers. No HTTP type is
//! named here (the core does not depend on `http`); the HTTP transport maps these onto its
//! responses. Not a router: it does not run the request.

use super::meta::RequestMeta;
use super::{Engine, Session};
use crate::wire::jsonrpc::Decoded;
use crate::wire::{ErrorCode, ErrorObject, IncomingMessage, OutgoingMessage};

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
        /// The status (an HTTP status code).
        status: u16,
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

/// `400`, `404`, `406`: the statuses a refusal here uses.
const BAD_REQUEST: u16 = 400;
const NOT_FOUND: u16 = 404;
const NOT_ACCEPTABLE: u16 = 406;
const OK: u16 = 200;
const SERVICE_UNAVAILABLE: u16 = 503;

fn refuse(status: u16, code: ErrorCode, message: &str) -> Route {
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
                if !delivery.has_session && method == "initialize" =>
            {
                Route::Initialize
            }
            _ if delivery.has_session => Route::Legacy,
            Decoded::Single(Ok(IncomingMessage::Request { .. })) => Route::Modern,
            Decoded::Single(Err(e)) => Route::Refuse {
                status: BAD_REQUEST,
                message: e.to_response(),
            },
            Decoded::Single(Ok(IncomingMessage::Notification { .. })) => Route::Accept,
            _ => refuse(
                BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                "Missing Mcp-Session-Id header",
            ),
        };
        Classification { route, meta }
    }

    /// Whether to answer `message` as one JSON message or as a stream: a stream when the
    /// client accepts one and the request may produce messages before its response (a
    /// `subscriptions/listen`; a `tools/call` with a progress token or a log level, or, on a
    /// 2025-11-25 `session`, one that set a log level or declared a capability the server
    /// may ask for). `subscriptions/listen` has no JSON form: without a stream it is refused
    /// (`406`, `-32600`).
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
        let listen = method == Some("subscriptions/listen") && session.is_none();
        if listen && !delivery.accepts_stream {
            return Err(refuse(
                NOT_ACCEPTABLE,
                ErrorCode::INVALID_REQUEST,
                "subscriptions/listen needs Accept: text/event-stream",
            ));
        }
        if !delivery.accepts_stream {
            return Ok(Respond::Json);
        }
        if delivery.always_stream {
            return Ok(Respond::Stream);
        }
        let stream = match method {
            Some("subscriptions/listen") => true,
            Some("tools/call") => {
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

/// The status (an HTTP status code) that `message`, the answer to a request on `route`,
/// deserves. 2026-07-28 maps errors onto statuses: unknown method `404`; malformed messages,
/// bad parameters and the header/`_meta` mismatch errors `400`; anything else `200`, with the
/// error in the body. A refused `initialize` is `400`. 2025-11-25 answers every message `200`.
pub fn status_for(message: &OutgoingMessage, route: &Route) -> u16 {
    match (route, message) {
        (Route::Refuse { status, .. }, _) => *status,
        // Retry later, in either era: busy, shutting down, or a shared store away.
        (_, OutgoingMessage::Error { error, .. }) if error.code == ErrorCode::UNAVAILABLE.0 => {
            SERVICE_UNAVAILABLE
        }
        (Route::Modern, OutgoingMessage::Error { error, .. }) => modern_status(error),
        (Route::Initialize, OutgoingMessage::Response { .. } | OutgoingMessage::Encoded { .. }) => {
            OK
        }
        (Route::Initialize, _) => BAD_REQUEST,
        _ => OK,
    }
}

/// The status of a 2026-07-28 error.
fn modern_status(e: &ErrorObject) -> u16 {
    match e.code {
        -32601 => NOT_FOUND,
        -32700 | -32600 | -32602 | -32020 | -32021 | -32022 => BAD_REQUEST,
        _ => OK,
    }
}

#[cfg(test)]
#[path = "classify_tests.rs"]
mod tests;
