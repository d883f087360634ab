//! The driver: carries out what the engine hands out ([`Handled`]) on tokio.
//!
//! The engine returns handler calls as [`Invocation`] values; this module is the one place
//! they run, under the one execution policy: a permit of the invocation's admission (waited
//! for, cancellably), its deadline on tokio's timer, its cancellation token, an unwind guard,
//! and tokio's blocking pool for blocking handlers. The outcome goes back to the core's
//! completion, which words the reply. Transports call [`drive`] (or [`settle`]) and never
//! look inside an invocation.
//!
//! Task work answers before it ends ([`Detach`]): the driver sends the early answer and
//! spawns the rest on tokio. It also keeps the engine's one timer running while the engine
//! has timers ([`Timers`], quinn's `drive_timer`): a tokio sleep re-armed to
//! `poll_timeout`, firing `handle_timeout` with tokio's clock.
//!
//! A [`Wait`] (a task store's read) runs under its deadline and an unwind guard,
//! with no permit: it is no handler call.
//!
//! It is not a scheduler: the futures run on the task that awaits them (or, for blocking
//! handlers, on the blocking pool; for detached task work, on a spawned task).

use codomyrmex_mcp_core::engine::Handled;
use std::task::Poll;

use codomyrmex_mcp_core::invocation::{
    Admission, Detach, Failure, Invocation, InvocationParts, Outcome, Timers, Wait, Work,
};
use codomyrmex_mcp_core::platform::BoxFuture;
use codomyrmex_mcp_core::sync::CancellationToken;
use codomyrmex_mcp_core::util::catch_unwind;
use codomyrmex_mcp_core::wire::OutgoingMessage;

/// Resolves `handled` to the message to send, carrying out its invocations. Dropping the
/// future cancels the work.
pub fn drive(handled: Handled) -> BoxFuture<'static, Option<OutgoingMessage>> {
    match handled {
        Handled::Nothing => Box::pin(std::future::ready(None)),
        Handled::Reply(m) => Box::pin(std::future::ready(Some(m))),
        Handled::Pending(work) => work,
        Handled::Invoke(invocation) => Box::pin(run(invocation)),
        Handled::Wait(wait) => Box::pin(run_wait(wait)),
        Handled::Batch(items) => Box::pin(async move {
            let mut out = Vec::new();
            for item in items {
                if let Some(m) = drive(item).await {
                    out.push(m);
                }
            }
            (!out.is_empty()).then_some(OutgoingMessage::Batch(out))
        }),
        // A kind this driver does not know cannot be carried out; dropping it cancels it.
        #[allow(unreachable_patterns)]
        _ => Box::pin(std::future::ready(None)),
    }
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

/// Carries out one invocation and returns what its completion makes of the outcome (or,
/// for detached task work, the early answer).
pub async fn run(invocation: Invocation) -> Option<OutgoingMessage> {
    let InvocationParts {
        deadline,
        cancel,
        blocking,
        admission,
        work,
        complete,
        detach,
        timers,
        publish,
        ..
    } = invocation.into_parts();
    let policied = Policied {
        deadline,
        cancel,
        blocking,
        admission,
        work,
    };
    if let Some(timers) = timers {
        keep_timer(timers);
    }
    let mut finished = Box::pin(async move { complete.complete(policied.run().await) });
    match detach {
        Detach::Now(reply) => {
            spawn(finished);
            if let Some(publish) = publish {
                publish().await;
            }
            Some(reply)
        }
        Detach::OnFirstPending(early) => {
            let first = std::future::poll_fn(|cx| Poll::Ready(finished.as_mut().poll(cx))).await;
            match first {
                Poll::Ready(message) => message,
                Poll::Pending => {
                    let reply = early();
                    spawn(finished);
                    if reply.is_some()
                        && let Some(publish) = publish
                    {
                        publish().await;
                    }
                    reply
                }
            }
        }
        // `Never`, and any kind this driver does not know: the answer is the completion's.
        _ => finished.await,
    }
}

/// Carries out a wait that runs no handler: under its deadline on tokio's timer and an
/// unwind guard, with no permit.
async fn run_wait(wait: Wait) -> Option<OutgoingMessage> {
    let Wait {
        work,
        deadline,
        failed,
        ..
    } = wait;
    match tokio::time::timeout(deadline, catch_unwind(work)).await {
        Ok(Ok(message)) => message,
        Ok(Err(())) => failed(Failure::Panicked),
        Err(_) => failed(Failure::TimedOut(deadline)),
    }
}

/// The un-policied parts of an invocation.
struct Policied {
    deadline: Option<std::time::Duration>,
    cancel: CancellationToken,
    blocking: bool,
    admission: Admission,
    work: Work,
}

