//! Server-to-client requests leave the engine as values (issue #27 item 1): a tool's
//! `input` queues its request in the request's queue, which the shipped driver drains in
//! order with what the tool emitted before it; the answer comes back through
//! `Engine::handle_response(now, ..)`; the queue's bound refuses a request cleanly; a call
//! cancelled while it waits cancels its request at the client; and a call waiting when its
//! session ends is told the client is gone. Run on the virtual clock with the shipped driver.

use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::McpErrorDetail;
use crate::config::McpServerConfig;
use crate::context::{ClientRequestError, InputRequest, MessageSink, ToolContext};
use crate::engine::{Engine, Session};
use crate::outbound::MAX_QUEUED;
use crate::registry::McpToolRegistry;
use crate::schema::JsonObject;
use crate::test_runtime::{idle, run, spawn};
use crate::wire::{LoggingLevel, OutgoingMessage, RequestId};

/// One stream, as a transport writes it.
#[derive(Default)]
struct Stream(Mutex<Vec<Value>>);

impl MessageSink for Stream {
    fn send(&self, message: OutgoingMessage) -> bool {
        let wire = serde_json::from_slice(&message.to_bytes()).unwrap_or(Value::Null);
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(wire);
        true
    }
}

impl Stream {
    fn taken(&self) -> Vec<Value> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// What the tool's `input` ended with, as text.
fn outcome(r: Result<Value, ClientRequestError>) -> String {
    match r {
        Ok(v) => format!("ok:{v}"),
        Err(ClientRequestError::Unavailable) => "unavailable".into(),
        Err(ClientRequestError::Cancelled) => "cancelled".into(),
        Err(e) => format!("error:{e}"),
    }
}

/// A 2025-11-25 engine whose tool `ask` logs `logs` messages, then asks for the client's
/// roots, and answers with how that ended.
fn engine(logs: usize) -> Engine {
    let registry = McpToolRegistry::new();
    registry
        .register(
            "ask",
            json!({"type": "object"}),
            move |_: JsonObject, cx: ToolContext| async move {
                for n in 0..logs {
                    cx.log(LoggingLevel::Info, n);
                }
                let r = cx.input("roots", InputRequest::ListRoots).await;
                Ok::<Value, McpErrorDetail>(json!({"outcome": outcome(r)}))
            },
        )
        .unwrap();
    Engine::new(McpServerConfig::default(), Arc::new(registry))
}

async fn send(
    engine: &Engine,
    session: &Arc<Session>,
    stream: &Arc<Stream>,
    msg: Value,
) -> Option<OutgoingMessage> {
    let sink: Arc<dyn MessageSink> = stream.clone();
    engine
        .handle_decoded(
            session,
            crate::wire::jsonrpc::decode(msg.to_string().as_bytes()),
            &sink,
        )
        .into_message()
        .await
}

/// An initialised session whose client declared `roots` and asked for log messages.
async fn initialised(engine: &Engine) -> (Arc<Session>, Arc<Stream>) {
    let session = engine.new_session();
    let stream = Arc::new(Stream::default());
    for msg in [
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{"roots":{}},
            "clientInfo":{"name":"t","version":"0"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}),
    ] {
        send(engine, &session, &stream, msg).await;
    }
    stream.taken();
    (session, stream)
}

/// Starts `tools/call` of `ask` with id 7 on the virtual runtime; its answer as wire JSON.
/// The engine handles the message here; what runs on holds no session.
fn call(
    engine: &Engine,
    session: &Arc<Session>,
    stream: &Arc<Stream>,
) -> crate::test_runtime::JoinHandle<Option<Value>> {
    let msg = json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
        "params":{"name":"ask","arguments":{}}});
    let sink: Arc<dyn MessageSink> = stream.clone();
    let handled = engine.handle_decoded(
        session,
        crate::wire::jsonrpc::decode(msg.to_string().as_bytes()),
        &sink,
    );
    spawn(async move {
        let answer = handled.into_message().await?;
        serde_json::from_slice(&answer.to_bytes()).ok()
    })
}

