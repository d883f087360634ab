//! Task cancels pushed across instances: a `tasks/cancel` that lands on another instance than
//! the task's owner reaches the owner's work over Redis pub/sub (the owner's wakeups), not at
//! its next lease renewal. The lease here is an hour, so the owner polls every 15 minutes:
//! only the push can bring the cancel within the test's deadline.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../codomyrmex-mcp/tests/http_support/mod.rs"]
mod http_support;
mod redis_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use codomyrmex_mcp::McpServerConfig;
use codomyrmex_mcp::engine::Engine;
use codomyrmex_mcp::runtime::{TaskSyncHandle, spawn_task_sync_woken};
use codomyrmex_mcp::store::MemorySessionStore;
use codomyrmex_mcp::task_store::{TaskEra, TaskRecord, TaskStore as _};
use codomyrmex_mcp::transport::http::HttpServer;
use codomyrmex_mcp::{ContentBlock, ToolContext};
use codomyrmex_mcp::{
    McpToolRegistry, TaskSupport, ToolDefinition, ToolOutput, ToolRegistration, ToolSettings,
};
use codomyrmex_mcp_redis::RedisTaskStore;
use futures_util::StreamExt as _;
use http_support::{call_json, config, initialize_body, legacy_session_at};
use redis_support::*;
use serde_json::{Map, Value, json};

const LEASE: Duration = Duration::from_secs(3600);

struct Instance {
    addr: SocketAddr,
    /// `hold` calls that saw their cancellation.
    cancelled: Arc<AtomicUsize>,
    _sync: TaskSyncHandle,
    _serving: tokio::task::JoinHandle<()>,
}

impl Instance {
    async fn call(&self, sid: &str, id: i64, method: &str, params: Value) -> Value {
        call_json(self.addr, sid, id, method, params).await
    }

    async fn session(&self) -> String {
        legacy_session_at(self.addr, initialize_body()).await
    }
}

/// Counts when the work it lives in ends (stopped or dropped).
struct Ended(Arc<AtomicUsize>);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// `hold`: a task that runs until it is stopped, and counts that.
fn registry(cancelled: &Arc<AtomicUsize>) -> Arc<McpToolRegistry> {
    let r = McpToolRegistry::new();
    let cancelled = cancelled.clone();
    let hold = move |_: Map<String, Value>, cx: ToolContext| {
        let ended = Ended(cancelled.clone());
        async move {
            let _ended = ended;
            cx.cancelled().await;
            ToolOutput::content(vec![ContentBlock::text("stopped")])
        }
    };
    r.register_tool(
        ToolRegistration::new(ToolDefinition::new("hold", json!({"type": "object"})), hold)
            .with_settings(ToolSettings {
                task_support: TaskSupport::Optional,
                ..ToolSettings::default()
            }),
    )
    .unwrap();
    Arc::new(r)
}

/// An instance named `name` on its own connection to `redis`, sharing `sessions`.
async fn instance(redis: &Redis, name: &str, sessions: &Arc<MemorySessionStore>) -> Instance {
    let tasks = RedisTaskStore::new(connect(redis, "wake").await);
    let wakeups = tasks.wakeups(name).await.unwrap();
    let cancelled = Arc::new(AtomicUsize::new(0));
    let engine = Engine::builder(
        McpServerConfig::new("task-wakeups", "0.0.0").with_rate_limit(None),
        registry(&cancelled),
    )
    .task_store(Arc::new(tasks), name, LEASE)
    .build();
    let sync = spawn_task_sync_woken(&engine, wakeups).expect("a shared task store");
    let mut http = config().with_session_store(sessions.clone());
    http.bind = SocketAddr::from(([127, 0, 0, 1], 0));
    let server = HttpServer::new(engine, http);
    let listener = server.bind().await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move {
        let _ = server.serve(listener, std::future::pending()).await;
    });
    Instance {
        addr,
        cancelled,
        _sync: sync,
        _serving: serving,
    }
}

#[tokio::test]
async fn a_cancel_on_another_instance_reaches_the_owner_without_its_poll() {
    let redis = start_redis();
    let sessions = Arc::new(MemorySessionStore::new());
    let a = instance(&redis, "a", &sessions).await;
    let b = instance(&redis, "b", &sessions).await;
    let sid = a.session().await;
    let created = a
        .call(
            &sid,
            2,
            "tools/call",
            json!({"name": "hold", "arguments": {}, "task": {}}),
        )
        .await;
    let task_id = created["result"]["task"]["taskId"].clone();
    assert!(task_id.is_string(), "{created}");
    let cancel = b
        .call(&sid, 3, "tasks/cancel", json!({"taskId": task_id}))
        .await;
    assert_eq!(cancel["result"]["status"], "cancelled", "{cancel}");
    // The owner renews every 15 minutes: only the wakeup ends the work this soon.
    let deadline = Instant::now() + Duration::from_secs(30);
    while a.cancelled.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the cancel never reached the work on A"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Answers queued for a running task (`tasks/update` on another instance) wake its owner.
#[tokio::test]
async fn queued_answers_wake_the_tasks_owner() {
    let redis = start_redis();
    let store = RedisTaskStore::new(connect(&redis, "wake2").await);
    let mut mine = store.wakeups("me").await.unwrap();
    let other = RedisTaskStore::new(connect(&redis, "wake2").await);
    let mut theirs = other.wakeups("them").await.unwrap();
    let record = |id: &str, owner: &str| {
        TaskRecord::new(id, owner, TaskEra::Modern, 1_000, 600_000, 500, 5_000)
    };
    assert!(store.put(record("t1", "me")).await.unwrap());
    assert!(other.deliver("t1", Map::new()).await.unwrap());
    tokio::time::timeout(Duration::from_secs(30), mine.next())
        .await
        .expect("the owner is woken")
        .expect("its wakeups go on");
    // Another owner's wakeups are its own channel's.
    assert!(store.put(record("t2", "them")).await.unwrap());
    assert!(store.deliver("t2", Map::new()).await.unwrap());
    tokio::time::timeout(Duration::from_secs(30), theirs.next())
        .await
        .expect("the other owner is woken")
        .expect("its wakeups go on");
}
