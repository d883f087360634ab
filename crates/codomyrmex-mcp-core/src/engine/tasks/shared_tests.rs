//! Tasks across instances: two engines share one [`MemoryTaskStore`] and one virtual clock,
//! and the test plays the driver's task sync (write dirty records, renew leases). No sleeps:
//! lease expiry is the clock advanced by hand.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::*;
use crate::config::McpServerConfig;
use crate::context::{MessageSink, NullSink};
use crate::engine::{Engine, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
use crate::platform::FrozenTime;
use crate::registry::{
    McpToolRegistry, TaskSupport, ToolDefinition, ToolRegistration, ToolSettings,
};
use crate::task_store::{MemoryTaskStore, OWNER_STOPPED, TaskRecord, TaskStore as _};
use crate::test_runtime::{advancing, idle, run};
use crate::wire::{IncomingMessage, OutgoingMessage, ProtocolVersion, RequestId};

const LEASE: Duration = Duration::from_secs(10);

fn registry() -> Arc<McpToolRegistry> {
    let r = McpToolRegistry::new();
    let settings = ToolSettings {
        task_support: TaskSupport::Optional,
        ..ToolSettings::default()
    };
    let slow = |_: crate::schema::JsonObject| async {
        std::future::pending::<crate::registry::ToolOutput>().await
    };
    r.register_tool(
        ToolRegistration::new(ToolDefinition::new("slow", json!({"type": "object"})), slow)
            .with_settings(settings.clone()),
    )
    .unwrap();
    let quick = |_: crate::schema::JsonObject| async {
        crate::registry::ToolOutput::content(vec![crate::wire::ContentBlock::text("42")])
    };
    r.register_tool(
        ToolRegistration::new(
            ToolDefinition::new("quick", json!({"type": "object"})),
            quick,
        )
        .with_settings(settings.clone()),
    )
    .unwrap();
    let ask = |_: crate::schema::JsonObject, cx: crate::context::ToolContext| async move {
        cx.start_task();
        let form = crate::context::InputRequest::form("Name?", json!({"type": "object"}));
        match cx.input("confirm", form).await {
            Ok(answer) => {
                crate::registry::ToolOutput::content(vec![crate::wire::ContentBlock::text(
                    format!("confirmed by {}", answer["content"]["name"]),
                )])
            }
            Err(e) => crate::registry::ToolOutput::failure(e.into()),
        }
    };
    r.register_tool(
        ToolRegistration::new(ToolDefinition::new("ask", json!({"type": "object"})), ask)
            .with_settings(settings),
    )
    .unwrap();
    Arc::new(r)
}

struct Cluster {
    store: Arc<MemoryTaskStore>,
    time: Arc<FrozenTime>,
    a: Engine,
    b: Engine,
}

fn cluster() -> Cluster {
    let store = Arc::new(MemoryTaskStore::new());
    let time = Arc::new(FrozenTime::starting_at(
        crate::platform::test_origin(),
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
    ));
    let engine = |name: &str| {
        Engine::builder(McpServerConfig::default().with_rate_limit(None), registry())
            .time_source(time.clone())
            .task_store(store.clone(), name, LEASE)
            .build()
    };
    Cluster {
        a: engine("a"),
        b: engine("b"),
        store,
        time,
    }
}

async fn send(e: &Engine, session: &Arc<Session>, method: &str, params: Value) -> Value {
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    let handled = e.handle(
        session,
        IncomingMessage::Request {
            id: RequestId::from(7),
            method: method.into(),
            params: params.as_object().cloned(),
        },
        &sink,
    );
    match handled.into_message().await {
        Some(OutgoingMessage::Error { error, .. }) => json!({"error": error}),
        Some(m) if m.is_response() => m.result_value().unwrap(),
        other => panic!("unexpected answer {other:?}"),
    }
}

async fn modern(e: &Engine, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        META_PROTOCOL_VERSION: "2026-07-28",
        META_CLIENT_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}},
    });
    send(e, &e.new_stateless_session(), method, params).await
}

/// The driver's task sync, one round: write what changed, renew, apply.
async fn sync(e: &Engine) {
    let sync = e.task_sync().expect("a shared store");
    for record in sync.take_dirty() {
        let id = record.id.clone();
        if !sync.store().put(record).await.unwrap() {
            sync.stop(&id);
        }
    }
    let running = sync.running();
    let lease_until = sync.now_ms() + LEASE.as_millis() as u64;
    let renewal = sync.store().renew(&running, lease_until).await.unwrap();
    sync.apply(renewal);
}

