//! The driver's tokio runtime: the core's driver ([`codomyrmex_mcp_core::driver`]) carries out
//! what the engine hands out ([`Handled`]) under the one execution policy; this module gives
//! it tokio's clock, timer, `spawn` and blocking pool ([`Tokio`]), registers that as the
//! core's default runtime, and exposes the entry points transports call ([`drive`],
//! [`settle`], [`Drive`]). Transports never look inside an invocation.
//!
//! It is not a driver of its own: the permit, deadline, unwind guard and timer loop are the
//! core's, the same code the core's tests run on their virtual clock.

use std::time::Instant;

use codomyrmex_mcp_core::driver::{DefaultRuntime, Guarded, Runtime};
use codomyrmex_mcp_core::engine::Handled;
use codomyrmex_mcp_core::platform::BoxFuture;
use codomyrmex_mcp_core::wire::OutgoingMessage;

/// The tokio runtime the caller is in, as the driver's [`Runtime`]: tokio's clock (a paused
/// test clock holds) and timer, `spawn` and `spawn_blocking` on the current runtime (outside
/// one, spawned work is dropped with an error logged and blocking work runs inline).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tokio;

/// The one [`Tokio`] runtime the driver runs on.
pub static TOKIO: Tokio = Tokio;

inventory::submit! { DefaultRuntime(&TOKIO) }

impl Runtime for Tokio {
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn sleep_until(&self, at: Instant) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep_until(tokio::time::Instant::from_std(at)))
    }

    fn spawn(&self, work: BoxFuture<'static, ()>) {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(work);
            }
            Err(_) => tracing::error!("work outside a tokio runtime was dropped"),
        }
    }

    /// On tokio's blocking pool, inside the runtime's context (so the work may use tokio).
    fn spawn_blocking(&self, work: Guarded) -> Guarded {
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                let inner = handle.clone();
                let join = handle.spawn_blocking(move || inner.block_on(work));
                Box::pin(async move { join.await.map_err(|_| ()).and_then(|r| r) })
            }
            Err(_) => work,
        }
    }
}

/// Resolves `handled` to the message to send, carrying out its invocations on [`Tokio`].
/// Dropping the future cancels the work.
pub fn drive(handled: Handled) -> BoxFuture<'static, Option<OutgoingMessage>> {
    handled.drive(&TOKIO)
}

/// `handled` with its invocations turned into [`Handled::Pending`] futures that carry them
/// out: what transports matched on before the engine handed out invocations.
pub fn settle(handled: Handled) -> Handled {
    match handled {
        h @ (Handled::Nothing | Handled::Reply(_) | Handled::Pending(_)) => h,
        other => Handled::Pending(drive(other)),
    }
}

/// [`drive`] as a method: `engine.handle(..).into_message().await`.
pub trait Drive {
    /// Resolves to the message to send, carrying out any invocation.
    fn into_message(self) -> BoxFuture<'static, Option<OutgoingMessage>>;
}

impl Drive for Handled {
    fn into_message(self) -> BoxFuture<'static, Option<OutgoingMessage>> {
        drive(self)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;
    use crate::engine::{Engine, TaskConfig};
    use crate::wire::{IncomingMessage, RequestId};
    use crate::{Completer, ResourceTemplateDefinition};
    use crate::{McpResourceRegistry, McpServerConfig, McpToolRegistry, ToolOutput};
    use crate::{MessageSink, NullSink};
    use crate::{TaskSupport, ToolDefinition, ToolRegistration, ToolSettings};

    fn request(id: i64, method: &str, params: Value) -> IncomingMessage {
        IncomingMessage::Request {
            id: RequestId::from(id),
            method: method.into(),
            params: params.as_object().cloned(),
        }
    }

