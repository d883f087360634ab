//! Tests of the task store, its entries and the `tasks/*` methods of both eras.

use super::*;
use crate::McpErrorDetail;
use crate::config::McpServerConfig;
use crate::context::InputRequest;
use crate::context::{MessageSink, ToolContext};
use crate::engine::{Engine, Handled};
use crate::registry::{McpToolRegistry, ToolDefinition, ToolRegistration, ToolSettings};
use crate::registry::{TaskSupport, ToolOutput};
use crate::test_runtime::{advance, advancing, idle, run, sleep, spawn};
use crate::wire::{ContentBlock, IncomingMessage, RequestId};

// ----- the store and its entries -----

fn modern_owner() -> Owner {
    Owner::Modern { principal: None }
}

fn time() -> Arc<dyn TimeSource> {
    Arc::new(crate::platform::testing::VirtualTime)
}

/// The test clock now, as a request would be handled at.
fn now() -> crate::platform::Timestamp {
    crate::platform::Timestamp::of(time().as_ref())
}

fn store(config: TaskConfig) -> TaskStore {
    TaskStore::new(config, crate::platform::testing::platform(), None)
}

fn random_id() -> Option<String> {
    store(TaskConfig::default()).random_id()
}

fn entry(ttl: Duration, owner: Owner) -> Arc<TaskEntry> {
    Arc::new(TaskEntry::new(
        random_id().unwrap(),
        1,
        ttl,
        owner,
        now(),
        time(),
    ))
}

fn ask(e: &Arc<TaskEntry>, key: &str, max: usize) -> Result<Asked, ClientRequestError> {
    e.register(
        key,
        json!({"method": "elicitation/create", "params": {}}),
        max,
    )
}

#[test]
fn task_ids_are_128_random_bits() {
    let ids: std::collections::HashSet<String> = (0..1000).map(|_| random_id().unwrap()).collect();
    assert_eq!(ids.len(), 1000);
    for id in ids {
        assert_eq!(id.len(), 32);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    }
}

#[test]
fn timestamps_are_iso_8601_utc() {
    assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
    let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
    assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
    let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
    assert_eq!(iso8601(t), "2023-11-14T22:13:20.123Z");
    let t = UNIX_EPOCH + Duration::from_secs(4_102_444_799);
    assert_eq!(iso8601(t), "2099-12-31T23:59:59.000Z");
}

#[test]
fn status_follows_the_lifecycle() {
    run(async {
        let e = entry(Duration::from_secs(60), modern_owner());
        assert_eq!(e.status(), Status::Working);
        let Ok(Asked::Waiting(w)) = ask(&e, "k", 8) else {
            panic!("a waiter expected")
        };
        assert_eq!(e.status(), Status::InputRequired);
        assert_eq!(
            e.update(&Map::from_iter([("k".into(), json!({"action": "accept"}))])),
            1
        );
        assert_eq!(e.status(), Status::Working);
        assert_eq!(
            w.wait(&CancellationToken::new()).await.unwrap(),
            json!({"action": "accept"})
        );
        let value = json!({"content": [], "isError": true});
        assert!(e.finish(
            Outcome::Result {
                value,
                is_error: true
            },
            None
        ));
        // 2026-07-28 reserves `failed` for protocol errors: a tool error completes.
        assert_eq!(e.status(), Status::Completed);
        let e = entry(Duration::from_secs(60), modern_owner());
        e.finish(Outcome::Error(ErrorObject::internal("x")), None);
        assert_eq!(e.status(), Status::Failed);
    });
}

#[test]
fn a_tool_error_fails_a_2025_11_25_task() {
    let session = Arc::new(Session::new(1));
    let e = entry(Duration::from_secs(60), Owner::of(Era::Legacy, &session));
    let value = json!({"content": [], "isError": true});
    e.finish(
        Outcome::Result {
            value,
            is_error: true,
        },
        Some("m".into()),
    );
    assert_eq!(e.status(), Status::Failed);
}

#[test]
fn a_terminal_status_never_changes() {
    let e = entry(Duration::from_secs(60), modern_owner());
    assert!(e.finish(
        Outcome::Result {
            value: json!({}),
            is_error: false
        },
        None
    ));
    assert!(!e.finish(Outcome::Error(ErrorObject::internal("late")), None));
    assert!(!e.finish(Outcome::Cancelled, None));
    assert_eq!(e.cancel(), Err(Status::Completed));
    assert_eq!(e.status(), Status::Completed);
    assert!(!e.cancel.is_cancelled());
    assert!(matches!(
        ask(&e, "k", 8),
        Err(ClientRequestError::Cancelled)
    ));
}

#[test]
fn cancelling_stops_the_work_and_wakes_waiters() {
    run(async {
        let e = entry(Duration::from_secs(60), modern_owner());
        let Ok(Asked::Waiting(w)) = ask(&e, "k", 8) else {
            panic!("a waiter expected")
        };
        assert_eq!(e.cancel(), Ok(()));
        assert!(e.cancel.is_cancelled());
        assert_eq!(e.status(), Status::Cancelled);
        assert!(lock(&e.state).pending.is_empty());
        assert_eq!(
            w.wait(&CancellationToken::new()).await,
            Err(ClientRequestError::Cancelled)
        );
        assert_eq!(e.cancel(), Err(Status::Cancelled));
    });
}

#[test]
fn partial_updates_keep_the_task_waiting_for_the_rest() {
    run(async {
        let e = entry(Duration::from_secs(60), modern_owner());
        let (Ok(Asked::Waiting(a)), Ok(Asked::Waiting(b))) = (ask(&e, "a", 8), ask(&e, "b", 8))
        else {
            panic!("two waiters expected")
        };
        let unknown = Map::from_iter([("zzz".into(), json!({"ignored": true}))]);
        assert_eq!(e.update(&unknown), 0, "unknown keys are ignored");
        assert_eq!(
            e.update(&Map::from_iter([("a".into(), json!({"n": 1}))])),
            1
        );
        assert_eq!(e.status(), Status::InputRequired);
        let pending = e.json(&TaskConfig::default(), true)["inputRequests"].clone();
        assert!(
            pending.get("a").is_none() && pending.get("b").is_some(),
            "{pending}"
        );
        let cancel = CancellationToken::new();
        assert_eq!(a.wait(&cancel).await.unwrap(), json!({"n": 1}));
        assert_eq!(
            e.update(&Map::from_iter([("a".into(), json!({"n": 9}))])),
            0,
            "an answered key is not pending any more"
        );
        e.update(&Map::from_iter([("b".into(), json!({"n": 2}))]));
        assert_eq!(b.wait(&cancel).await.unwrap(), json!({"n": 2}));
        assert_eq!(e.status(), Status::Working);
        // A key asked again gets the answer it already has.
        assert!(matches!(ask(&e, "a", 8), Ok(Asked::Answered(v)) if v == json!({"n": 1})));
    });
}

