//! Tasks across two HTTP servers sharing a session store and a task store (issue #16): a
//! 2025-11-25 task made on one server is polled, fetched and listed on the other, in a
//! session both serve, and a session the task does not belong to sees none of it.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::McpServerConfig;
use codomyrmex_mcp::engine::Engine;
use codomyrmex_mcp::runtime::{TaskSyncHandle, spawn_task_sync};
use codomyrmex_mcp::store::MemorySessionStore;
use codomyrmex_mcp::task_store::{
    MemoryTaskStore, Renewal, TaskRecord, TaskStore, TaskStoreFuture,
};
use codomyrmex_mcp::transport::http::HttpServer;
use codomyrmex_mcp::{ContentBlock, JsonObject};
use codomyrmex_mcp::{
    McpToolRegistry, TaskSupport, ToolDefinition, ToolOutput, ToolRegistration, ToolSettings,
};
use http_support::{call_json, config, initialize_body, legacy, legacy_session_at, send};
use serde_json::{Value, json};

struct Instance {
    addr: SocketAddr,
    _sync: TaskSyncHandle,
    _serving: tokio::task::JoinHandle<()>,
}

impl Instance {
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.addr.port())
    }

    async fn call(&self, sid: &str, id: i64, method: &str, params: Value) -> Value {
        call_json(self.addr, sid, id, method, params).await
    }

    /// Calls `nap` as a task (request id 2); its task id.
    async fn start_nap_task(&self, sid: &str) -> Value {
        let created = self
            .call(
                sid,
                2,
                "tools/call",
                json!({"name": "nap", "arguments": {}, "task": {}}),
            )
            .await;
        let task_id = created["result"]["task"]["taskId"].clone();
        assert!(task_id.is_string(), "{created}");
        task_id
    }

    async fn session(&self) -> String {
        legacy_session_at(self.addr, initialize_body()).await
    }
}

fn registry() -> Arc<McpToolRegistry> {
    let r = McpToolRegistry::new();
    let nap = |_: JsonObject| async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        ToolOutput::content(vec![ContentBlock::text("rested")])
    };
    r.register_tool(
        ToolRegistration::new(ToolDefinition::new("nap", json!({"type": "object"})), nap)
            .with_settings(ToolSettings {
                task_support: TaskSupport::Optional,
                ..ToolSettings::default()
            }),
    )
    .unwrap();
    Arc::new(r)
}

async fn instance<T: TaskStore + 'static>(
    name: &str,
    sessions: &Arc<MemorySessionStore>,
    tasks: &Arc<T>,
) -> Instance {
    let engine = Engine::builder(
        McpServerConfig::new("shared-tasks", "0.0.0").with_rate_limit(None),
        registry(),
    )
    .task_store(tasks.clone(), name, Duration::from_secs(10))
    .build();
    let sync = spawn_task_sync(&engine).expect("a shared task store");
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
        _sync: sync,
        _serving: serving,
    }
}

#[tokio::test]
async fn a_legacy_task_made_on_one_server_is_polled_fetched_and_listed_on_another() {
    let sessions = Arc::new(MemorySessionStore::new());
    let tasks = Arc::new(MemoryTaskStore::new());
    let a = instance("a", &sessions, &tasks).await;
    let b = instance("b", &sessions, &tasks).await;
    let sid = a.session().await;
    let task_id = a.start_nap_task(&sid).await;
    let seen = b
        .call(&sid, 3, "tasks/get", json!({"taskId": task_id}))
        .await;
    assert_eq!(seen["result"]["taskId"], task_id, "{seen}");
    // Blocks on b until a's work is done and a's sync has written the result.
    let fetched = b
        .call(&sid, 4, "tasks/result", json!({"taskId": task_id}))
        .await;
    assert_eq!(
        fetched["result"]["content"][0]["text"], "rested",
        "{fetched}"
    );
    let listed = b.call(&sid, 5, "tasks/list", json!({})).await;
    assert_eq!(listed["result"]["tasks"][0]["taskId"], task_id, "{listed}");
    assert_eq!(listed["result"]["tasks"][0]["status"], "completed");
    // Another session, on either server, sees nothing of it.
    let other = b.session().await;
    let hidden = b
        .call(&other, 6, "tasks/get", json!({"taskId": task_id}))
        .await;
    assert_eq!(hidden["error"]["code"], -32602, "{hidden}");
    let none = a.call(&other, 7, "tasks/list", json!({})).await;
    assert_eq!(none["result"]["tasks"], json!([]), "{none}");
}

