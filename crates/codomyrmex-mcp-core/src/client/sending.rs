//! What a client transport must know of a message it sends, decided here once: the client's
//! side of the server's classification ([`engine::classify`](crate::engine)). A transport
//! reads a [`Sending`] and obeys it; it never matches on a method name
//! (`crates/codomyrmex-mcp/tests/transport_obeys.rs` checks).
//!
//! Which body field a 2026-07-28 request's `Mcp-Name` header mirrors is the server's own
//! [`mirrored_name_field`], and which request a cancellation names is the server's own
//! [`cancelled_request`]: the header a client sends is by construction the one the server
//! checks.

use serde_json::{Value, json};

use crate::engine::{cancelled_request, mirrored_name_field};
use crate::wire::{IncomingMessage, RequestId};

/// The request that opens a 2025-11-25 session.
const INITIALIZE: &str = "initialize";
/// The notification that completes the 2025-11-25 handshake.
const INITIALIZED: &str = "notifications/initialized";

/// What a transport decides about one message it sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Sending<'a> {
    /// The method (`Mcp-Method`), for a request or a notification; `None` for an answer.
    pub method: Option<&'a str>,
    /// The id of a request, whose answer the transport waits for (and which a later
    /// cancellation may stop).
    pub request: Option<RequestId>,
    /// `initialize`: it opens a session, so later messages wait for it (they carry the
    /// session id it returns), and it is kept to be replayed when the session expires.
    pub opens_session: bool,
    /// The request a `notifications/cancelled` withdraws: the transport stops sending it.
    pub cancels: Option<RequestId>,
    /// The value of the `Mcp-Name` header: the body field [`mirrored_name_field`] names.
    pub name: Option<&'a str>,
}

impl<'a> Sending<'a> {
    /// What `message` (one JSON-RPC message) asks of the transport.
    pub fn of(message: &'a Value) -> Self {
        let method = message.get("method").and_then(Value::as_str);
        let params = message.get("params").and_then(Value::as_object);
        let request = method
            .and(message.get("id"))
            .and_then(|i| serde_json::from_value::<RequestId>(i.clone()).ok());
        let cancels = match (method, message.get("id")) {
            (Some(method), None) => cancelled_request(&IncomingMessage::Notification {
                method: method.to_owned(),
                params: params.cloned(),
            }),
            _ => None,
        };
        let name = method
            .and_then(mirrored_name_field)
            .and_then(|field| params.and_then(|p| p.get(field)))
            .and_then(Value::as_str);
        Self {
            method,
            opens_session: request.is_some() && method == Some(INITIALIZE),
            request,
            cancels,
            name,
        }
    }
}

/// The `notifications/initialized` a transport sends after replaying `initialize` for a new
/// session.
pub fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": INITIALIZED})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_names_its_tool_and_a_task_request_its_task() {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "echo", "arguments": {}}});
        let s = Sending::of(&call);
        assert_eq!(s.method, Some("tools/call"));
        assert_eq!(s.request, Some(RequestId::Number(1.into())));
        assert_eq!(s.name, Some("echo"));
        assert!(!s.opens_session);
        let get = json!({"jsonrpc": "2.0", "id": "a", "method": "tasks/get",
            "params": {"taskId": "t1"}});
        assert_eq!(Sending::of(&get).name, Some("t1"));
        let subscribe = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
            "params": {"uri": "file:///x"}});
        assert_eq!(
            Sending::of(&subscribe).name,
            mirrored_name_field("resources/subscribe")
        );
    }

    #[test]
    fn initialize_opens_a_session_and_a_cancellation_names_its_request() {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}});
        assert!(Sending::of(&init).opens_session);
        let note = json!({"jsonrpc": "2.0", "method": "initialize"});
        assert!(
            !Sending::of(&note).opens_session,
            "a notification opens nothing"
        );
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 7}});
        let s = Sending::of(&cancel);
        assert_eq!(s.cancels, Some(RequestId::Number(7.into())));
        assert_eq!(s.request, None);
        let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {}});
        assert_eq!(Sending::of(&answer), Sending::default());
    }
}
