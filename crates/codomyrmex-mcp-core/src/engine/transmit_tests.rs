//! A session's own queue (issue #27 items 1 and 2): what a session hears that belongs to no
//! request (list changes, subscribed resource updates, log messages of no request) is
//! queued as values by `Listeners::handle_event(now, session, event)` and taken by the
//! transport with `Session::poll_transmit`: in order, list changes and repeated resource
//! updates coalesced, bounded, a list change never lost at the bound.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::config::McpServerConfig;
use crate::context::{MessageSink, NullSink};
use crate::engine::{Engine, ServerEvent, Session};
use crate::outbound::MAX_QUEUED;
use crate::registry::McpToolRegistry;
use crate::test_runtime::run;
use crate::wire::LoggingLevel;

fn engine() -> Engine {
    Engine::new(McpServerConfig::default(), Arc::new(McpToolRegistry::new()))
}

/// A 2025-11-25 session that asked for log messages at `info` and above.
async fn initialised(engine: &Engine) -> Arc<Session> {
    let session = engine.new_session();
    let sink: Arc<dyn MessageSink> = NullSink::shared();
    for msg in [
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"t","version":"0"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}),
    ] {
        let decoded = crate::wire::jsonrpc::decode(msg.to_string().as_bytes());
        engine
            .handle_decoded(&session, decoded, &sink)
            .into_message()
            .await;
    }
    session
}

fn log(n: usize) -> ServerEvent {
    ServerEvent::Log {
        level: LoggingLevel::Warning,
        params: json!({"level": "warning", "data": n}),
    }
}

/// Everything the session's queue holds, as wire JSON: `method` and the log's `data`.
fn taken(session: &Session) -> Vec<(String, Value)> {
    std::iter::from_fn(|| session.poll_transmit())
        .map(|m| {
            let wire: Value = serde_json::from_slice(&m.to_bytes()).unwrap_or_default();
            let method = wire["method"].as_str().unwrap_or_default().to_owned();
            (method, wire["params"]["data"].clone())
        })
        .collect()
}

/// Events queue in order; a list change already queued is not queued again; a session that
/// has not initialised hears nothing.
#[test]
fn events_queue_in_the_sessions_own_queue_and_list_changes_coalesce() {
    run(async {
        let engine = engine();
        let fresh = engine.new_session();
        assert!(!engine.listeners().handle_event(
            engine.now(),
            &fresh,
            &ServerEvent::ToolsListChanged
        ));
        assert!(fresh.poll_transmit().is_none());

        let session = initialised(&engine).await;
        let now = engine.now();
        assert!(
            engine
                .listeners()
                .handle_event(now, &session, &ServerEvent::ToolsListChanged)
        );
        assert!(engine.listeners().handle_event(now, &session, &log(1)));
        assert!(
            engine
                .listeners()
                .handle_event(now, &session, &ServerEvent::ToolsListChanged),
            "coalesced into the queued one"
        );
        let below = ServerEvent::Log {
            level: LoggingLevel::Debug,
            params: json!({"level": "debug", "data": 0}),
        };
        assert!(
            !engine.listeners().handle_event(now, &session, &below),
            "below the level"
        );
        assert_eq!(
            taken(&session),
            vec![
                ("notifications/tools/list_changed".to_owned(), Value::Null),
                ("notifications/message".to_owned(), json!(1)),
            ]
        );
        assert!(
            engine
                .listeners()
                .handle_event(now, &session, &ServerEvent::ToolsListChanged)
        );
        assert_eq!(taken(&session).len(), 1, "taken, then queued again");
    });
}

/// The queue is bounded: past `MAX_QUEUED`, log messages are dropped; a list change is
/// still queued (once per list), so the client never keeps a stale list.
#[test]
fn the_sessions_queue_is_bounded_and_keeps_list_changes() {
    run(async {
        let engine = engine();
        let session = initialised(&engine).await;
        let now = engine.now();
        for n in 0..MAX_QUEUED {
            assert!(engine.listeners().handle_event(now, &session, &log(n)));
        }
        assert!(
            !engine
                .listeners()
                .handle_event(now, &session, &log(MAX_QUEUED)),
            "dropped"
        );
        assert!(
            engine
                .listeners()
                .handle_event(now, &session, &ServerEvent::ToolsListChanged)
        );
        assert!(
            engine
                .listeners()
                .handle_event(now, &session, &ServerEvent::ToolsListChanged)
        );
        let all = taken(&session);
        assert_eq!(all.len(), MAX_QUEUED + 1);
        assert_eq!(all[MAX_QUEUED].0, "notifications/tools/list_changed");
        assert_eq!(all[MAX_QUEUED - 1].1, json!(MAX_QUEUED - 1));
    });
}

