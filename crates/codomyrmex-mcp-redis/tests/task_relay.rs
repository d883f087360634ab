//! A 2025-11-25 `tasks/result` served by another instance than the task's: the task's own
//! server-to-client request (an elicitation) reaches the client on that instance's
//! `tasks/result` stream, and the client's answer, posted there, gets back to the task.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../codomyrmex-mcp/tests/http_support/mod.rs"]
mod http_support;
mod redis_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::McpServerConfig;
use codomyrmex_mcp::engine::Engine;
use codomyrmex_mcp::runtime::{TaskSyncHandle, spawn_task_sync};
use codomyrmex_mcp::transport::http::HttpServer;
use codomyrmex_mcp::{ContentBlock, ToolContext};
use codomyrmex_mcp::{
    McpToolRegistry, TaskSupport, ToolDefinition, ToolOutput, ToolRegistration, ToolSettings,
};
use codomyrmex_mcp_redis::{
    EventBounds, RedisBus, RedisEventStore, RedisSessionStore, RedisTaskStore,
};
use http_support::{
    HANG, LEGACY, Open, Req, SseEvent, config, initialize_body, legacy, legacy_session_at, open,
    send,
};
use redis_support::*;
use serde_json::{Map, Value, json};

struct Instance {
    addr: SocketAddr,
    _sync: TaskSyncHandle,
    _serving: tokio::task::JoinHandle<()>,
}

impl Instance {
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }
}

/// `ask`: a task that asks the client's user for a name (elicitation) and returns it.
fn registry() -> Arc<McpToolRegistry> {
    let r = McpToolRegistry::new();
    let ask = |_: Map<String, Value>, cx: ToolContext| async move {
        let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
        match cx.elicit("Your name?", schema).await {
            Ok(answer) => ToolOutput::content(vec![ContentBlock::text(answer.to_string())]),
            Err(e) => ToolOutput::content(vec![ContentBlock::text(format!("failed: {e}"))]),
        }
    };
    r.register_tool(
        ToolRegistration::new(ToolDefinition::new("ask", json!({"type": "object"})), ask)
            .with_settings(ToolSettings {
                task_support: TaskSupport::Optional,
                ..ToolSettings::default()
            }),
    )
    .unwrap();
    Arc::new(r)
}

/// An instance on its own connection to `redis`: every store, the bus and task records;
/// with `always_sse`, every answer is an SSE stream.
async fn instance(redis: &Redis, always_sse: bool) -> Instance {
    let conn = connect(redis, "relay").await;
    let bus = RedisBus::join(conn.clone()).await.unwrap();
    let name = codomyrmex_mcp::store::MessageBus::instance(&bus).to_owned();
    let engine = Engine::builder(
        McpServerConfig::new("task-relay", "0.0.0").with_rate_limit(None),
        registry(),
    )
    .task_store(
        Arc::new(RedisTaskStore::new(conn.clone())),
        name,
        Duration::from_secs(10),
    )
    .build();
    let sync = spawn_task_sync(&engine).expect("a shared task store");
    let mut http = config()
        .with_session_store(Arc::new(RedisSessionStore::new(conn.clone())))
        .with_event_store(Arc::new(RedisEventStore::new(conn, EventBounds::default())))
        .with_message_bus(Arc::new(bus));
    http.bind = SocketAddr::from(([127, 0, 0, 1], 0));
    http.always_sse = always_sse;
    let server = HttpServer::new(engine, http);
    let listener = server.bind().await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        let _ = server.serve(listener, std::future::pending()).await;
    });
    Instance {
        addr,
        _sync: sync,
        _serving: serving,
    }
}

/// The JSON-RPC message of a response body: JSON, or the last event of an SSE body.
fn message_of(body: &[u8]) -> Value {
    let text = String::from_utf8_lossy(body);
    serde_json::from_str(&text).unwrap_or_else(|_| {
        let data = text
            .lines()
            .rev()
            .filter_map(|l| l.strip_prefix("data: "))
            .find(|d| !d.is_empty())
            .unwrap_or_else(|| panic!("no message in {text}"));
        serde_json::from_str(data).unwrap()
    })
}