#[test]
fn a_modern_task_is_polled_and_cancelled_from_another_instance() {
    run(async {
        let c = cluster();
        let created = modern(&c.a, "tools/call", json!({"name": "slow", "arguments": {}})).await;
        assert_eq!(created["resultType"], "task", "{created}");
        let id = created["taskId"].clone();
        // Written before the client heard of it: the other instance finds it at once.
        let seen = modern(&c.b, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(seen["status"], "working", "{seen}");
        assert_eq!(seen["taskId"], id);
        let local = modern(&c.a, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(
            local, seen,
            "the owner and another instance show the same task"
        );

        let ack = modern(&c.b, "tasks/cancel", json!({"taskId": id})).await;
        assert_eq!(ack["resultType"], "complete", "{ack}");
        let cancelled = modern(&c.b, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(cancelled["status"], "cancelled");
        // The owner hears of it at its next renewal and stops the work.
        let entry = c.a.shared.tasks.store().get(id.as_str().unwrap()).unwrap();
        sync(&c.a).await;
        assert!(entry.cancel.is_cancelled(), "the work is told to stop");
        let from_owner = modern(&c.a, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(from_owner["status"], "cancelled", "{from_owner}");
        let missing = modern(&c.b, "tasks/get", json!({"taskId": "0".repeat(32)})).await;
        assert_eq!(missing["error"]["code"], -32602, "{missing}");
    });
}

#[test]
fn the_tasks_of_an_instance_that_stopped_fail_within_the_lease() {
    run(async {
        let c = cluster();
        let created = modern(&c.a, "tools/call", json!({"name": "slow", "arguments": {}})).await;
        let id = created["taskId"].clone();
        c.time.advance(LEASE / 2);
        sync(&c.a).await; // alive: renewed
        c.time.advance(LEASE - Duration::from_millis(1));
        let alive = modern(&c.b, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(
            alive["status"], "working",
            "renewed, so still working: {alive}"
        );
        // Instance a stops renewing (it died); one lease after its last renewal the task fails.
        c.time.advance(Duration::from_millis(1));
        let failed = modern(&c.b, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(failed["status"], "failed", "{failed}");
        assert_eq!(failed["statusMessage"], OWNER_STOPPED);
        assert!(
            failed["error"]["message"]
                .as_str()
                .unwrap()
                .contains(OWNER_STOPPED)
        );
        // An owner that was only stalled does not bring it back: it stops the work.
        let entry = c.a.shared.tasks.store().get(id.as_str().unwrap()).unwrap();
        sync(&c.a).await;
        assert!(entry.cancel.is_cancelled());
        let from_owner = modern(&c.a, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(from_owner, failed);
    });
}

fn legacy_session(e: &Engine, key: &str) -> Arc<Session> {
    let session = e.new_session();
    session.set_key(key);
    session.restore(ProtocolVersion::V2025_11_25, json!({}), None, None);
    session
}

#[test]
fn a_legacy_task_is_polled_listed_and_fetched_from_another_instance() {
    run(async {
        let c = cluster();
        let on_a = legacy_session(&c.a, "session-1");
        let on_b = legacy_session(&c.b, "session-1");
        let stranger = legacy_session(&c.b, "session-2");
        let created = send(
            &c.a,
            &on_a,
            "tools/call",
            json!({"name": "quick", "arguments": {}, "task": {}}),
        )
        .await;
        let id = created["task"]["taskId"].clone();
        assert!(id.is_string(), "{created}");
        let seen = send(&c.b, &on_b, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(seen["taskId"], id, "{seen}");
        // The owner's own tasks/result, then its record as the sync writes it.
        let local = send(&c.a, &on_a, "tasks/result", json!({"taskId": id})).await;
        assert_eq!(local["content"][0]["text"], "42", "{local}");
        sync(&c.a).await;
        let done = send(&c.b, &on_b, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(done["status"], "completed", "{done}");
        let remote = send(&c.b, &on_b, "tasks/result", json!({"taskId": id})).await;
        assert_eq!(remote, local, "the same result from any instance");
        let listed = send(&c.b, &on_b, "tasks/list", json!({})).await;
        assert_eq!(listed["tasks"][0]["taskId"], id, "{listed}");
        // Another session sees none of it.
        let other = send(&c.b, &stranger, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(other["error"]["code"], -32602, "{other}");
        let none = send(&c.b, &stranger, "tasks/list", json!({})).await;
        assert_eq!(none["tasks"], json!([]), "{none}");
        assert!(
            c.store
                .get(id.as_str().unwrap(), 0)
                .await
                .unwrap()
                .is_some()
        );
    });
}

#[test]
fn input_asked_on_one_instance_is_answered_through_another() {
    run(async {
        let c = cluster();
        let mut params = json!({"name": "ask", "arguments": {}});
        params["_meta"] = json!({
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}},
        });
        let created = send(&c.a, &c.a.new_stateless_session(), "tools/call", params).await;
        assert_eq!(created["resultType"], "task", "{created}");
        let id = created["taskId"].clone();
        // Until a's tool has asked and a has written it (no real time passes).
        let mut parked = Value::Null;
        for _ in 0..100 {
            idle().await;
            sync(&c.a).await;
            parked = modern(&c.b, "tasks/get", json!({"taskId": id})).await;
            if parked["status"] == "input_required" {
                break;
            }
        }
        assert_eq!(parked["status"], "input_required", "{parked}");
        assert_eq!(
            parked["inputRequests"]["confirm"]["method"], "elicitation/create",
            "{parked}"
        );
        let answers = json!({"confirm": {"action": "accept", "content": {"name": "Ada"}}});
        let ack = modern(
            &c.b,
            "tasks/update",
            json!({"taskId": id, "inputResponses": answers}),
        )
        .await;
        assert_eq!(ack["resultType"], "complete", "{ack}");
        // a hears the answer at its next renewal; the tool finishes; b reads the result.
        let mut done = Value::Null;
        for _ in 0..100 {
            sync(&c.a).await;
            idle().await;
            done = modern(&c.b, "tasks/get", json!({"taskId": id})).await;
            if done["status"] == "completed" {
                break;
            }
        }
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(
            done["result"]["content"][0]["text"], "confirmed by \"Ada\"",
            "{done}"
        );
    });
}

/// A shared store whose reads hang or panic on demand (writes and renewals always work).
#[derive(Debug)]
struct FaultyStore {
    inner: Arc<MemoryTaskStore>,
    /// 0: fine; 1: reads never answer; 2: reads panic.
    mode: std::sync::atomic::AtomicU8,
}

impl FaultyStore {
    fn read<'a, T: Send + 'a>(
        &'a self,
        fine: crate::task_store::TaskStoreFuture<'a, T>,
    ) -> crate::task_store::TaskStoreFuture<'a, T> {
        match self.mode.load(std::sync::atomic::Ordering::SeqCst) {
            0 => fine,
            1 => Box::pin(std::future::pending()),
            _ => Box::pin(async { panic!("the store broke") }),
        }
    }
}

impl crate::task_store::TaskStore for FaultyStore {
    fn put(&self, record: TaskRecord) -> crate::task_store::TaskStoreFuture<'_, bool> {
        self.inner.put(record)
    }
    fn get<'a>(
        &'a self,
        id: &'a str,
        now: u64,
    ) -> crate::task_store::TaskStoreFuture<'a, Option<TaskRecord>> {
        self.read(self.inner.get(id, now))
    }
    fn cancel<'a>(
        &'a self,
        id: &'a str,
        now: u64,
    ) -> crate::task_store::TaskStoreFuture<'a, Option<TaskRecord>> {
        self.read(self.inner.cancel(id, now))
    }
    fn deliver<'a>(
        &'a self,
        id: &'a str,
        responses: serde_json::Map<String, Value>,
    ) -> crate::task_store::TaskStoreFuture<'a, bool> {
        self.read(self.inner.deliver(id, responses))
    }
    fn renew<'a>(
        &'a self,
        ids: &'a [String],
        lease_until: u64,
    ) -> crate::task_store::TaskStoreFuture<'a, crate::task_store::Renewal> {
        self.inner.renew(ids, lease_until)
    }
    fn list<'a>(
        &'a self,
        session: &'a str,
        now: u64,
    ) -> crate::task_store::TaskStoreFuture<'a, Vec<TaskRecord>> {
        self.read(self.inner.list(session, now))
    }
    fn changed<'a>(&'a self, id: &'a str, seen: u64) -> crate::task_store::TaskStoreFuture<'a, ()> {
        self.read(self.inner.changed(id, seen))
    }
}

