//! The classification rules, in memory: routes, JSON or stream, statuses.

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::config::McpServerConfig;
use crate::engine::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
use crate::registry::McpToolRegistry;
use crate::wire::RequestId;
use crate::wire::jsonrpc::decode;

fn engine() -> Engine {
    Engine::new(McpServerConfig::default(), Arc::new(McpToolRegistry::new()))
}

fn modern_meta() -> Value {
    json!({META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}})
}

fn request(method: &str, params: Value) -> IncomingMessage {
    IncomingMessage::Request {
        id: RequestId::from(1),
        method: method.into(),
        params: params.as_object().cloned(),
    }
}

const JSON_ONLY: Delivery = Delivery {
    accepts_json: true,
    accepts_stream: false,
    always_stream: false,
    has_session: false,
};
const BOTH: Delivery = Delivery {
    accepts_json: true,
    accepts_stream: true,
    always_stream: false,
    has_session: false,
};
const IN_SESSION: Delivery = Delivery {
    accepts_json: true,
    accepts_stream: true,
    always_stream: false,
    has_session: true,
};

fn route(body: &str, delivery: Delivery) -> Route {
    engine().classify(&decode(body.as_bytes()), delivery).route
}

#[test]
fn modern_meta_selects_the_stateless_path_even_with_a_session() {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list",
        "params": {"_meta": modern_meta()}})
    .to_string();
    assert_eq!(route(&body, JSON_ONLY), Route::Modern);
    assert_eq!(route(&body, IN_SESSION), Route::Modern);
    let c = engine().classify(&decode(body.as_bytes()), JSON_ONLY);
    assert_eq!(
        c.meta.protocol_version.get().map(String::as_str),
        Some("2026-07-28")
    );
}

#[test]
fn initialize_without_a_session_opens_one_and_with_one_is_the_sessions() {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;
    assert_eq!(route(body, JSON_ONLY), Route::Initialize);
    assert_eq!(route(body, IN_SESSION), Route::Legacy);
}

#[test]
fn a_request_with_neither_session_nor_meta_goes_to_the_engine_for_its_error() {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
    assert_eq!(route(body, JSON_ONLY), Route::Modern);
    assert_eq!(route(body, IN_SESSION), Route::Legacy);
}

#[test]
fn notifications_without_a_session_are_acknowledged() {
    let body = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(route(body, JSON_ONLY), Route::Accept);
    assert_eq!(route(body, IN_SESSION), Route::Legacy);
}

#[test]
fn invalid_messages_and_sessionless_batches_are_refused_400() {
    let Route::Refuse { status, message } = route("{nope", JSON_ONLY) else {
        panic!("a refusal expected")
    };
    assert_eq!(status, Status::BadRequest);
    assert!(matches!(message, OutgoingMessage::Error { id: None, .. }));
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#;
    let Route::Refuse { status, message } = route(batch, JSON_ONLY) else {
        panic!("a refusal expected")
    };
    assert_eq!(status, Status::BadRequest);
    let OutgoingMessage::Error { error, .. } = message else {
        panic!("an error expected")
    };
    assert!(
        error.message.contains("Mcp-Session-Id"),
        "{}",
        error.message
    );
    // In a session, batches and invalid messages are the session's to answer.
    assert_eq!(route(batch, IN_SESSION), Route::Legacy);
    assert_eq!(route("{nope", IN_SESSION), Route::Legacy);
}

fn respond(message: &IncomingMessage, delivery: Delivery) -> Result<Respond, Route> {
    let meta = match message {
        IncomingMessage::Request { params, .. } => RequestMeta::of(params.as_ref()),
        _ => RequestMeta::default(),
    };
    engine().respond_as(message, &meta, delivery, None)
}

