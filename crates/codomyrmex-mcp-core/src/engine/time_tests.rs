//! Time as an input: `Engine::handle_at(now, ..)` decides by the `now` it is given, never by
//! a clock. The engine's injected clock stands still here, so only `now` can move anything.
//! Synchronous: admission and `requestState` checks happen inside `handle`, with no driver.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::config::{McpServerConfig, RateLimit};
use crate::context::{MessageSink, NullSink};
use crate::engine::{Engine, Handled, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
use crate::platform::{FrozenTime, Timestamp};
use crate::registry::McpToolRegistry;
use crate::wire::{IncomingMessage, OutgoingMessage, RequestId};

fn engine(config: McpServerConfig) -> (Engine, Timestamp) {
    let tools = McpToolRegistry::new();
    tools
        .register(
            "echo",
            json!({"type": "object"}),
            |_: crate::schema::JsonObject| {
                crate::registry::ToolOutput::content(vec![crate::wire::ContentBlock::text("hi")])
            },
        )
        .unwrap();
    let origin = Timestamp {
        mono: crate::platform::test_origin(),
        wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
    };
    let engine = Engine::builder(config, Arc::new(tools))
        .time_source(Arc::new(FrozenTime::starting_at(origin.mono, origin.wall)))
        .build();
    (engine, origin)
}

fn request(method: &str, mut params: Value) -> IncomingMessage {
    params["_meta"] = json!({
        META_PROTOCOL_VERSION: "2026-07-28",
        META_CLIENT_CAPABILITIES: {},
    });
    IncomingMessage::Request {
        id: RequestId::from(1),
        method: method.into(),
        params: params.as_object().cloned(),
    }
}

fn call() -> IncomingMessage {
    request("tools/call", json!({"name": "echo", "arguments": {}}))
}

/// Whether the call was refused by the rate limit (answered at once) rather than admitted
/// (handed out as an invocation).
fn rate_limited(handled: &Handled) -> bool {
    match handled {
        Handled::Invoke(_) => false,
        Handled::Reply(m) if m.result_value().is_some() => {
            m.result_value().unwrap()["structuredContent"]["error_type"] == "RATE_LIMITED"
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn the_rate_limit_refills_by_the_now_a_request_is_handled_at() {
    let (e, t0) = engine(McpServerConfig::default().with_rate_limit(Some(RateLimit {
        per_second: 1.0,
        burst: 1,
    })));
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    let at = |d: Duration| Timestamp {
        mono: t0.mono + d,
        wall: t0.wall + d,
    };
    let s = e.new_stateless_session();
    assert!(!rate_limited(&e.handle_at(t0, &s, call(), &sink)));
    assert!(rate_limited(&e.handle_at(t0, &s, call(), &sink)));
    // Two seconds later by the caller's `now`: a token again, though no clock moved.
    assert!(!rate_limited(&e.handle_at(
        at(Duration::from_secs(2)),
        &s,
        call(),
        &sink
    )));
    assert!(rate_limited(&e.handle_at(
        at(Duration::from_secs(2)),
        &s,
        call(),
        &sink
    )));
    // `handle` is `handle_at` with the engine's own clock, which still stands at `t0`.
    assert!(rate_limited(&e.handle(&s, call(), &sink)));
}

#[test]
fn a_request_state_expires_by_the_now_it_is_opened_at() {
    let (e, t0) = engine(McpServerConfig::default().with_rate_limit(None));
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    let ttl = e.shared.config.request_state_ttl;
    let binding = crate::engine::mrtr::Binding {
        method: "tools/call",
        target: "echo",
        principal: None,
    };
    let sealed = e
        .shared
        .sealer
        .seal(&binding, &serde_json::Map::new(), None)
        .unwrap();
    let with_state = || {
        request(
            "tools/call",
            json!({"name": "echo", "arguments": {}, "requestState": sealed}),
        )
    };
    let s = e.new_stateless_session();
    assert!(matches!(
        e.handle_at(t0, &s, with_state(), &sink),
        Handled::Invoke(_)
    ));
    let later = Timestamp {
        mono: t0.mono + ttl + Duration::from_secs(2),
        wall: t0.wall + ttl + Duration::from_secs(2),
    };
    let Handled::Reply(OutgoingMessage::Error { error, .. }) =
        e.handle_at(later, &s, with_state(), &sink)
    else {
        panic!("an expired requestState is refused");
    };
    assert!(error.message.contains("expired"), "{error:?}");
}

/// Issue #27, item 1: an outcome comes back with the `now` it is handled at
/// (`Engine::complete(now, job, outcome)`), and what it decides about time uses that `now`:
/// the `requestState` of a round that ends is sealed to expire `request_state_ttl` after it,
/// though the engine's own clock never moved from `t0`.
#[test]
fn a_round_is_sealed_at_the_now_its_outcome_comes_back_at() {
    let tools = McpToolRegistry::new();
    tools
        .register(
            "ask",
            json!({"type": "object"}),
            |_: crate::schema::JsonObject, cx: crate::ToolContext| async move {
                let schema = json!({"type": "object"});
                match cx.elicit("Name?", schema).await {
                    Ok(answer) => Ok(json!({"answer": answer})),
                    Err(e) => Err(crate::McpErrorDetail::new("Asked", e.to_string())),
                }
            },
        )
        .unwrap();
    let t0 = Timestamp {
        mono: crate::platform::test_origin(),
        wall: SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000),
    };
    let e = Engine::builder(
        McpServerConfig::default().with_rate_limit(None),
        Arc::new(tools),
    )
    .time_source(Arc::new(FrozenTime::starting_at(t0.mono, t0.wall)))
    .build();
    let ttl = e.shared.config.request_state_ttl;
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    let ask = |extra: Value| {
        let mut params = json!({"name": "ask", "arguments": {}, "_meta": {
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {"elicitation": {}},
        }});
        for (k, v) in extra.as_object().unwrap() {
            params[k] = v.clone();
        }
        IncomingMessage::Request {
            id: RequestId::from(1),
            method: "tools/call".into(),
            params: params.as_object().cloned(),
        }
    };
    let s = e.new_stateless_session();
    let Handled::Invoke(invocation) = e.handle_at(t0, &s, ask(json!({})), &sink) else {
        panic!("an invocation");
    };
    let parts = invocation.into_parts();
    let output = futures_executor::block_on(parts.work);
    let later = |d: Duration| Timestamp {
        mono: t0.mono + d,
        wall: t0.wall + d,
    };
    let done = later(ttl + Duration::from_secs(60));
    let reply = e
        .complete(done, parts.job, crate::invocation::Outcome::Done(output))
        .expect("an answer");
    let result = reply.result_value().expect("a result");
    assert_eq!(result["resultType"], "input_required", "{result}");
    let state = result["requestState"].as_str().unwrap().to_owned();
    // Opened after `t0 + ttl` but before `done + ttl`: valid, as it was sealed at `done`.
    let open = later(ttl + Duration::from_secs(120));
    let retry = ask(json!({"requestState": state, "inputResponses": {}}));
    match e.handle_at(open, &s, retry, &sink) {
        Handled::Invoke(_) => {}
        other => panic!("sealed at the completion's now, still valid: {other:?}"),
    }
}