#[test]
fn a_dropped_waiter_withdraws_its_request_and_inputs_are_bounded() {
    let e = entry(Duration::from_secs(60), modern_owner());
    let w1 = ask(&e, "a", 2);
    let w2 = ask(&e, "a", 2);
    let _w3 = ask(&e, "b", 2).unwrap();
    assert!(matches!(
        ask(&e, "c", 2),
        Err(ClientRequestError::Unavailable)
    ));
    drop(w1);
    assert!(
        lock(&e.state).pending.contains_key("a"),
        "another waiter remains"
    );
    drop(w2);
    assert!(!lock(&e.state).pending.contains_key("a"));
    assert!(matches!(ask(&e, "c", 2), Ok(Asked::Waiting(_))));
}

#[test]
fn the_store_is_bounded_and_makes_room_from_finished_tasks() {
    let store = store(TaskConfig {
        max_tasks: 2,
        ..TaskConfig::default()
    });
    let first = entry(Duration::from_secs(60), modern_owner());
    let second = entry(Duration::from_secs(60), modern_owner());
    store
        .reserve(now().mono)
        .unwrap()
        .commit(first.clone(), &store);
    let r = store.reserve(now().mono).unwrap();
    assert!(
        store.reserve(now().mono).is_none(),
        "a reservation holds its slot"
    );
    r.commit(second.clone(), &store);
    assert!(store.reserve(now().mono).is_none(), "every task is running");
    first.finish(Outcome::Cancelled, None);
    let r = store.reserve(now().mono).unwrap();
    assert!(
        store.get(&first.id).is_none(),
        "the oldest finished task made room"
    );
    assert!(store.get(&second.id).is_some());
    drop(r);
    assert_eq!(store.len(), 1);
    assert!(
        store.reserve(now().mono).is_some(),
        "a dropped reservation frees its slot"
    );
}

#[test]
fn finished_results_are_kept_within_a_byte_budget() {
    let store = store(TaskConfig {
        max_retained_bytes: 100,
        ..TaskConfig::default()
    });
    let done = |bytes| {
        let r = store.reserve(now().mono).unwrap();
        let id = random_id().unwrap();
        let e = Arc::new(TaskEntry::new(
            id,
            r.seq,
            Duration::from_secs(60),
            modern_owner(),
            now(),
            time(),
        ));
        r.commit(e.clone(), &store);
        e.finish(Outcome::Cancelled, None);
        store.retain(&e, bytes);
        e
    };
    let a = done(40);
    let b = done(40);
    assert!(store.get(&a.id).is_some() && store.get(&b.id).is_some());
    let c = done(40);
    assert!(store.get(&a.id).is_none(), "the oldest made room");
    assert!(store.get(&b.id).is_some() && store.get(&c.id).is_some());
    let big = done(500);
    assert!(store.get(&big.id).is_some(), "the newest result is kept");
    assert_eq!(store.len(), 1);
    lock(&store.inner).take(&big.id);
    assert_eq!(lock(&store.inner).retained, 0);
}

/// A 2025-11-25 task's relay is the core's one queue type (`Outbound`), under its one bound
/// and its rules, while no `tasks/result` stream is attached: progress of one token
/// coalesces to its latest, a list change is held once, another notification is dropped at
/// the bound, and a request at the bound is refused (its asker's `input` fails with
/// `Unavailable`) rather than held and then lost. What it holds goes to the stream that
/// attaches, in order; detached, it holds again.
#[test]
fn a_relay_holds_under_the_queues_bound_and_rules() {
    use crate::outbound::MAX_QUEUED;
    let relay = Outbound::relayed();
    let session = Session::new(1);
    let calls = session.asker();
    let progress = |n: u64| OutgoingMessage::Notification {
        method: "notifications/progress",
        params: json!({"progressToken": "t", "progress": n}),
    };
    let log = |n: u64| OutgoingMessage::Notification {
        method: "notifications/message",
        params: json!({"level": "info", "data": n}),
    };
    let changed = || OutgoingMessage::Notification {
        method: "notifications/tools/list_changed",
        params: json!({}),
    };
    assert!(relay.push(progress(1)));
    assert!(relay.push(changed()));
    assert!(relay.push(changed()), "a list change already held");
    assert_eq!(relay.queued(), 2);
    relay.drain();
    assert_eq!(relay.queued(), 2, "no stream attached: nothing leaves");
    let mut asked = Vec::new();
    while relay.queued() < MAX_QUEUED {
        asked.push(
            calls
                .ask("elicitation/create", json!({}), &relay)
                .expect("room"),
        );
    }
    assert!(
        calls.ask("elicitation/create", json!({}), &relay).is_none(),
        "a request at the bound is refused"
    );
    assert!(!relay.push(log(1)), "a log message is dropped at the bound");
    assert!(relay.push(progress(2)), "progress coalesces at the bound");
    assert_eq!(relay.queued(), MAX_QUEUED);

    let capture = Arc::new(Capture::default());
    let attached = relay.attach(capture.clone());
    let sent = lock(&capture.0).clone();
    assert_eq!(sent.len(), MAX_QUEUED);
    assert_eq!(relay.queued(), 0);
    let OutgoingMessage::Notification { params, .. } = &sent[0] else {
        panic!("progress first: {:?}", sent[0])
    };
    assert_eq!(params["progress"], 2, "the latest progress, in its place");
    let requests = sent
        .iter()
        .filter(|m| matches!(m, OutgoingMessage::Request { .. }))
        .count();
    assert_eq!(requests, asked.len(), "every request held went out");
    assert!(relay.push(log(2)));
    relay.drain();
    assert_eq!(
        lock(&capture.0).len(),
        MAX_QUEUED + 1,
        "attached, it forwards"
    );
    drop(attached);
    assert!(relay.push(log(3)));
    relay.drain();
    assert_eq!(relay.queued(), 1, "detached, it holds again");
}

/// A message the attached stream refuses (closed, or full) is not dropped: it waits, first,
/// for the next stream.
#[test]
fn a_relayed_message_the_stream_refuses_waits_for_the_next() {
    let relay = Outbound::relayed();
    let session = Session::new(1);
    let calls = session.asker();
    let call = calls
        .ask("elicitation/create", json!({}), &relay)
        .expect("room");
    let refusing = relay.attach(crate::context::NullSink::shared());
    relay.drain();
    assert_eq!(relay.queued(), 1, "refused, and kept");
    drop(refusing);
    let capture = Arc::new(Capture::default());
    let _attached = relay.attach(capture.clone());
    let sent = lock(&capture.0).clone();
    assert!(
        matches!(&sent[..], [OutgoingMessage::Request { id, .. }] if id == call.id()),
        "{sent:?}"
    );
}

#[test]
fn expired_tasks_are_removed_and_cancelled() {
    run(async {
        let store = store(TaskConfig::default());
        let e = entry(Duration::from_millis(300), modern_owner());
        store.reserve(now().mono).unwrap().commit(e.clone(), &store);
        assert!(store.get(&e.id).is_some(), "not before its TTL");
        advance(Duration::from_millis(400)).await;
        assert!(store.get(&e.id).is_none());
        assert!(e.cancel.is_cancelled());
        assert_eq!(store.len(), 0);
    });
}