/// The tool's `outcome`, from the call's answer.
fn text(answer: &Value) -> String {
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    serde_json::from_str::<Value>(text).unwrap_or_default()["outcome"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The request leaves after what the tool emitted before asking (one queue, drained in
/// order), and the answer handed to `handle_response(now, ..)` reaches the tool.
#[test]
fn a_client_request_leaves_in_order_and_its_answer_comes_back_through_the_engine() {
    run(async {
        let engine = engine(2);
        let (session, stream) = initialised(&engine).await;
        let answer = call(&engine, &session, &stream);
        idle().await;
        let written = stream.taken();
        let methods: Vec<&str> = written
            .iter()
            .map(|m| m["method"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            methods,
            [
                "notifications/message",
                "notifications/message",
                "roots/list"
            ],
            "{written:?}"
        );
        let id: RequestId = serde_json::from_value(written[2]["id"].clone()).unwrap();
        assert!(session.awaits_client_response(&id));
        assert!(!answer.is_finished());
        let roots = json!({"roots": []});
        assert!(engine.handle_response(engine.now(), &session, &id, Ok(roots.clone())));
        let answer = answer.await.expect("an answer");
        assert_eq!(text(&answer), format!("ok:{roots}"));
        assert!(!session.awaits_client_response(&id));
        assert!(stream.taken().is_empty(), "nothing more was written");
    });
}

/// A request that finds the request's queue at its bound is refused: the tool's `input`
/// fails at once with `Unavailable`, nothing waits for an answer, and nothing is written
/// past the bound.
#[test]
fn a_client_request_over_the_queue_bound_fails_the_call_cleanly() {
    run(async {
        let engine = engine(MAX_QUEUED);
        let (session, stream) = initialised(&engine).await;
        let answer = call(&engine, &session, &stream);
        idle().await;
        assert!(answer.is_finished(), "the call did not wait for an answer");
        let answer = answer.await.expect("an answer");
        assert_eq!(text(&answer), "unavailable");
        let written = stream.taken();
        assert_eq!(written.len(), MAX_QUEUED, "the log messages only");
        assert!(
            written
                .iter()
                .all(|m| m["method"] == "notifications/message")
        );
    });
}

/// A call cancelled while it waits for its client cancels the request at the client on the
/// same stream (queued as the work is dropped, drained by the driver after the drop), and
/// the late answer matches nothing.
#[test]
fn a_call_cancelled_while_it_waits_cancels_its_request_at_the_client() {
    run(async {
        let engine = engine(0);
        let (session, stream) = initialised(&engine).await;
        let answer = call(&engine, &session, &stream);
        idle().await;
        let written = stream.taken();
        assert_eq!(written.len(), 1, "{written:?}");
        let id: RequestId = serde_json::from_value(written[0]["id"].clone()).unwrap();
        send(
            &engine,
            &session,
            &stream,
            json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}),
        )
        .await;
        idle().await;
        assert!(answer.is_finished());
        let written = stream.taken();
        assert_eq!(written.len(), 1, "{written:?}");
        assert_eq!(written[0]["method"], "notifications/cancelled");
        assert_eq!(written[0]["params"]["requestId"], json!(id));
        assert!(!session.awaits_client_response(&id));
        assert!(!engine.handle_response(engine.now(), &session, &id, Ok(json!({"roots": []}))));
    });
}

/// The call holds no session: when the session ends while the tool waits for its client,
/// the tool's `input` ends with `Unavailable` rather than waiting for ever.
#[test]
fn a_call_waiting_when_its_session_ends_is_told_the_client_is_gone() {
    run(async {
        let engine = engine(0);
        let (session, stream) = initialised(&engine).await;
        let answer = call(&engine, &session, &stream);
        idle().await;
        assert_eq!(stream.taken().len(), 1, "the request is out");
        let weak = Arc::downgrade(&session);
        drop(session);
        idle().await;
        assert!(weak.upgrade().is_none(), "nothing else holds the session");
        assert!(answer.is_finished());
        assert_eq!(text(&answer.await.expect("an answer")), "unavailable");
    });
}
