//! What a running handler emits (progress, log messages) leaves the engine as values in its
//! request's queue, drained by the shipped driver (`driver.rs`) on the virtual clock: before
//! the answer, when the work emits from elsewhere, and within the queue's bound (issue #27,
//! item 1).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

use crate::config::McpServerConfig;
use crate::context::{MessageSink, ToolContext};
use crate::engine::{Engine, Session};
use crate::outbound::MAX_QUEUED;
use crate::registry::McpToolRegistry;
use crate::schema::{JsonObject, McpToolResult};
use crate::test_runtime::{advance, idle, run, sleep, spawn};
use crate::wire::{LoggingLevel, OutgoingMessage};

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

/// An initialised 2025-11-25 session on `registry`, its stream, and a way to send it a
/// message whose `Handled` the shipped driver resolves.
fn serve(registry: McpToolRegistry) -> (Engine, Arc<Session>, Arc<Stream>) {
    let engine = Engine::new(McpServerConfig::default(), Arc::new(registry));
    let session = engine.new_session();
    (engine, session, Arc::new(Stream::default()))
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

async fn initialise(engine: &Engine, session: &Arc<Session>, stream: &Arc<Stream>) {
    send(
        engine,
        session,
        stream,
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"t","version":"0"}}}),
    )
    .await;
    send(
        engine,
        session,
        stream,
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    )
    .await;
    send(
        engine,
        session,
        stream,
        json!({"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}),
    )
    .await;
    stream.taken();
}

fn call(id: u64, name: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
        "params":{"name":name,"arguments":{},"_meta":{"progressToken":"p"}}})
}

/// A tool that emits far more than the queue holds in one poll: the stream gets at most the
/// queue's bound of notifications (progress coalesced to its latest, log messages past the
/// bound dropped), and the answer still comes.
#[test]
fn what_one_poll_emits_is_bounded_and_the_answer_still_comes() {
    run(async {
        let registry = McpToolRegistry::new();
        registry
            .register(
                "chatty",
                json!({"type": "object"}),
                |_: JsonObject, cx: ToolContext| async move {
                    for n in 0..10_000u32 {
                        cx.log(LoggingLevel::Info, n);
                        cx.progress(f64::from(n), Some(10_000.0), None);
                    }
                    McpToolResult::success(None)
                },
            )
            .unwrap();
        let (engine, session, stream) = serve(registry);
        initialise(&engine, &session, &stream).await;
        let answer = send(&engine, &session, &stream, call(7, "chatty")).await;
        assert!(answer.is_some(), "the answer is returned");
        let written = stream.taken();
        assert!(
            written.len() <= MAX_QUEUED,
            "{} notifications for one poll, past the queue's bound of {MAX_QUEUED}",
            written.len()
        );
        let last_progress = written
            .iter()
            .rev()
            .find(|m| m["method"] == "notifications/progress")
            .expect("progress is coalesced, not dropped");
        assert_eq!(last_progress["params"]["progress"], 9_999.0);
    });
}

/// Work that emits from elsewhere (here a task the tool started) while the tool itself waits:
/// the queue wakes the driver, which drains it at once, not when the tool next wakes.
#[test]
fn what_work_emits_from_elsewhere_wakes_the_driver() {
    run(async {
        let registry = McpToolRegistry::new();
        registry
            .register(
                "helper",
                json!({"type": "object"}),
                |_: JsonObject, cx: ToolContext| async move {
                    let helper = cx.clone();
                    drop(spawn(async move {
                        sleep(Duration::from_secs(1)).await;
                        helper.progress(1.0, None, Some("from a helper"));
                    }));
                    sleep(Duration::from_secs(10)).await;
                    McpToolResult::success(None)
                },
            )
            .unwrap();
        let (engine, session, stream) = serve(registry);
        initialise(&engine, &session, &stream).await;
        let running = {
            let (engine, session, stream) = (engine.clone(), session.clone(), stream.clone());
            spawn(async move { send(&engine, &session, &stream, call(8, "helper")).await })
        };
        idle().await;
        advance(Duration::from_secs(2)).await;
        let written = stream.taken();
        assert_eq!(
            written.len(),
            1,
            "the helper's progress, 8 s before the tool wakes: {written:?}"
        );
        assert_eq!(written[0]["params"]["message"], "from a helper");
        advance(Duration::from_secs(10)).await;
        assert!(running.is_finished());
    });
}