/// A `subscriptions/listen` stream queues its notifications as values too: the events ready
/// at one wake-up are queued before the stream is written, so three updates of one resource
/// in a burst reach the client as one.
#[test]
fn a_listen_stream_coalesces_a_burst_of_updates() {
    use crate::engine::{META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
    use crate::test_runtime::{idle, spawn};
    use crate::wire::OutgoingMessage;
    use std::sync::{Mutex, PoisonError};

    #[derive(Default)]
    struct Stream(Mutex<Vec<Value>>);
    impl MessageSink for Stream {
        fn send(&self, message: OutgoingMessage) -> bool {
            let wire = serde_json::from_slice(&message.to_bytes()).unwrap_or_default();
            self.0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(wire);
            true
        }
    }

    run(async {
        let resources = Arc::new(crate::McpResourceRegistry::new());
        let engine = engine().with_resources(resources.clone());
        let session = engine.new_stateless_session();
        let stream = Arc::new(Stream::default());
        let sink: Arc<dyn MessageSink> = stream.clone();
        let msg = json!({"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{
            "notifications": {"resourceSubscriptions": ["x://1"]},
            "_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}}});
        let decoded = crate::wire::jsonrpc::decode(msg.to_string().as_bytes());
        let listening = spawn(
            engine
                .handle_decoded(&session, decoded, &sink)
                .into_message(),
        );
        idle().await;
        let methods = |stream: &Stream| -> Vec<String> {
            std::mem::take(&mut *stream.0.lock().unwrap_or_else(PoisonError::into_inner))
                .iter()
                .map(|m| m["method"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        assert_eq!(
            methods(&stream),
            ["notifications/subscriptions/acknowledged"]
        );
        for _ in 0..3 {
            resources.notify_updated("x://1");
        }
        idle().await;
        assert_eq!(methods(&stream), ["notifications/resources/updated"]);
        assert!(!listening.is_finished());
        listening.abort();
    });
}

/// A resource update is queued only while the session subscribes to its resource: the check
/// and the queueing are one call on the session's state (`resources/subscribe` and
/// `resources/unsubscribe` change what it holds), and an update of another resource, or
/// after the unsubscribe, is not queued.
#[test]
fn a_resource_update_is_queued_only_while_its_resource_is_subscribed() {
    run(async {
        let resources = Arc::new(crate::McpResourceRegistry::new());
        let engine = engine().with_resources(resources);
        let session = initialised(&engine).await;
        let sink: Arc<dyn MessageSink> = NullSink::shared();
        let send = |msg: Value| {
            let decoded = crate::wire::jsonrpc::decode(msg.to_string().as_bytes());
            engine
                .handle_decoded(&session, decoded, &sink)
                .into_message()
        };
        let updated = |uri: &str| ServerEvent::ResourceUpdated(uri.to_owned());
        let now = engine.now();
        assert!(
            !engine
                .listeners()
                .handle_event(now, &session, &updated("x://1"))
        );
        let answer = send(
            json!({"jsonrpc":"2.0","id":2,"method":"resources/subscribe",
            "params":{"uri":"x://1"}}),
        )
        .await;
        assert!(
            matches!(answer, Some(crate::wire::OutgoingMessage::Response { .. })),
            "{answer:?}"
        );
        assert!(
            engine
                .listeners()
                .handle_event(now, &session, &updated("x://1"))
        );
        assert!(
            !engine
                .listeners()
                .handle_event(now, &session, &updated("x://2"))
        );
        assert_eq!(
            taken(&session),
            vec![("notifications/resources/updated".to_owned(), Value::Null)]
        );
        send(
            json!({"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe",
            "params":{"uri":"x://1"}}),
        )
        .await;
        assert!(
            !engine
                .listeners()
                .handle_event(now, &session, &updated("x://1"))
        );
        assert!(taken(&session).is_empty());
    });
}