#[test]
fn tasks_are_bound_to_their_principal_and_session() {
    let s1 = Arc::new(Session::new(1));
    let s2 = Arc::new(Session::new(1));
    let alice = Arc::new(Session::new(1))
        .with_principal(Some(crate::context::Principal::new("alice", vec![])));
    let modern = Owner::of(Era::Modern, &s1);
    assert!(modern.admits(Era::Modern, &s2), "no sessions on 2026-07-28");
    assert!(!modern.admits(Era::Modern, &alice));
    assert!(!modern.admits(Era::Legacy, &s1));
    let legacy = Owner::of(Era::Legacy, &s1);
    assert!(legacy.admits(Era::Legacy, &s1));
    assert!(!legacy.admits(Era::Legacy, &s2));
    assert!(!legacy.admits(Era::Modern, &s1));
    assert!(Owner::of(Era::Modern, &alice).admits(Era::Modern, &alice));
}

#[test]
fn wire_shapes_of_both_eras() {
    let config = TaskConfig::default();
    let e = entry(Duration::from_secs(60), modern_owner());
    let created = e.json(&config, false);
    assert_eq!(created["ttlMs"], json!(60_000));
    assert_eq!(created["pollIntervalMs"], json!(500));
    for absent in [
        "ttl",
        "pollInterval",
        "requestState",
        "result",
        "error",
        "task",
    ] {
        assert!(!created.contains_key(absent), "{absent}");
    }
    assert!(created["createdAt"].as_str().unwrap().ends_with('Z'));
    let value = json!({"content": [{"type": "text", "text": "ok"}]});
    e.finish(
        Outcome::Result {
            value: value.clone(),
            is_error: false,
        },
        None,
    );
    let got = e.json(&config, true);
    assert_eq!(got["result"], value);
    assert!(
        got["result"].get("_meta").is_none(),
        "no related-task on inlined results"
    );
    let failed = entry(Duration::from_secs(60), modern_owner());
    failed.finish(Outcome::Error(ErrorObject::internal("boom")), None);
    let got = failed.json(&config, true);
    assert_eq!(got["error"]["code"], -32603);
    assert!(!got.contains_key("result"));

    let session = Arc::new(Session::new(1));
    let legacy = entry(Duration::from_secs(60), Owner::of(Era::Legacy, &session));
    legacy.finish(
        Outcome::Result {
            value,
            is_error: false,
        },
        None,
    );
    let task = legacy.json(&config, true);
    assert_eq!(task["ttl"], json!(60_000));
    assert_eq!(task["pollInterval"], json!(500));
    assert!(!task.contains_key("ttlMs") && !task.contains_key("result"));
    let result = legacy.final_result().unwrap().unwrap();
    assert_eq!(
        result["_meta"][META_RELATED_TASK]["taskId"],
        json!(legacy.id())
    );
}

// ----- the engine -----

fn settings(task_support: TaskSupport) -> ToolSettings {
    ToolSettings {
        task_support,
        ..ToolSettings::default()
    }
}

fn add<M>(
    r: &McpToolRegistry,
    name: &str,
    support: TaskSupport,
    handler: impl crate::registry::IntoToolHandler<M>,
) {
    let definition = ToolDefinition::new(name, json!({"type": "object"}));
    r.register_tool(ToolRegistration::new(definition, handler).with_settings(settings(support)))
        .unwrap();
}

fn explode() -> ToolOutput {
    panic!("kaboom-secret")
}

fn text(t: impl Into<String>) -> ToolOutput {
    ToolOutput::content(vec![ContentBlock::text(t)])
}

fn form() -> InputRequest {
    InputRequest::form("Name?", json!({"type": "object"}))
}

fn name_of(answer: &Value) -> String {
    answer["content"]["name"].as_str().unwrap_or("?").to_owned()
}

fn task_registry() -> Arc<McpToolRegistry> {
    let r = McpToolRegistry::new();
    add(
        &r,
        "echo",
        TaskSupport::Forbidden,
        |_: Map<String, Value>| text("echo"),
    );
    add(
        &r,
        "instant",
        TaskSupport::Optional,
        |_: Map<String, Value>| text("instant"),
    );
    add(
        &r,
        "slow",
        TaskSupport::Optional,
        |a: Map<String, Value>| async move {
            let ms = a.get("ms").and_then(Value::as_u64).unwrap_or(100);
            sleep(Duration::from_millis(ms)).await;
            text(format!("slept {ms}"))
        },
    );
    add(
        &r,
        "required",
        TaskSupport::Required,
        |_: Map<String, Value>| async {
            sleep(Duration::from_millis(20)).await;
            ToolOutput::failure(McpErrorDetail::new("JobFailed", "always"))
        },
    );
    add(
        &r,
        "boom",
        TaskSupport::Optional,
        |_: Map<String, Value>| async {
            sleep(Duration::from_millis(20)).await;
            explode()
        },
    );
    add(
        &r,
        "ask",
        TaskSupport::Optional,
        |_: Map<String, Value>, cx: ToolContext| async move {
            cx.start_task();
            match cx.input("confirm", form()).await {
                Ok(answer) => text(format!("confirmed by {}", name_of(&answer))),
                Err(e) => ToolOutput::failure(e.into()),
            }
        },
    );
    add(
        &r,
        "two",
        TaskSupport::Optional,
        |_: Map<String, Value>, cx: ToolContext| async move {
            cx.start_task();
            let asked = vec![("a".to_owned(), form()), ("b".to_owned(), form())];
            match cx.input_all(asked).await {
                Ok(v) => text(format!("{} and {}", name_of(&v[0]), name_of(&v[1]))),
                Err(e) => ToolOutput::failure(e.into()),
            }
        },
    );
    add(
        &r,
        "mrtr_then_task",
        TaskSupport::Required,
        |_: Map<String, Value>, cx: ToolContext| async move {
            let answer = match cx.input("user_name", form()).await {
                Ok(a) => a,
                Err(e) => return ToolOutput::failure(e.into()),
            };
            sleep(Duration::from_millis(20)).await;
            text(format!("Hello, {}!", name_of(&answer)))
        },
    );
    Arc::new(r)
}

struct Client {
    engine: Engine,
    session: Arc<Session>,
    sink: Arc<dyn MessageSink>,
    next: std::sync::atomic::AtomicI64,
}

#[derive(Default)]
struct Capture(Mutex<Vec<OutgoingMessage>>);

impl MessageSink for Capture {
    fn send(&self, message: OutgoingMessage) -> bool {
        lock(&self.0).push(message);
        true
    }
}

fn engine(config: TaskConfig) -> Engine {
    let cfg = McpServerConfig::default().with_rate_limit(None);
    Engine::new(cfg, task_registry()).with_task_config(config)
}