/// `answer`, the virtual clock advancing while it waits, or a failure when it is not there
/// within a virtual day (the longest wait here, a 2025-11-25 `tasks/result`, is bounded by
/// the task TTL and the lease).
async fn answered(answer: impl std::future::Future<Output = Value>) -> Value {
    advancing(Duration::from_secs(24 * 3600), answer)
        .await
        .expect("the request was never answered")
}

#[test]
fn a_shared_store_that_hangs_or_panics_costs_only_the_request_that_reads_it() {
    run(async {
        let c = cluster();
        let faulty = Arc::new(FaultyStore {
            inner: c.store.clone(),
            mode: std::sync::atomic::AtomicU8::new(0),
        });
        let b = Engine::builder(McpServerConfig::default().with_rate_limit(None), registry())
            .time_source(c.time.clone())
            .task_store(faulty.clone(), "b", LEASE)
            .build();
        let created = modern(&c.a, "tools/call", json!({"name": "slow", "arguments": {}})).await;
        let id = created["taskId"].clone();
        let on_b = legacy_session(&b, "session-1");
        for mode in [1, 2] {
            faulty.mode.store(mode, std::sync::atomic::Ordering::SeqCst);
            // Each read of the store is answered "unavailable" (the hang: within the lease, on
            // the virtual clock), never left waiting.
            for method in ["tasks/get", "tasks/cancel", "tasks/update"] {
                let params = json!({"taskId": id, "inputResponses": {}});
                let got = answered(modern(&b, method, params)).await;
                assert_eq!(
                    got["error"]["code"],
                    json!(-32000),
                    "{mode} {method}: {got}"
                );
            }
            for method in ["tasks/get", "tasks/result", "tasks/list"] {
                let got = answered(send(&b, &on_b, method, json!({"taskId": id}))).await;
                assert_eq!(
                    got["error"]["code"],
                    json!(-32000),
                    "{mode} {method}: {got}"
                );
            }
        }
        // The store recovers: the same engine reads it again.
        faulty.mode.store(0, std::sync::atomic::Ordering::SeqCst);
        let seen = modern(&b, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(seen["status"], "working", "{seen}");
    });
}

/// A `tasks/get` of a task this instance runs reads the shared store too: the read writes the
/// live task's record ahead of it, so it shows what the owner knows before the task sync has
/// run, and the store (and so every other instance) holds that from then on.
#[test]
fn a_read_on_the_owner_writes_its_record_ahead_of_the_task_sync() {
    run(async {
        let c = cluster();
        let mut params = json!({"name": "ask", "arguments": {}});
        params["_meta"] = json!({
            META_PROTOCOL_VERSION: "2026-07-28",
            META_CLIENT_CAPABILITIES: {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}},
        });
        let created = send(&c.a, &c.a.new_stateless_session(), "tools/call", params).await;
        assert_eq!(created["resultType"], "task", "{created}");
        let id = created["taskId"].clone();
        let task = id.as_str().unwrap();
        let entry = c.a.shared.tasks.store().get(task).unwrap();
        for _ in 0..10_000 {
            if entry.status() == Status::InputRequired {
                break;
            }
            idle().await;
        }
        assert_eq!(entry.status(), Status::InputRequired);
        let answer = json!({"confirm": {"action": "accept", "content": {"name": "Ada"}}});
        let ack = modern(
            &c.a,
            "tasks/update",
            json!({"taskId": id, "inputResponses": answer}),
        )
        .await;
        assert_eq!(ack["resultType"], "complete", "{ack}");
        for _ in 0..10_000 {
            if entry.status() == Status::Completed {
                break;
            }
            idle().await;
        }
        assert_eq!(entry.status(), Status::Completed);
        let now = super::shared::wall_ms(c.time.wall());
        let before = c.store.get(task, now).await.unwrap().unwrap();
        assert_eq!(
            before.status,
            crate::task_store::TaskStatus::InputRequired,
            "the task sync has not written the change yet"
        );
        let seen = modern(&c.a, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(seen["status"], "completed", "{seen}");
        let stored = c.store.get(task, now).await.unwrap().unwrap();
        assert_eq!(stored.status, crate::task_store::TaskStatus::Completed);
        let elsewhere = modern(&c.b, "tasks/get", json!({"taskId": id})).await;
        assert_eq!(elsewhere, seen, "{elsewhere}");
    });
}
