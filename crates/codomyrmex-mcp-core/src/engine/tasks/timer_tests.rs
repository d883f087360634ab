//! The tasks' time-driven state without a clock or a runtime: `Engine::poll_timeout` says when
//! something is due, and `Engine::handle_timeout(now)` is called with instants the test
//! chooses. Task work is an `Invocation` the test never runs.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use super::*;
use crate::config::McpServerConfig;
use crate::context::{MessageSink, NullSink};
use crate::engine::{Engine, Handled};
use crate::invocation::{Detach, HandlerKind, InvocationParts};
use crate::platform::FrozenTime;
use crate::registry::{
    McpToolRegistry, TaskSupport, ToolDefinition, ToolRegistration, ToolSettings,
};
use crate::wire::{IncomingMessage, OutgoingMessage, RequestId};

const TTL: Duration = Duration::from_secs(60);

fn engine(origin: Instant) -> Engine {
    let r = McpToolRegistry::new();
    let definition = ToolDefinition::new("slow", json!({"type": "object"}));
    let handler = |_: crate::schema::JsonObject| async {
        std::future::pending::<crate::registry::ToolOutput>().await
    };
    r.register_tool(
        ToolRegistration::new(definition, handler).with_settings(ToolSettings {
            task_support: TaskSupport::Optional,
            ..ToolSettings::default()
        }),
    )
    .unwrap();
    let config = McpServerConfig::default().with_rate_limit(None);
    Engine::builder(config, Arc::new(r))
        .task_config(TaskConfig {
            ttl: TTL,
            ..TaskConfig::default()
        })
        .time_source(Arc::new(FrozenTime::starting_at(
            origin,
            SystemTime::UNIX_EPOCH,
        )))
        .build()
}

fn request(e: &Engine, session: &Arc<Session>, id: i64, method: &str, params: Value) -> Handled {
    let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
    e.handle(
        session,
        IncomingMessage::Request {
            id: RequestId::from(id),
            method: method.into(),
            params: params.as_object().cloned(),
        },
        &sink,
    )
}

/// A 2025-11-25 session with one task created; the task's work is handed back unrun.
fn legacy_task(e: &Engine) -> (Arc<Session>, String, InvocationParts) {
    let session = e.new_session();
    let init = request(
        e,
        &session,
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
    );
    assert!(matches!(init, Handled::Reply(_)), "{init:?}");
    let Handled::Invoke(invocation) = request(
        e,
        &session,
        2,
        "tools/call",
        json!({"name": "slow", "arguments": {}, "task": {}}),
    ) else {
        panic!("task work is an invocation");
    };
    assert_eq!(invocation.kind(), HandlerKind::Task);
    let parts = invocation.into_parts();
    assert!(
        parts.timers.is_some(),
        "task work names the engine's timers"
    );
    let Detach::Now(OutgoingMessage::Response { result, .. }) = &parts.detach else {
        panic!("a 2025-11-25 task is answered at once: {:?}", parts.detach);
    };
    let id = result["task"]["taskId"].as_str().unwrap().to_owned();
    (session, id, parts)
}

#[test]
fn a_task_expires_when_handle_timeout_is_called_past_its_ttl() {
    let origin = crate::platform::test_origin();
    let e = engine(origin);
    assert_eq!(e.poll_timeout(), None, "nothing is due without tasks");
    let (_session, id, _work) = legacy_task(&e);
    // The orphan check comes first, then the TTL.
    assert_eq!(e.poll_timeout(), Some(origin + SESSION_CHECK));
    e.handle_timeout(origin + SESSION_CHECK);
    assert_eq!(e.poll_timeout(), Some(origin + SESSION_CHECK * 2));
    let entry = e
        .shared
        .tasks
        .store()
        .get(&id)
        .expect("still there before its TTL");
    e.handle_timeout(origin + TTL - Duration::from_millis(1));
    assert!(
        e.shared.tasks.store().get(&id).is_some(),
        "a spurious call is a no-op"
    );
    e.handle_timeout(origin + TTL);
    assert!(e.shared.tasks.store().get(&id).is_none(), "gone at its TTL");
    assert_eq!(entry.status(), Status::Failed);
    assert!(entry.cancel.is_cancelled(), "its work is told to stop");
    assert_eq!(
        e.poll_timeout(),
        None,
        "no task left: no timer, not even the orphan check"
    );
}

#[test]
fn a_task_whose_session_is_gone_stops_at_the_next_orphan_check() {
    let origin = crate::platform::test_origin();
    let e = engine(origin);
    let (session, id, work) = legacy_task(&e);
    let entry = e.shared.tasks.store().get(&id).unwrap();
    drop(work);
    e.handle_timeout(origin + SESSION_CHECK);
    assert!(
        e.shared.tasks.store().get(&id).is_some(),
        "its session is alive"
    );
    drop(session);
    e.handle_timeout(origin + SESSION_CHECK * 2);
    assert!(
        e.shared.tasks.store().get(&id).is_none(),
        "forgotten with its session"
    );
    assert!(entry.cancel.is_cancelled());
    assert_eq!(entry.status(), Status::Cancelled);
    assert_eq!(e.poll_timeout(), None);
}

#[test]
fn a_modern_task_is_due_at_its_ttl_only() {
    let origin = crate::platform::test_origin();
    let e = engine(origin);
    let session = e.new_stateless_session();
    let params = json!({"name": "slow", "arguments": {}, "_meta": {
        crate::engine::META_PROTOCOL_VERSION: "2026-07-28",
        crate::engine::META_CLIENT_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}},
    }});
    let Handled::Invoke(invocation) = request(&e, &session, 1, "tools/call", params) else {
        panic!("an invocation");
    };
    let mut parts = invocation.into_parts();
    let Detach::OnFirstPending = parts.detach else {
        panic!("a 2026-07-28 call becomes a task once it waits");
    };
    // The driver polled the work once and it waited: the answer is the task.
    let early = e.detach(e.now(), &mut parts.job);
    let Some(result) = early.as_ref().and_then(OutgoingMessage::result_value) else {
        panic!("CreateTaskResult expected");
    };
    assert_eq!(result["resultType"], "task");
    assert_eq!(e.poll_timeout(), Some(origin + TTL));
    e.handle_timeout(origin + TTL);
    assert_eq!(e.poll_timeout(), None);
}