impl Client {
    fn new(engine: &Engine) -> Self {
        Self {
            engine: engine.clone(),
            session: engine.new_session(),
            sink: Arc::new(crate::context::NullSink),
            next: std::sync::atomic::AtomicI64::new(1),
        }
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let id = RequestId::from(self.next.fetch_add(1, Ordering::Relaxed));
        let message = IncomingMessage::Request {
            id,
            method: method.into(),
            params: params.as_object().cloned(),
        };
        match self
            .engine
            .handle(&self.session, message, &self.sink)
            .into_message()
            .await
        {
            Some(OutgoingMessage::Error { error, .. }) => Err(error),
            Some(m) if m.is_response() => Ok(m.result_value().unwrap()),
            other => panic!("unexpected answer {other:?}"),
        }
    }

    /// A modern request; `ext` declares the tasks extension.
    async fn modern(
        &self,
        method: &str,
        mut params: Value,
        ext: bool,
    ) -> Result<Value, ErrorObject> {
        let mut caps = json!({"elicitation": {}});
        if ext {
            caps["extensions"] = json!({TASKS_EXTENSION: {}});
        }
        params["_meta"] = json!({
            super::super::META_PROTOCOL_VERSION: "2026-07-28",
            super::super::META_CLIENT_CAPABILITIES: caps,
        });
        self.request(method, params).await
    }

    async fn call(&self, tool: &str, args: Value) -> Value {
        self.modern("tools/call", json!({"name": tool, "arguments": args}), true)
            .await
            .unwrap()
    }

    async fn get(&self, task_id: &Value) -> Value {
        self.modern("tasks/get", json!({"taskId": task_id}), true)
            .await
            .unwrap()
    }

    async fn until(&self, task_id: &Value, done: impl Fn(&Value) -> bool) -> Value {
        for _ in 0..500 {
            let task = self.get(task_id).await;
            if done(&task) {
                return task;
            }
            advance(Duration::from_millis(10)).await;
        }
        panic!("task {task_id} did not get there")
    }

    async fn terminal(&self, task_id: &Value) -> Value {
        self.until(task_id, |t| {
            matches!(
                t["status"].as_str(),
                Some("completed" | "failed" | "cancelled")
            )
        })
        .await
    }
}

#[test]
fn a_task_supporting_call_becomes_a_task_and_completes() {
    run(async {
        let c = Client::new(&engine(TaskConfig::default()));
        let created = c.call("slow", json!({"ms": 50})).await;
        assert_eq!(created["resultType"], "task", "{created}");
        assert_eq!(created["status"], "working");
        for absent in [
            "task",
            "result",
            "error",
            "inputRequests",
            "requestState",
            "ttl",
            "content",
        ] {
            assert!(created.get(absent).is_none(), "{absent}: {created}");
        }
        assert!(created["ttlMs"].as_u64().unwrap() > 0);
        let id = &created["taskId"];
        // Durable at once.
        let now = c.get(id).await;
        assert_eq!(now["taskId"], *id);
        assert_eq!(now["resultType"], "complete");
        let done = c.terminal(id).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["result"]["content"][0]["text"], "slept 50");
        assert!(done.get("error").is_none());
        // A sync-only tool stays sync, with or without a legacy `task` hint.
        let sync = c
            .modern(
                "tools/call",
                json!({"name": "echo", "task": {"ttl": 1000}}),
                true,
            )
            .await
            .unwrap();
        assert_eq!(sync["resultType"], "complete");
        assert_eq!(sync["content"][0]["text"], "echo");
        // A tool that finishes without waiting answers at once.
        let instant = c.call("instant", json!({})).await;
        assert_eq!(instant["resultType"], "complete");
        assert!(instant.get("taskId").is_none());
        assert_eq!(c.session.in_flight(), 0);
    });
}

#[test]
fn without_the_extension_calls_are_synchronous_and_tasks_methods_refused() {
    run(async {
        let c = Client::new(&engine(TaskConfig::default()));
        // Answered once the tool's 5 ms have passed on the virtual clock.
        let sync = advancing(
            Duration::from_millis(5),
            c.modern(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 5}}),
                false,
            ),
        )
        .await
        .expect("answered after 5 ms")
        .unwrap();
        assert_eq!(sync["resultType"], "complete");
        assert_eq!(sync["content"][0]["text"], "slept 5");
        for (method, params) in [
            ("tasks/get", json!({"taskId": "x"})),
            ("tasks/update", json!({"taskId": "x", "inputResponses": {}})),
            ("tasks/cancel", json!({"taskId": "x"})),
        ] {
            let e = c.modern(method, params, false).await.unwrap_err();
            assert_eq!(e.code, -32021, "{method}");
            assert_eq!(
                e.data.unwrap()["requiredCapabilities"]["extensions"][TASKS_EXTENSION],
                json!({})
            );
        }
        let e = c
            .modern("tools/call", json!({"name": "required"}), false)
            .await
            .unwrap_err();
        assert_eq!(e.code, -32021);
        assert!(e.data.unwrap()["requiredCapabilities"]["extensions"][TASKS_EXTENSION].is_object());
        // The per-request declaration is what counts.
        let created = c.call("required", json!({})).await;
        assert_eq!(created["resultType"], "task");
    });
}

#[test]
fn tool_errors_complete_and_protocol_errors_fail() {
    run(async {
        let c = Client::new(&engine(TaskConfig::default()));
        let created = c.call("required", json!({})).await;
        let done = c.terminal(&created["taskId"]).await;
        assert_eq!(done["status"], "completed");
        assert_eq!(done["result"]["isError"], true);
        let created = c.call("boom", json!({})).await;
        let done = c.terminal(&created["taskId"]).await;
        assert_eq!(done["status"], "failed", "{done}");
        assert_eq!(done["error"]["code"], -32603);
        assert!(done["error"]["message"].is_string());
        assert!(done.get("result").is_none());
        assert!(
            !done["error"]["message"]
                .as_str()
                .unwrap()
                .contains("kaboom"),
            "no panic text leaks"
        );
    });
}

#[test]
fn cancel_acknowledges_and_settles_cancelled() {
    run(async {
        let c = Client::new(&engine(TaskConfig::default()));
        let created = c.call("slow", json!({"ms": 60_000})).await;
        let id = &created["taskId"];
        let ack = c
            .modern("tasks/cancel", json!({"taskId": id}), true)
            .await
            .unwrap();
        assert_eq!(ack["resultType"], "complete");
        for field in ["taskId", "status", "result", "error", "inputRequests"] {
            assert!(ack.get(field).is_none(), "{field}: {ack}");
        }
        assert_eq!(c.get(id).await["status"], "cancelled");
        let again = c.modern("tasks/cancel", json!({"taskId": id}), true).await;
        assert_eq!(again.unwrap()["resultType"], "complete", "idempotent");
        for method in ["tasks/get", "tasks/cancel"] {
            let e = c
                .modern(method, json!({"taskId": "nope"}), true)
                .await
                .unwrap_err();
            assert_eq!(e.code, -32602, "{method}");
        }
        let e = c.modern("tasks/get", json!({}), true).await.unwrap_err();
        assert_eq!(e.code, -32602);
    });
}