async fn next(stream: &mut Open) -> SseEvent {
    tokio::time::timeout(HANG, stream.next_event())
        .await
        .expect("an event in time")
        .expect("the stream goes on")
}

/// A session on `a` that declares elicitation, and the id of an `ask` task it started there.
async fn session_and_task(a: &Instance) -> (String, Value) {
    let mut init = initialize_body();
    init["capabilities"] = json!({"elicitation": {}});
    let sid = legacy_session_at(a.addr, init).await;
    let created = send(
        a.addr,
        &a.host(),
        &legacy(
            "tools/call",
            Some(2),
            json!({"name": "ask", "arguments": {}, "task": {}}),
            Some(&sid),
        )
        .header("accept", "application/json"),
    )
    .await;
    let created = message_of(&created.body);
    let task_id = created["result"]["task"]["taskId"].clone();
    assert!(task_id.is_string(), "{created}");
    (sid, task_id)
}

fn answer(sid: &str, request: &Value) -> Req {
    Req::new("POST", "/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", LEGACY)
        .json(&json!({
            "jsonrpc": "2.0",
            "id": request["id"],
            "result": {"action": "accept", "content": {"name": "Ada"}},
        }))
}

/// Answered as an SSE stream on B, `tasks/result` carries the task's elicitation itself.
#[tokio::test]
async fn a_streamed_tasks_result_on_another_instance_carries_the_tasks_elicitation() {
    let redis = start_redis();
    let a = instance(&redis, false).await;
    let b = instance(&redis, true).await;
    let (sid, task_id) = session_and_task(&a).await;
    let wait = legacy(
        "tasks/result",
        Some(3),
        json!({"taskId": task_id}),
        Some(&sid),
    );
    let mut stream = open(b.addr, &b.host(), &wait).await.expect("B's stream");
    assert_eq!(stream.status, 200);
    let request = loop {
        let e = next(&mut stream).await;
        if e.data["method"] == "elicitation/create" {
            break e.data;
        }
        assert_ne!(
            e.data.get("id"),
            Some(&json!(3)),
            "a result first: {:?}",
            e.data
        );
    };
    assert_eq!(
        send(b.addr, &b.host(), &answer(&sid, &request))
            .await
            .status,
        202
    );
    let result = loop {
        let e = next(&mut stream).await;
        if e.data.get("id") == Some(&json!(3)) {
            break e.data;
        }
    };
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("Ada"), "{result}");
}

/// Answered as JSON on B, `tasks/result` has the task's elicitation go out on the
/// session's GET stream, as on one instance.
#[tokio::test]
async fn a_tasks_result_on_another_instance_relays_the_tasks_elicitation() {
    let redis = start_redis();
    let a = instance(&redis, false).await;
    let b = instance(&redis, false).await;
    let (sid, task_id) = session_and_task(&a).await;
    // The client listens on its GET stream (on A), and waits for the result on B, as JSON.
    let get = Req::new("GET", "/mcp")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", LEGACY);
    let mut listening = open(a.addr, &a.host(), &get).await.expect("A's GET stream");
    assert_eq!(listening.status, 200);
    let wait = legacy(
        "tasks/result",
        Some(3),
        json!({"taskId": task_id}),
        Some(&sid),
    )
    .header("accept", "application/json");
    let (b_addr, b_host) = (b.addr, b.host());
    let waiting = tokio::spawn(async move { send(b_addr, &b_host, &wait).await });
    let request = loop {
        let e = next(&mut listening).await;
        if e.data["method"] == "elicitation/create" {
            break e.data;
        }
    };
    assert_eq!(
        send(b.addr, &b.host(), &answer(&sid, &request))
            .await
            .status,
        202
    );
    let result = tokio::time::timeout(HANG, waiting)
        .await
        .expect("tasks/result answers in time")
        .unwrap();
    assert_eq!(result.status, 200);
    let result = message_of(&result.body);
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("Ada"), "{result}");
}