/// A task store that can be switched off, as a Redis that went away.
#[derive(Debug, Default)]
struct Switchable {
    inner: MemoryTaskStore,
    down: std::sync::atomic::AtomicBool,
}

impl Switchable {
    fn gate<'a, T: Send + 'a>(
        &'a self,
        f: codomyrmex_mcp::task_store::TaskStoreFuture<'a, T>,
    ) -> codomyrmex_mcp::task_store::TaskStoreFuture<'a, T> {
        if self.down.load(std::sync::atomic::Ordering::SeqCst) {
            Box::pin(std::future::ready(Err(
                codomyrmex_mcp::task_store::TaskStoreError::Unavailable("switched off".into()),
            )))
        } else {
            f
        }
    }
}

impl TaskStore for Switchable {
    fn put(&self, record: TaskRecord) -> TaskStoreFuture<'_, bool> {
        self.gate(self.inner.put(record))
    }
    fn get<'a>(&'a self, id: &'a str, now: u64) -> TaskStoreFuture<'a, Option<TaskRecord>> {
        self.gate(self.inner.get(id, now))
    }
    fn cancel<'a>(&'a self, id: &'a str, now: u64) -> TaskStoreFuture<'a, Option<TaskRecord>> {
        self.gate(self.inner.cancel(id, now))
    }
    fn deliver<'a>(
        &'a self,
        id: &'a str,
        responses: serde_json::Map<String, Value>,
    ) -> TaskStoreFuture<'a, bool> {
        self.gate(self.inner.deliver(id, responses))
    }
    fn renew<'a>(&'a self, ids: &'a [String], lease_until: u64) -> TaskStoreFuture<'a, Renewal> {
        self.gate(self.inner.renew(ids, lease_until))
    }
    fn list<'a>(&'a self, session: &'a str, now: u64) -> TaskStoreFuture<'a, Vec<TaskRecord>> {
        self.gate(self.inner.list(session, now))
    }
    fn changed<'a>(&'a self, id: &'a str, seen: u64) -> TaskStoreFuture<'a, ()> {
        self.gate(self.inner.changed(id, seen))
    }
}

/// With the task store away, a `tasks/*` request that needs it gets `503` with `Retry-After`
/// and a JSON-RPC error saying so (issue #16, item 5), on the server that must read the
/// record (not the one running the task); when the store is back, the task is there.
#[tokio::test]
async fn with_the_task_store_down_tasks_requests_get_503_with_retry_after() {
    let sessions = Arc::new(MemorySessionStore::new());
    let tasks = Arc::new(Switchable::default());
    let a = instance("a", &sessions, &tasks).await;
    let b = instance("b", &sessions, &tasks).await;
    let sid = a.session().await;
    let task_id = a.start_nap_task(&sid).await;
    tasks.down.store(true, std::sync::atomic::Ordering::SeqCst);
    // B holds nothing of the task: it needs the store.
    let req = legacy(
        "tasks/get",
        Some(10),
        json!({"taskId": task_id}),
        Some(&sid),
    )
    .header("accept", "application/json");
    let r = send(b.addr, &b.host(), &req).await;
    assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.header("retry-after").is_some());
    assert_eq!(r.json()["error"]["code"], -32000, "{:?}", r.json());
    tasks.down.store(false, std::sync::atomic::Ordering::SeqCst);
    let seen = b
        .call(&sid, 20, "tasks/get", json!({"taskId": task_id}))
        .await;
    assert_eq!(seen["result"]["taskId"], task_id, "{seen}");
}