#[test]
fn removed_and_unknown_tasks_methods_are_not_found() {
    run(async {
        let c = Client::new(&engine(TaskConfig::default()));
        for method in ["tasks/result", "tasks/list", "tasks/nope"] {
            let e = c
                .modern(method, json!({"taskId": "x"}), true)
                .await
                .unwrap_err();
            assert_eq!(e.code, -32601, "{method}");
        }
    });
}

#[test]
fn input_parks_the_task_until_tasks_update() {
    run(async {
        let c = Client::new(&engine(TaskConfig::default()));
        let created = c.call("ask", json!({})).await;
        assert_eq!(created["resultType"], "task", "{created}");
        assert!(created.get("inputRequests").is_none());
        let id = &created["taskId"];
        let parked = c.until(id, |t| t["status"] == "input_required").await;
        assert_eq!(
            parked["inputRequests"]["confirm"]["method"],
            "elicitation/create"
        );
        let ack = c
        .modern(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"name": "Ada"}}}}),
            true,
        )
        .await
        .unwrap();
        assert_eq!(ack["resultType"], "complete");
        assert!(ack.get("status").is_none());
        let done = c.terminal(id).await;
        assert_eq!(done["result"]["content"][0]["text"], "confirmed by Ada");
        let e = c
            .modern(
                "tasks/update",
                json!({"taskId": id, "inputResponses": {"k": 1}}),
                true,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, -32602, "answers are objects");
    });
}

#[test]
fn several_inputs_are_pending_at_once_and_answered_one_by_one() {
    run(async {
        let c = Client::new(&engine(TaskConfig::default()));
        let created = c.call("two", json!({})).await;
        let id = &created["taskId"];
        let parked = c
            .until(id, |t| {
                t["inputRequests"].as_object().is_some_and(|m| m.len() == 2)
            })
            .await;
        assert_eq!(parked["status"], "input_required");
        let answer = |name: &str| json!({"action": "accept", "content": {"name": name}});
        c.modern(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"a": answer("x")}}),
            true,
        )
        .await
        .unwrap();
        let half = c.get(id).await;
        assert_eq!(half["status"], "input_required");
        let keys: Vec<&String> = half["inputRequests"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b"]);
        c.modern(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"b": answer("y")}}),
            true,
        )
        .await
        .unwrap();
        let done = c.terminal(id).await;
        assert_eq!(done["result"]["content"][0]["text"], "x and y");
    });
}

#[test]
fn multi_round_trip_input_comes_before_the_task() {
    run(async {
        let c = Client::new(&engine(TaskConfig::default()));
        let r1 = c.call("mrtr_then_task", json!({})).await;
        assert_eq!(r1["resultType"], "input_required", "{r1}");
        assert!(r1.get("taskId").is_none());
        assert!(r1["inputRequests"]["user_name"].is_object());
        let r2 = c
        .modern(
            "tools/call",
            json!({
                "name": "mrtr_then_task",
                "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
                "requestState": r1["requestState"],
            }),
            true,
        )
        .await
        .unwrap();
        assert_eq!(r2["resultType"], "task", "{r2}");
        assert!(r2.get("requestState").is_none() && r2.get("inputRequests").is_none());
        let done = c.terminal(&r2["taskId"]).await;
        assert_eq!(done["result"]["content"][0]["text"], "Hello, Alice!");
    });
}

#[test]
fn a_full_store_runs_calls_synchronously() {
    run(async {
        let c = Client::new(&engine(TaskConfig {
            max_tasks: 1,
            ..TaskConfig::default()
        }));
        let first = c.call("slow", json!({"ms": 60_000})).await;
        assert_eq!(first["resultType"], "task");
        let second = advancing(Duration::from_millis(5), c.call("slow", json!({"ms": 5})))
            .await
            .expect("answered after 5 ms");
        assert_eq!(second["resultType"], "complete", "{second}");
        assert_eq!(c.engine.shared.tasks.store().len(), 1);
    });
}

#[test]
fn tasks_end_and_disappear_when_their_ttl_elapses() {
    run(async {
        let c = Client::new(&engine(TaskConfig {
            ttl: Duration::from_millis(400),
            ..TaskConfig::default()
        }));
        let created = c.call("slow", json!({"ms": 3_600_000})).await;
        assert_eq!(created["ttlMs"], 400);
        let id = created["taskId"].clone();
        assert_eq!(c.get(&id).await["status"], "working");
        advance(Duration::from_millis(600)).await;
        let e = c
            .modern("tasks/get", json!({"taskId": id}), true)
            .await
            .unwrap_err();
        assert_eq!(e.code, -32602);
        assert_eq!(c.engine.shared.tasks.store().len(), 0);
    });
}

/// The default engine keeps its task records in its in-memory `task_store::TaskStore`: a
/// task's record is there from creation, follows it to its end, and leaves with the task when
/// the store makes room.
#[test]
fn the_default_engine_keeps_task_records_in_its_in_memory_store() {
    run(async {
        use crate::task_store::{TaskOutcome, TaskStatus};
        let c = Client::new(&engine(TaskConfig {
            max_tasks: 1,
            ..TaskConfig::default()
        }));
        let records = c.engine.shared.tasks.store().records();
        let wall = || shared::wall_ms(time().wall());
        let created = c.call("slow", json!({"ms": 50})).await;
        let id = created["taskId"].as_str().unwrap().to_owned();
        let record = records.get(&id, wall()).await.unwrap();
        let record = record.expect("written when the task is created");
        assert_eq!(record.status, TaskStatus::Working);
        c.terminal(&created["taskId"]).await;
        let record = records.get(&id, wall()).await.unwrap().unwrap();
        assert_eq!(record.status, TaskStatus::Completed);
        assert!(matches!(record.outcome, Some(TaskOutcome::Result { .. })));
        // One copy of the result: the store's record holds it, the live entry only its kind, and
        // the entry's record reads the same outcome through the store.
        let entry = c.engine.shared.tasks.store().get(&id).expect("still live");
        assert!(
            matches!(
                lock(&entry.state).outcome,
                Some(Outcome::Kept { is_error: false })
            ),
            "{:?}",
            lock(&entry.state).outcome
        );
        assert_eq!(
            entry.record(dirty::LOCAL_OWNER, Duration::ZERO, 0).outcome,
            record.outcome
        );
        assert_eq!(entry.status(), TaskStatus::Completed);
        // A new task takes the only slot: the finished one leaves, record and all.
        let next = c.call("slow", json!({"ms": 60_000})).await;
        assert_eq!(next["resultType"], "task");
        assert_eq!(records.get(&id, wall()).await.unwrap(), None);
    });
}

