//! The way back in: [`Engine::complete`] and [`Engine::detach`], which take an invocation's
//! outcome (with the [`Job`] the engine handed out beside its work) at a `now`, and the
//! [`Continuation`] each job carries as plain data.
//!
//! An [`Invocation`](crate::invocation::Invocation) holds no closure from the engine: what
//! the engine needs later (the request's id, scope, in-flight guard, round) travels as a
//! `Continuation` value, and every state change its outcome causes happens here, inside an
//! engine method that receives the time.

use std::sync::Arc;

use super::mrtr::RoundTrip;
use super::policy::Failure;
use super::session::InFlight;
use super::tasks::{StoreRead, TaskEnd, TaskJob};
use super::{Engine, RequestScope, Shared};
use crate::invocation::{Job, JobHost, Outcome};
use crate::platform::Timestamp;
use crate::registry::RegisteredTool;
use crate::wire::{OutgoingMessage, RequestId};

/// A request's multi round-trip round (2026-07-28) and the principal its `requestState` is
/// bound to; `None` in the 2025-11-25 era.
pub(super) struct Round {
    pub(super) trip: Arc<RoundTrip>,
    pub(super) principal: Option<String>,
}

/// What the engine needs to word an invocation's outcome, per handler kind. Data only.
pub(super) enum Continuation {
    /// A `tools/call`.
    Tool {
        id: RequestId,
        tool: Arc<RegisteredTool>,
        name: String,
        scope: RequestScope,
        round: Option<Round>,
        guard: InFlight,
    },
    /// A `resources/read`.
    Resource {
        id: RequestId,
        uri: String,
        scope: RequestScope,
        round: Option<Round>,
        guard: InFlight,
    },
    /// A `resources/list` page asked of the listers.
    ResourceList {
        id: RequestId,
        scope: RequestScope,
        guard: InFlight,
    },
    /// A `prompts/get`.
    Prompt {
        id: RequestId,
        name: String,
        scope: RequestScope,
        round: Option<Round>,
        guard: InFlight,
    },
    /// A `completion/complete`.
    Completer {
        id: RequestId,
        scope: RequestScope,
        guard: InFlight,
    },
    /// A `tools/call` that is, or may become, a task.
    Task(Box<TaskJob>),
    /// A `tasks/*` request's read of the task store (a [`Wait`](crate::invocation::Wait)).
    Store(Box<StoreRead>),
}

impl Continuation {
    /// As the opaque job an invocation carries.
    pub(super) fn into_job(self) -> Job {
        Job::new(self)
    }
}

/// The typed output of a handler's outcome: `Err(None)` when it was cancelled.
pub(super) fn output<T: 'static>(outcome: Outcome) -> Result<T, Option<Failure>> {
    match outcome {
        Outcome::Done(out) => match out.downcast::<T>() {
            Ok(out) => Ok(*out),
            Err(_) => {
                tracing::error!("a driver completed an invocation with another's output");
                Err(Some(Failure::Panicked))
            }
        },
        Outcome::Failed(failure) => Err(Some(failure)),
        Outcome::Cancelled => Err(None),
    }
}

impl Engine {
    /// Where the outcomes of the invocations this engine hands out go: this engine (a
    /// reference count, no allocation).
    pub(super) fn host(&self) -> Arc<dyn JobHost> {
        self.shared.clone()
    }

    /// Takes the outcome of an invocation this engine handed out, with its `job`, at `now`,
    /// and returns the message to send, if any: the one way an outcome re-enters the engine
    /// (the driver calls it). `None` for a cancelled request, and for task work that ends
    /// after its answer went out (its outcome is recorded in the task).
    pub fn complete(&self, now: Timestamp, job: Job, outcome: Outcome) -> Option<OutgoingMessage> {
        let Some(continuation) = job.into_data::<Continuation>() else {
            tracing::error!("a driver completed a job that is not an engine job");
            return None;
        };
        match continuation {
            Continuation::Tool {
                id,
                tool,
                name,
                scope,
                round,
                guard,
            } => {
                let _guard = guard;
                self.finish_tool_call(now, id, &tool, &name, &scope, round, output(outcome))
            }
            Continuation::Resource {
                id,
                uri,
                scope,
                round,
                guard,
            } => {
                let _guard = guard;
                self.finish_read(now, id, &uri, &scope, round, output(outcome))
            }
            Continuation::ResourceList { id, scope, guard } => {
                let _guard = guard;
                self.finish_resource_list(id, &scope, output(outcome))
            }
            Continuation::Prompt {
                id,
                name,
                scope,
                round,
                guard,
            } => {
                let _guard = guard;
                self.finish_prompt(now, id, &name, &scope, round, output(outcome))
            }
            Continuation::Completer { id, scope, guard } => {
                let _guard = guard;
                self.finish_completion(id, &scope, output(outcome))
            }
            Continuation::Task(task) => {
                let TaskEnd {
                    id,
                    tool,
                    name,
                    scope,
                    round,
                    output,
                } = self
                    .shared
                    .tasks
                    .finish(*task, output(outcome), &self.shared.results)?;
                // Ended before it became a task: answered as the call it still was.
                Some(
                    match self.round_outcome(now, "tools/call", &name, round.as_ref()) {
                        Some(input_required) => {
                            self.shared.results.respond(id, input_required, &scope)
                        }
                        None => self
                            .shared
                            .results
                            .tool_response(id, &tool, &name, output, &scope),
                    },
                )
            }
            Continuation::Store(read) => {
                self.shared
                    .tasks
                    .finish_store_read(now, *read, outcome, &self.shared.results)
            }
        }
    }

    /// For an invocation detached on its first pending poll
    /// ([`Detach::OnFirstPending`](crate::invocation::Detach::OnFirstPending)): its work
    /// waited, so it goes on in the background; the early answer (a 2026-07-28
    /// `CreateTaskResult`), if any. The driver then runs the rest and hands the outcome to
    /// [`complete`](Self::complete) with the same `job`.
    pub fn detach(&self, _now: Timestamp, job: &mut Job) -> Option<OutgoingMessage> {
        match job.data_mut::<Continuation>() {
            Some(Continuation::Task(task)) => self.shared.tasks.detach(task, &self.shared.results),
            _ => None,
        }
    }
}

impl JobHost for Shared {
    fn now(&self) -> Timestamp {
        Timestamp::of(self.platform.time.as_ref())
    }

    fn complete(
        self: Arc<Self>,
        now: Timestamp,
        job: Job,
        outcome: Outcome,
    ) -> Option<OutgoingMessage> {
        Engine { shared: self }.complete(now, job, outcome)
    }

    fn detach(self: Arc<Self>, now: Timestamp, job: &mut Job) -> Option<OutgoingMessage> {
        Engine { shared: self }.detach(now, job)
    }
}