impl Policied {
    /// The one execution policy: a permit (waited for cancellably), then the work under its
    /// deadline, its cancellation token and an unwind guard.
    async fn run(self) -> Outcome {
        let Self {
            deadline,
            cancel,
            blocking,
            admission,
            work,
        } = self;
        if cancel.is_cancelled() {
            return Outcome::Cancelled;
        }
        // A free permit is taken at once; only a full gate waits, cancellably.
        let _permit = match admission.try_permit() {
            Some(p) => p,
            None => tokio::select! {
                biased;
                () = cancel.cancelled() => return Outcome::Cancelled,
                p = admission.permit() => p,
            },
        };
        let mut guarded: BoxFuture<'static, Result<_, ()>> = if blocking {
            Box::pin(on_blocking_pool(work))
        } else {
            Box::pin(catch_unwind(work))
        };
        // The deadline runs from here, before the work's first poll, as it always has.
        let timer = deadline.map(|limit| (limit, tokio::time::sleep(limit)));
        // The first poll of the work alone, once the token is seen uncancelled (what the biased
        // select below would do first): a call that ends at once, as most do, then never sets
        // up a cancellation listener (two allocations a call).
        if !cancel.is_cancelled()
            && let Poll::Ready(r) =
                std::future::poll_fn(|cx| Poll::Ready(guarded.as_mut().poll(cx))).await
        {
            return match r {
                Ok(output) => Outcome::Done(output),
                Err(()) => Outcome::Failed(Failure::Panicked),
            };
        }
        let done = match timer {
            None => tokio::select! {
                biased;
                () = cancel.cancelled() => return Outcome::Cancelled,
                r = &mut guarded => r,
            },
            Some((limit, sleep)) => tokio::select! {
                biased;
                () = cancel.cancelled() => return Outcome::Cancelled,
                r = &mut guarded => r,
                () = sleep => {
                    cancel.cancel();
                    return Outcome::Failed(Failure::TimedOut(limit));
                }
            },
        };
        match done {
            Ok(output) => Outcome::Done(output),
            Err(()) => Outcome::Failed(Failure::Panicked),
        }
    }
}

/// Runs `work` on the current tokio runtime; outside one, it is dropped (which cancels it).
fn spawn(work: impl std::future::Future<Output = Option<OutgoingMessage>> + Send + 'static) {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(work);
        }
        Err(_) => tracing::error!("task work outside a tokio runtime was dropped"),
    }
}

/// Makes sure one timer task runs for `timers` while they have anything due.
fn keep_timer(timers: Timers) {
    let Some(claim) = timers.claim() else {
        return;
    };
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::error!("engine timers outside a tokio runtime do not run");
        return;
    };
    handle.spawn(async move {
        let mut claim = Some(claim);
        loop {
            let Some(mut schedule) = timers.schedule() else {
                return;
            };
            let Some(at) = timers.poll_timeout() else {
                // Nothing due: let go, then look again, since a timer may have been added
                // while this one still held the claim.
                drop(claim.take());
                if timers.poll_timeout().is_some() {
                    claim = timers.claim();
                    if claim.is_some() {
                        continue;
                    }
                }
                return;
            };
            tokio::select! {
                () = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => {
                    timers.handle_timeout(tokio::time::Instant::now().into_std());
                }
                // An earlier timer may have been added: re-arm.
                changed = schedule.changed() => {
                    if changed.is_err() {
                        return;
                    }
                }
            }
        }
    });
}

/// Runs `work` to its end on tokio's blocking pool (inside the runtime's context, so it may use
/// tokio); `Err(())` if it panicked or the runtime dropped it. Outside a runtime, inline.
async fn on_blocking_pool<T: Send + 'static>(work: BoxFuture<'static, T>) -> Result<T, ()> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            let inner = handle.clone();
            let join = tokio::task::spawn_blocking(move || inner.block_on(catch_unwind(work)));
            join.await.map_err(|_| ()).and_then(|r| r)
        }
        Err(_) => catch_unwind(work).await,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;
    use crate::context::{MessageSink, NullSink};
    use crate::engine::{Engine, TaskConfig};
    use crate::registry::{TaskSupport, ToolDefinition, ToolRegistration, ToolSettings};
    use crate::resources::{Completer, ResourceTemplateDefinition};
    use crate::wire::{IncomingMessage, RequestId};
    use crate::{McpResourceRegistry, McpServerConfig, McpToolRegistry, ToolOutput};

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
        let hang =
            |_: crate::schema::JsonObject| async { std::future::pending::<ToolOutput>().await };
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
                |_: crate::resources::ResourceRequest| async { Ok(Vec::new()) },
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
                    |_: crate::schema::JsonObject| async { ToolOutput::content(Vec::new()) },
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