/// `tasks/*` read a task's record through the `task_store::TaskStore` trait, in the default
/// in-memory mode as with a shared store: the engine answers with a `Wait` the driver carries
/// out, never from the live task in the handling call.
#[test]
fn tasks_methods_read_through_the_store_as_a_wait() {
    run(async {
        let c = Client::new(&engine(TaskConfig::default()));
        let created = c.call("slow", json!({"ms": 60_000})).await;
        let task_id = created["taskId"].clone();
        let caps = json!({"extensions": {TASKS_EXTENSION: {}}});
        let meta = json!({
            super::super::META_PROTOCOL_VERSION: "2026-07-28",
            super::super::META_CLIENT_CAPABILITIES: caps,
        });
        for (method, extra) in [
            ("tasks/get", json!({})),
            ("tasks/update", json!({"inputResponses": {}})),
            ("tasks/cancel", json!({})),
        ] {
            let mut params = json!({"taskId": task_id, "_meta": meta});
            for (k, v) in extra.as_object().unwrap() {
                params[k] = v.clone();
            }
            let message = IncomingMessage::Request {
                id: RequestId::from(100),
                method: method.into(),
                params: params.as_object().cloned(),
            };
            let handled = c.engine.handle(&c.session, message, &c.sink);
            assert!(matches!(handled, Handled::Wait(_)), "{method}: {handled:?}");
            let answer = handled.into_message().await;
            assert!(
                answer
                    .as_ref()
                    .and_then(OutgoingMessage::result_value)
                    .is_some(),
                "{method}: {answer:?}"
            );
        }
        assert_eq!(c.get(&task_id).await["status"], "cancelled");
    });
}

/// The same for 2025-11-25 `tasks/get`, `tasks/cancel` and `tasks/result`, of a session without
/// a key (stdio): its tasks are named in their records by a key no other session has.
#[test]
fn experimental_tasks_methods_read_through_the_store_as_a_wait() {
    run(async {
        let e = engine(TaskConfig::default());
        let c = legacy(&e, json!({})).await;
        assert_eq!(c.session.key(), None);
        let created = c
            .request(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 60_000}, "task": {}}),
            )
            .await
            .unwrap();
        let task_id = created["task"]["taskId"].clone();
        for method in ["tasks/get", "tasks/cancel", "tasks/result"] {
            let message = IncomingMessage::Request {
                id: RequestId::from(100),
                method: method.into(),
                params: json!({"taskId": task_id}).as_object().cloned(),
            };
            let handled = c.engine.handle(&c.session, message, &c.sink);
            assert!(matches!(handled, Handled::Wait(_)), "{method}: {handled:?}");
            match handled.into_message().await {
                Some(m) if method != "tasks/result" && m.result_value().is_some() => {
                    let result = m.result_value().unwrap();
                    assert_eq!(result["taskId"], task_id, "{method}: {result}");
                }
                // Cancelled just before: no result.
                Some(OutgoingMessage::Error { error, .. }) if method == "tasks/result" => {
                    assert!(error.message.contains("cancelled"), "{error:?}");
                }
                other => panic!("{method}: {other:?}"),
            }
        }
        let message = IncomingMessage::Request {
            id: RequestId::from(101),
            method: "tasks/list".into(),
            params: None,
        };
        let handled = c.engine.handle(&c.session, message, &c.sink);
        assert!(
            matches!(handled, Handled::Wait(_)),
            "tasks/list: {handled:?}"
        );
        let Some(result) = handled
            .into_message()
            .await
            .as_ref()
            .and_then(OutgoingMessage::result_value)
        else {
            panic!("tasks/list answers")
        };
        assert_eq!(result["tasks"][0]["taskId"], task_id, "{result}");
        // Another keyless session of the same engine does not see it.
        let other = legacy(&e, json!({})).await;
        let err = other
            .request("tasks/get", json!({"taskId": task_id}))
            .await
            .unwrap_err();
        assert_eq!(err.code, -32602, "{err:?}");
        let none = other.request("tasks/list", json!({})).await.unwrap();
        assert_eq!(none["tasks"], json!([]), "{none}");
    });
}

/// Tokio's clock, with a wall clock that can jump.
struct JumpingWall(std::sync::atomic::AtomicU64);

impl TimeSource for JumpingWall {
    fn now(&self) -> Instant {
        crate::platform::testing::VirtualTime.now()
    }
    fn wall(&self) -> SystemTime {
        crate::platform::testing::VirtualTime.wall()
            + Duration::from_secs(self.0.load(Ordering::Relaxed))
    }
}

/// Task TTLs run on the monotonic clock: a wall clock that jumps past a running task's TTL
/// does not make its in-memory record expire (the live table removes it at its TTL).
#[test]
fn a_wall_clock_jump_does_not_expire_a_running_task() {
    run(async {
        let time = Arc::new(JumpingWall(std::sync::atomic::AtomicU64::new(0)));
        let cfg = McpServerConfig::default().with_rate_limit(None);
        let e = Engine::builder(cfg, task_registry())
            .time_source(time.clone())
            .build();
        let c = Client::new(&e);
        let created = c.call("slow", json!({"ms": 3_600_000})).await;
        let id = created["taskId"].clone();
        time.0.store(24 * 3600, Ordering::Relaxed);
        assert_eq!(c.get(&id).await["status"], "working");
    });
}

#[test]
fn discover_advertises_the_extension_when_a_tool_supports_tasks() {
    run(async {
        let c = Client::new(&engine(TaskConfig::default()));
        let d = c.modern("server/discover", json!({}), false).await.unwrap();
        assert_eq!(d["capabilities"]["extensions"][TASKS_EXTENSION], json!({}));
        assert!(d["capabilities"].get("tasks").is_none());
        let plain = Engine::new(McpServerConfig::default(), Arc::new(McpToolRegistry::new()));
        let d = Client::new(&plain)
            .modern("server/discover", json!({}), false)
            .await
            .unwrap();
        assert!(d["capabilities"].get("extensions").is_none(), "{d}");
        let e = Client::new(&plain)
            .modern("tasks/get", json!({"taskId": "x"}), true)
            .await
            .unwrap_err();
        assert_eq!(e.code, -32601, "no task tools, no tasks methods");
        // No `execution` on the 2026-07-28 tools/list.
        let list = c.modern("tools/list", json!({}), true).await.unwrap();
        assert!(
            list["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("execution").is_none())
        );
    });
}

// ----- 2025-11-25 -----

async fn legacy(engine: &Engine, capabilities: Value) -> Client {
    let c = Client::new(engine);
    let r = c
        .request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": capabilities}),
        )
        .await
        .unwrap();
    assert_eq!(
        r["capabilities"]["tasks"],
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
    );
    assert!(r["capabilities"].get("extensions").is_none());
    c
}

/// Polls a 2025-11-25 task until it waits for input (at most 500 polls, 10 ms apart).
async fn until_input_required(c: &Client, id: &Value) {
    for _ in 0..500 {
        let t = c.request("tasks/get", json!({"taskId": id})).await.unwrap();
        if t["status"] == "input_required" {
            break;
        }
        advance(Duration::from_millis(10)).await;
    }
}