    fn result(m: Option<OutgoingMessage>) -> Result<Value, Value> {
        match m {
            Some(OutgoingMessage::Error { error, .. }) => Err(json!(error.message)),
            Some(m) if m.result_value().is_some() => Ok(m.result_value().unwrap()),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_drivers_timer_expires_a_task_at_its_ttl() {
        let tools = McpToolRegistry::new();
        let hang = |_: crate::JsonObject| async { std::future::pending::<ToolOutput>().await };
        tools
            .register_tool(
                ToolRegistration::new(ToolDefinition::new("hang", json!({"type": "object"})), hang)
                    .with_settings(ToolSettings {
                        task_support: TaskSupport::Optional,
                        ..ToolSettings::default()
                    }),
            )
            .unwrap();
        let ttl = Duration::from_secs(5);
        let engine = Engine::builder(
            McpServerConfig::default().with_rate_limit(None),
            Arc::new(tools),
        )
        .task_config(TaskConfig {
            ttl,
            ..TaskConfig::default()
        })
        .build();
        let session = engine.new_session();
        let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}});
        result(drive(engine.handle(&session, request(1, "initialize", init), &sink)).await)
            .unwrap();
        let call = json!({"name": "hang", "arguments": {}, "task": {}});
        let created =
            result(drive(engine.handle(&session, request(2, "tools/call", call), &sink)).await)
                .unwrap();
        let id = created["task"]["taskId"].clone();
        let get = |n| request(n, "tasks/get", json!({"taskId": id}));
        let status = result(drive(engine.handle(&session, get(3), &sink)).await).unwrap();
        assert_eq!(status["status"], "working");
        // Virtual time: the driver's one timer fires at the TTL, nobody calls the engine.
        tokio::time::sleep(ttl + Duration::from_secs(1)).await;
        assert_eq!(engine.poll_timeout(), None, "nothing left to time");
        let gone = result(drive(engine.handle(&session, get(4), &sink)).await);
        assert!(gone.is_err(), "expired and removed: {gone:?}");
    }

    #[tokio::test]
    async fn a_completer_runs_off_the_runtimes_thread() {
        let ran_on = Arc::new(Mutex::new(None));
        let completer: Completer = {
            let ran_on = ran_on.clone();
            Arc::new(move |_: &str, _: &BTreeMap<String, String>| {
                *ran_on.lock().unwrap() = Some(std::thread::current().id());
                vec!["x".into()]
            })
        };
        let resources = McpResourceRegistry::new();
        resources
            .add_template(
                ResourceTemplateDefinition::new("mem://{x}", "t"),
                |_: crate::ResourceRequest| async { Ok(Vec::new()) },
                BTreeMap::from([("x".to_owned(), completer)]),
            )
            .unwrap();
        let engine = Engine::builder(
            McpServerConfig::default().with_rate_limit(None),
            Arc::new(McpToolRegistry::new()),
        )
        .resources(Arc::new(resources))
        .build();
        let session = engine.new_session();
        let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}});
        result(drive(engine.handle(&session, request(1, "initialize", init), &sink)).await)
            .unwrap();
        let complete = json!({"ref": {"type": "ref/resource", "uri": "mem://{x}"},
                              "argument": {"name": "x", "value": ""}});
        let done = result(
            drive(engine.handle(&session, request(2, "completion/complete", complete), &sink))
                .await,
        )
        .unwrap();
        assert_eq!(done["completion"]["values"], json!(["x"]));
        let ran_on = ran_on.lock().unwrap().expect("the completer ran");
        assert_ne!(ran_on, std::thread::current().id(), "on the blocking pool");
    }

    /// A shared task store that never answers.
    #[derive(Debug)]
    struct Silent;

    impl crate::task_store::TaskStore for Silent {
        fn put(
            &self,
            _: crate::task_store::TaskRecord,
        ) -> crate::task_store::TaskStoreFuture<'_, bool> {
            Box::pin(std::future::pending())
        }
        fn get<'a>(
            &'a self,
            _: &'a str,
            _: u64,
        ) -> crate::task_store::TaskStoreFuture<'a, Option<crate::task_store::TaskRecord>> {
            Box::pin(std::future::pending())
        }
        fn cancel<'a>(
            &'a self,
            _: &'a str,
            _: u64,
        ) -> crate::task_store::TaskStoreFuture<'a, Option<crate::task_store::TaskRecord>> {
            Box::pin(std::future::pending())
        }
        fn deliver<'a>(
            &'a self,
            _: &'a str,
            _: serde_json::Map<String, Value>,
        ) -> crate::task_store::TaskStoreFuture<'a, bool> {
            Box::pin(std::future::pending())
        }
        fn renew<'a>(
            &'a self,
            _: &'a [String],
            _: u64,
        ) -> crate::task_store::TaskStoreFuture<'a, crate::task_store::Renewal> {
            Box::pin(std::future::pending())
        }
        fn list<'a>(
            &'a self,
            _: &'a str,
            _: u64,
        ) -> crate::task_store::TaskStoreFuture<'a, Vec<crate::task_store::TaskRecord>> {
            Box::pin(std::future::pending())
        }
        fn changed<'a>(&'a self, _: &'a str, _: u64) -> crate::task_store::TaskStoreFuture<'a, ()> {
            Box::pin(std::future::pending())
        }
    }

    /// A read of a shared store that never answers is answered `-32000` at the store's lease,
    /// on tokio's (paused) timer: the driver carries out the engine's `Wait`.
    #[tokio::test(start_paused = true)]
    async fn a_store_read_that_never_answers_ends_at_its_deadline() {
        let tools = McpToolRegistry::new();
        tools
            .register_tool(
                ToolRegistration::new(
                    ToolDefinition::new("t", json!({"type": "object"})),
                    |_: crate::JsonObject| async { ToolOutput::content(Vec::new()) },
                )
                .with_settings(ToolSettings {
                    task_support: TaskSupport::Optional,
                    ..ToolSettings::default()
                }),
            )
            .unwrap();
        let lease = Duration::from_secs(10);
        let engine = Engine::builder(
            McpServerConfig::default().with_rate_limit(None),
            Arc::new(tools),
        )
        .task_store(Arc::new(Silent), "a", lease)
        .build();
        let sink: Arc<dyn MessageSink> = Arc::new(NullSink);
        let get = json!({"taskId": "0".repeat(32), "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities":
                {"extensions": {crate::engine::TASKS_EXTENSION: {}}},
        }});
        let handled = engine.handle(
            &engine.new_stateless_session(),
            request(1, "tasks/get", get),
            &sink,
        );
        let answer = tokio::time::timeout(10 * lease, drive(handled))
            .await
            .expect("answered, not left waiting");
        let Some(OutgoingMessage::Error { error, .. }) = answer else {
            panic!("not an error: {answer:?}");
        };
        assert_eq!(error.code, -32000, "{error:?}");
        assert!(
            error.message.contains("within 10000 ms"),
            "the lease: {error:?}"
        );
    }
}