#[test]
fn a_call_streams_only_when_it_may_send_messages_first_and_the_client_accepts_a_stream() {
    let plain = request("tools/call", json!({"name": "t", "_meta": modern_meta()}));
    let mut meta = modern_meta();
    meta["progressToken"] = json!("p");
    let progress = request("tools/call", json!({"name": "t", "_meta": meta}));
    let mut meta = modern_meta();
    meta[crate::engine::META_LOG_LEVEL] = json!("info");
    let logging = request("tools/call", json!({"name": "t", "_meta": meta}));
    assert_eq!(respond(&plain, BOTH), Ok(Respond::Json));
    assert_eq!(respond(&progress, BOTH), Ok(Respond::Stream));
    assert_eq!(respond(&logging, BOTH), Ok(Respond::Stream));
    assert_eq!(respond(&progress, JSON_ONLY), Ok(Respond::Json));
    let always = Delivery {
        always_stream: true,
        ..BOTH
    };
    assert_eq!(respond(&plain, always), Ok(Respond::Stream));
    let list = request("tools/list", json!({"_meta": modern_meta()}));
    assert_eq!(respond(&list, BOTH), Ok(Respond::Json));
}

#[test]
fn listen_is_a_stream_and_refused_406_without_one() {
    let listen = request("subscriptions/listen", json!({"_meta": modern_meta()}));
    assert_eq!(respond(&listen, BOTH), Ok(Respond::Listen));
    let Err(Route::Refuse { status, message }) = respond(&listen, JSON_ONLY) else {
        panic!("a refusal expected")
    };
    assert_eq!(status, Status::NotAcceptable);
    let OutgoingMessage::Error { error, .. } = message else {
        panic!("an error expected")
    };
    assert_eq!(error.code, ErrorCode::INVALID_REQUEST.0);
}

#[test]
fn a_legacy_session_that_may_be_asked_for_input_streams_its_calls() {
    let engine = engine();
    let session = engine.new_session();
    let init = request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"sampling": {}},
            "clientInfo": {"name": "c", "version": "1"}}),
    );
    let sink: Arc<dyn crate::context::MessageSink> = Arc::new(crate::context::NullSink);
    let _ = engine.handle(&session, init, &sink);
    let call = request("tools/call", json!({"name": "t"}));
    let meta = RequestMeta::default();
    assert_eq!(
        engine.respond_as(&call, &meta, IN_SESSION, Some(&session)),
        Ok(Respond::Stream)
    );
    let fresh = engine.new_session();
    assert_eq!(
        engine.respond_as(&call, &meta, IN_SESSION, Some(&fresh)),
        Ok(Respond::Json)
    );
}

#[test]
fn statuses_follow_the_era() {
    let error = |code: i64| OutgoingMessage::Error {
        id: Some(RequestId::from(1)),
        error: ErrorObject::new(ErrorCode(code), "x"),
    };
    let ok = OutgoingMessage::Response {
        id: RequestId::from(1),
        result: json!({}),
    };
    assert_eq!(status_for(&error(-32601), &Route::Modern), Status::NotFound);
    for code in [-32700, -32600, -32602, -32020, -32021, -32022] {
        assert_eq!(
            status_for(&error(code), &Route::Modern),
            Status::BadRequest,
            "{code}"
        );
    }
    assert_eq!(status_for(&error(-32603), &Route::Modern), Status::Ok);
    assert_eq!(status_for(&ok, &Route::Modern), Status::Ok);
    for code in [-32601, -32602, -32603] {
        assert_eq!(
            status_for(&error(code), &Route::Legacy),
            Status::Ok,
            "{code}"
        );
    }
    assert_eq!(status_for(&ok, &Route::Initialize), Status::Ok);
    assert_eq!(
        status_for(&error(-32602), &Route::Initialize),
        Status::BadRequest
    );
    // Retry later, in every era: busy, shutting down, a shared store away.
    for route in [Route::Modern, Route::Legacy, Route::Initialize] {
        assert_eq!(status_for(&error(-32000), &route), Status::Unavailable);
    }
}