/// A `tasks/result` request for the task `id`.
fn tasks_result(id: &Value) -> IncomingMessage {
    IncomingMessage::Request {
        id: RequestId::from(900),
        method: "tasks/result".into(),
        params: json!({"taskId": id}).as_object().cloned(),
    }
}

/// The client's answer to the elicitation `rid`: accepted, with `name`.
fn accepted(rid: RequestId, name: &str) -> IncomingMessage {
    IncomingMessage::Response {
        id: rid,
        result: json!({"action": "accept", "content": {"name": name}}),
    }
}

/// The result a reply carries.
fn result_value_of(reply: Option<OutgoingMessage>) -> Value {
    let Some(result) = reply.as_ref().and_then(OutgoingMessage::result_value) else {
        panic!("a result expected")
    };
    result
}

async fn legacy_terminal(c: &Client, id: &Value) -> Value {
    for _ in 0..500 {
        let t = c.request("tasks/get", json!({"taskId": id})).await.unwrap();
        if Status::Working.as_str() != t["status"] && t["status"] != "input_required" {
            return t;
        }
        advance(Duration::from_millis(10)).await;
    }
    panic!("no terminal status")
}

#[test]
fn experimental_2025_11_25_tasks() {
    run(async {
        let e = engine(TaskConfig::default());
        let c = legacy(&e, json!({})).await;
        let list = c.request("tools/list", json!({})).await.unwrap();
        let support = |name: &str| {
            list["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == name)
                .map(|t| t["execution"]["taskSupport"].clone())
                .unwrap()
        };
        assert_eq!(support("slow"), "optional");
        assert_eq!(support("required"), "required");
        assert_eq!(
            support("echo"),
            Value::Null,
            "forbidden is the default, left out"
        );
        let created = c
            .request(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 30}, "task": {"ttl": 60_000}}),
            )
            .await
            .unwrap();
        let task = &created["task"];
        assert_eq!(task["status"], "working", "{created}");
        assert_eq!(task["ttl"], 60_000);
        assert!(task["pollInterval"].is_u64() && task.get("ttlMs").is_none());
        assert!(created.get("resultType").is_none());
        let id = &task["taskId"];
        let got = c.request("tasks/get", json!({"taskId": id})).await.unwrap();
        assert_eq!(got["taskId"], *id);
        // tasks/result waits for the task: its 30 ms on the virtual clock.
        let result = advancing(
            Duration::from_millis(30),
            c.request("tasks/result", json!({"taskId": id})),
        )
        .await
        .expect("answered after 30 ms")
        .unwrap();
        assert_eq!(result["content"][0]["text"], "slept 30");
        assert_eq!(result["_meta"][META_RELATED_TASK]["taskId"], *id);
        assert_eq!(
            c.request("tasks/get", json!({"taskId": id})).await.unwrap()["status"],
            "completed"
        );
        let listed = c.request("tasks/list", json!({})).await.unwrap();
        assert_eq!(listed["tasks"][0]["taskId"], *id);
        let e2 = c
            .request("tasks/cancel", json!({"taskId": id}))
            .await
            .unwrap_err();
        assert_eq!(e2.code, -32602, "a terminal task cannot be cancelled");
        // Tool-level negotiation.
        let e2 = c
            .request("tools/call", json!({"name": "required"}))
            .await
            .unwrap_err();
        assert_eq!(e2.code, -32601);
        let e2 = c
            .request("tools/call", json!({"name": "echo", "task": {}}))
            .await
            .unwrap_err();
        assert_eq!(e2.code, -32601);
        // A running task is cancelled at once and reports it.
        let long = c
            .request(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 60_000}, "task": {}}),
            )
            .await
            .unwrap();
        let long_id = &long["task"]["taskId"];
        let cancelled = c
            .request("tasks/cancel", json!({"taskId": long_id}))
            .await
            .unwrap();
        assert_eq!(cancelled["status"], "cancelled");
        assert_eq!(
            c.request("tasks/result", json!({"taskId": long_id}))
                .await
                .unwrap_err()
                .code,
            -32602
        );
        // tasks/update is a 2026-07-28 method.
        assert_eq!(
            c.request("tasks/update", json!({"taskId": id, "inputResponses": {}}))
                .await
                .unwrap_err()
                .code,
            -32601
        );
        // Another session sees none of these tasks.
        let other = legacy(&e, json!({})).await;
        assert_eq!(
            other
                .request("tasks/get", json!({"taskId": id}))
                .await
                .unwrap_err()
                .code,
            -32602
        );
        assert_eq!(
            other.request("tasks/list", json!({})).await.unwrap()["tasks"],
            json!([])
        );
    });
}

#[test]
fn experimental_tasks_list_pages() {
    run(async {
        let cfg = McpServerConfig::default()
            .with_rate_limit(None)
            .with_page_size(2);
        let e = Engine::new(cfg, task_registry());
        let c = legacy(&e, json!({})).await;
        let mut ids = Vec::new();
        for _ in 0..3 {
            let r = c
                .request("tools/call", json!({"name": "instant", "task": {}}))
                .await
                .unwrap();
            ids.push(r["task"]["taskId"].clone());
        }
        let p1 = c.request("tasks/list", json!({})).await.unwrap();
        assert_eq!(p1["tasks"].as_array().unwrap().len(), 2);
        let p2 = c
            .request("tasks/list", json!({"cursor": p1["nextCursor"]}))
            .await
            .unwrap();
        assert_eq!(p2["tasks"][0]["taskId"], ids[2]);
        assert!(p2.get("nextCursor").is_none());
        let e2 = c
            .request("tasks/list", json!({"cursor": "zz"}))
            .await
            .unwrap_err();
        assert_eq!(e2.code, -32602);
    });
}

#[test]
fn experimental_tool_errors_fail_the_task() {
    run(async {
        let e = engine(TaskConfig::default());
        let c = legacy(&e, json!({})).await;
        let created = c
            .request("tools/call", json!({"name": "required", "task": {}}))
            .await
            .unwrap();
        let id = &created["task"]["taskId"];
        let done = legacy_terminal(&c, id).await;
        assert_eq!(done["status"], "failed");
        assert!(done["statusMessage"].as_str().unwrap().contains("always"));
        let result = c
            .request("tasks/result", json!({"taskId": id}))
            .await
            .unwrap();
        assert_eq!(result["isError"], true);
        let created = c
            .request("tools/call", json!({"name": "boom", "task": {}}))
            .await
            .unwrap();
        let e2 = advancing(
            Duration::from_millis(20),
            c.request("tasks/result", json!({"taskId": created["task"]["taskId"]})),
        )
        .await
        .expect("answered after the tool's 20 ms")
        .unwrap_err();
        assert_eq!(e2.code, -32603);
    });
}

#[test]
fn experimental_task_input_is_a_related_task_request() {
    run(async {
        let e = engine(TaskConfig::default());
        let c = legacy(&e, json!({"elicitation": {}})).await;
        let created = c
            .request("tools/call", json!({"name": "ask", "task": {}}))
            .await
            .unwrap();
        let id = created["task"]["taskId"].clone();
        // The request waits for a tasks/result reader.
        until_input_required(&c, &id).await;
        let capture = Arc::new(Capture::default());
        let sink: Arc<dyn MessageSink> = capture.clone();
        let message = tasks_result(&id);
        let handled = e.handle(&c.session, message, &sink);
        assert!(
            matches!(handled, Handled::Wait(_)),
            "tasks/result waits: {handled:?}"
        );
        let result = spawn(handled.into_message());
        idle().await;
        let request = lock(&capture.0)
            .first()
            .cloned()
            .expect("tasks/result relays the task's request");
        let OutgoingMessage::Request {
            id: rid,
            method,
            params,
        } = request
        else {
            panic!("a server-to-client request expected: {request:?}")
        };
        assert_eq!(method, "elicitation/create");
        assert_eq!(params["_meta"][META_RELATED_TASK]["taskId"], id);
        e.handle(&c.session, accepted(rid, "Grace"), &sink);
        let result = result_value_of(result.await);
        assert_eq!(result["content"][0]["text"], "confirmed by Grace");
        assert_eq!(result["_meta"][META_RELATED_TASK]["taskId"], id);
    });
}

/// Issue #27 item 1: a 2025-11-25 task that asks its client more than its relay holds,
/// with no `tasks/result` reading it, loses no request: each is either held for the stream
/// that attaches or refused at once (its `input` fails with `Unavailable`). Before the relay
/// was an `Outbound`, it held 64 and dropped the next request after the handler's queue had
/// taken it, so that request's `input` waited for an answer the client never heard of.
#[test]
fn a_task_that_asks_past_the_relays_bound_loses_no_request() {
    use crate::outbound::MAX_QUEUED;
    use std::sync::atomic::AtomicUsize;
    let asked = MAX_QUEUED + 3;
    let refused = Arc::new(AtomicUsize::new(0));
    let r = McpToolRegistry::new();
    let counted = refused.clone();
    add(
        &r,
        "ask_many",
        TaskSupport::Optional,
        move |_: Map<String, Value>, cx: ToolContext| {
            let counted = counted.clone();
            async move {
                let asks = (0..asked).map(|i| {
                    let (cx, counted) = (&cx, &counted);
                    async move {
                        let answer = cx.input(&format!("k{i}"), form()).await;
                        if matches!(answer, Err(ClientRequestError::Unavailable)) {
                            counted.fetch_add(1, Ordering::SeqCst);
                        }
                        answer
                    }
                });
                let answers = futures_util::future::join_all(asks).await;
                let ok = answers.iter().filter(|a| a.is_ok()).count();
                text(format!("{ok} answered"))
            }
        },
    );
    run(async move {
        let cfg = McpServerConfig::default().with_rate_limit(None);
        let e = Engine::new(cfg, Arc::new(r)).with_task_config(TaskConfig::default());
        let c = legacy(&e, json!({"elicitation": {}})).await;
        let created = c
            .request("tools/call", json!({"name": "ask_many", "task": {}}))
            .await
            .unwrap();
        let id = created["task"]["taskId"].clone();
        until_input_required(&c, &id).await;
        idle().await;
        let capture = Arc::new(Capture::default());
        let sink: Arc<dyn MessageSink> = capture.clone();
        let message = tasks_result(&id);
        let result = spawn(e.handle(&c.session, message, &sink).into_message());
        idle().await;
        let requests: Vec<RequestId> = lock(&capture.0)
            .iter()
            .filter_map(|m| match m {
                OutgoingMessage::Request { id, .. } => Some(id.clone()),
                _ => None,
            })
            .collect();
        let refused = refused.load(Ordering::SeqCst);
        assert_eq!(
            requests.len() + refused,
            asked,
            "{} relayed and {refused} refused of {asked} asked: the rest were lost",
            requests.len()
        );
        assert_eq!(
            requests.len(),
            MAX_QUEUED,
            "the relay holds up to its bound"
        );
        for rid in requests {
            e.handle(&c.session, accepted(rid, "Ada"), &sink);
        }
        let result = result_value_of(result.await);
        assert_eq!(
            result["content"][0]["text"],
            format!("{MAX_QUEUED} answered")
        );
    });
}

/// A 2025-11-25 task answered at once lets go of its request's stream (the HTTP transport
/// ends a JSON answer when its stream's last holder lets go): what it emits goes to its
/// relay, which holds no stream until a `tasks/result` attaches.
#[test]
fn an_experimental_task_lets_go_of_its_requests_stream() {
    run(async {
        let e = engine(TaskConfig::default());
        let c = legacy(&e, json!({"elicitation": {}})).await;
        let stream: Arc<dyn MessageSink> = Arc::new(Capture::default());
        let message = IncomingMessage::Request {
            id: RequestId::from(77),
            method: "tools/call".into(),
            params: json!({"name": "ask", "task": {}}).as_object().cloned(),
        };
        let reply = e.handle(&c.session, message, &stream).into_message().await;
        let id = reply
            .as_ref()
            .and_then(OutgoingMessage::result_value)
            .map(|r| r["task"]["taskId"].clone())
            .expect("the task");
        until_input_required(&c, &id).await;
        idle().await;
        assert_eq!(
            Arc::strong_count(&stream),
            1,
            "the waiting task still holds its request's stream"
        );
    });
}

#[test]
fn an_experimental_task_ends_with_its_session() {
    run(async {
        let e = engine(TaskConfig::default());
        let c = legacy(&e, json!({})).await;
        let created = c
            .request(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 600_000}, "task": {}}),
            )
            .await
            .unwrap();
        let id = created["task"]["taskId"].as_str().unwrap().to_owned();
        let entry = e.shared.tasks.store().get(&id).unwrap();
        drop(c);
        let deadline = crate::test_runtime::now() + Duration::from_secs(10);
        while e.shared.tasks.store().get(&id).is_some() {
            assert!(
                crate::test_runtime::now() < deadline,
                "the task outlived its session"
            );
            advance(Duration::from_millis(50)).await;
        }
        assert!(entry.cancel.is_cancelled());
        assert_eq!(entry.status(), Status::Cancelled);
    });
}

#[test]
fn earlier_revisions_have_no_tasks() {
    run(async {
        let e = engine(TaskConfig::default());
        let c = Client::new(&e);
        let r = c
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
            )
            .await
            .unwrap();
        assert!(r["capabilities"].get("tasks").is_none());
        let list = c.request("tools/list", json!({})).await.unwrap();
        assert!(
            list["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("execution").is_none())
        );
        // The parameter is ignored and required-task tools run.
        let r = advancing(
            Duration::from_millis(1),
            c.request(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 1}, "task": {}}),
            ),
        )
        .await
        .expect("answered after 1 ms")
        .unwrap();
        assert_eq!(r["content"][0]["text"], "slept 1");
        assert_eq!(
            c.request("tasks/get", json!({"taskId": "x"}))
                .await
                .unwrap_err()
                .code,
            -32601
        );
    });
}
