//! [`Invocation`]: a handler call as a value, the boundary between the engine and its driver.
//!
//! The engine decides *what* to run (which handler, under which deadline, cancelled by which
//! token, admitted by which [`Admission`]) and *what the outcome means* on the wire; it never
//! runs the handler itself. Every handler kind (tool, resource read, prompt, completer, task
//! work) leaves `Engine::handle` as an `Invocation`; a driver (the library's
//! `runtime::drive`, or a test's) carries it out:
//!
//! 1. wait for a permit of the admission ([`Admission::permit`]), cancellably;
//! 2. run [`InvocationParts::work`] under the deadline, the cancellation token and an unwind
//!    guard, on a blocking thread when [`Invocation::is_blocking`];
//! 3. hand the [`Outcome`] to [`Completion::complete`], a pure function from the core that
//!    returns the message to send.
//!
//! This module is not a driver: it holds no timer, spawns nothing and catches no panic.

use std::any::Any;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_lock::{Semaphore, SemaphoreGuardArc};

use crate::sync::CancellationToken;
use crate::wire::OutgoingMessage;

/// What kind of handler an invocation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandlerKind {
    /// A `tools/call`.
    Tool,
    /// A `resources/read`, of a static resource or a template.
    Resource,
    /// A `prompts/get`.
    Prompt,
    /// A `completion/complete`, for a prompt argument or a template variable.
    Completer,
    /// The background work of a task-augmented `tools/call`.
    Task,
}

/// How an admitted invocation failed without producing its handler's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// It did not finish within its deadline and was cancelled.
    TimedOut(Duration),
    /// The handler panicked.
    Panicked,
}

/// The output of a handler's future, type-erased; only the invocation's own [`Completion`]
/// knows its type.
pub type ErasedOutput = Box<dyn Any + Send>;

/// The handler's own future, with no policy applied.
pub type Work = std::pin::Pin<Box<dyn Future<Output = ErasedOutput> + Send + 'static>>;

/// How a driver's run of an invocation ended.
#[derive(Debug)]
pub enum Outcome {
    /// The handler finished with this output.
    Done(ErasedOutput),
    /// The handler panicked or overran its deadline.
    Failed(Failure),
    /// The request was cancelled before the handler finished (or before it started).
    Cancelled,
}

/// An admitted invocation's place in its session's gate: it holds a waiting slot until
/// dropped, and gives out the permit to run.
#[derive(Debug)]
pub struct Admission {
    pub(crate) _slot: SemaphoreGuardArc,
    pub(crate) permits: Arc<Semaphore>,
}

/// Permission to run: one of the gate's `max_concurrent_requests`, held while the handler
/// runs.
#[derive(Debug)]
pub struct Permit(#[allow(dead_code)] SemaphoreGuardArc);

impl Admission {
    /// A free permit, if one is free now.
    pub fn try_permit(&self) -> Option<Permit> {
        self.permits.try_acquire_arc().map(Permit)
    }

    /// Waits for a permit.
    pub async fn permit(&self) -> Permit {
        Permit(self.permits.acquire_arc().await)
    }
}

/// The core's continuation of an invocation: turns its [`Outcome`] into the message to send.
pub struct Completion(Box<dyn FnOnce(Outcome) -> Option<OutgoingMessage> + Send>);

impl Completion {
    /// The message `outcome` answers with, if any. Pure: it touches only the engine's state.
    pub fn complete(self, outcome: Outcome) -> Option<OutgoingMessage> {
        (self.0)(outcome)
    }
}

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Completion(..)")
    }
}

/// One handler call for a driver to carry out. Dropping it drops the work, which cancels the
/// request.
pub struct Invocation {
    kind: HandlerKind,
    name: String,
    deadline: Option<Duration>,
    cancel: CancellationToken,
    blocking: bool,
    admission: Admission,
    work: Work,
    complete: Completion,
}

/// An [`Invocation`] taken apart by its driver.
pub struct InvocationParts {
    /// The handler kind.
    pub kind: HandlerKind,
    /// The deadline to run `work` under (`None`: none here).
    pub deadline: Option<Duration>,
    /// Fires when the request is cancelled; the driver cancels it on a timeout, so the
    /// handler's context sees it.
    pub cancel: CancellationToken,
    /// Whether `work` may block its thread (run it on a blocking pool).
    pub blocking: bool,
    /// The invocation's place in its gate.
    pub admission: Admission,
    /// The handler's own future, with no policy applied.
    pub work: Work,
    /// What turns the outcome into the message to send.
    pub complete: Completion,
}

impl Invocation {
    /// An invocation of `work`, whose typed output `complete` maps (with a failure or a
    /// cancellation) onto the message to send.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new<T, F, C>(
        kind: HandlerKind,
        name: impl Into<String>,
        deadline: Option<Duration>,
        cancel: CancellationToken,
        admission: Admission,
        work: F,
        complete: C,
    ) -> Self
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
        C: FnOnce(Result<T, Option<Failure>>) -> Option<OutgoingMessage> + Send + 'static,
    {
        let work: Work = Box::pin(async move { Box::new(work.await) as ErasedOutput });
        let complete = Completion(Box::new(move |outcome| match outcome {
            Outcome::Done(out) => match out.downcast::<T>() {
                Ok(out) => complete(Ok(*out)),
                Err(_) => {
                    tracing::error!("a driver completed an invocation with another's output");
                    complete(Err(Some(Failure::Panicked)))
                }
            },
            Outcome::Failed(failure) => complete(Err(Some(failure))),
            Outcome::Cancelled => complete(Err(None)),
        }));
        Self {
            kind,
            name: name.into(),
            deadline,
            cancel,
            blocking: false,
            admission,
            work,
            complete,
        }
    }

    /// Marks the work as blocking its thread (run on a blocking pool).
    pub(crate) fn blocking(mut self, blocking: bool) -> Self {
        self.blocking = blocking;
        self
    }

    /// The handler kind.
    pub fn kind(&self) -> HandlerKind {
        self.kind
    }

    /// What is invoked: a tool or prompt name, a resource URI, a completion target.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The deadline the work runs under, if any.
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// The request's cancellation token.
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Whether the work may block its thread.
    pub fn is_blocking(&self) -> bool {
        self.blocking
    }

    /// The parts a driver works with.
    pub fn into_parts(self) -> InvocationParts {
        InvocationParts {
            kind: self.kind,
            deadline: self.deadline,
            cancel: self.cancel,
            blocking: self.blocking,
            admission: self.admission,
            work: self.work,
            complete: self.complete,
        }
    }
}

impl std::fmt::Debug for Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Invocation")
            .field("kind", &self.kind)
            .field("name", &self.name)
            .field("deadline", &self.deadline)
            .field("blocking", &self.blocking)
            .finish_non_exhaustive()
    }
}

/// The core tests' driver of one invocation, on tokio's test runtime (the paused clock).
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::util::catch_unwind;

    /// Carries out one invocation on tokio (the paused test clock).
    pub(crate) async fn drive_invocation(invocation: Invocation) -> Option<OutgoingMessage> {
        let InvocationParts {
            deadline,
            cancel,
            admission,
            work,
            complete,
            ..
        } = invocation.into_parts();
        let outcome = 'run: {
            if cancel.is_cancelled() {
                break 'run Outcome::Cancelled;
            }
            let _permit = match admission.try_permit() {
                Some(p) => p,
                None => tokio::select! {
                    biased;
                    () = cancel.cancelled() => break 'run Outcome::Cancelled,
                    p = admission.permit() => p,
                },
            };
            let guarded = catch_unwind(work);
            let limit = deadline.unwrap_or(std::time::Duration::MAX);
            let done = tokio::select! {
                biased;
                () = cancel.cancelled() => break 'run Outcome::Cancelled,
                r = guarded => r,
                () = tokio::time::sleep(limit), if deadline.is_some() => {
                    cancel.cancel();
                    break 'run Outcome::Failed(Failure::TimedOut(limit));
                }
            };
            match done {
                Ok(output) => Outcome::Done(output),
                Err(()) => Outcome::Failed(Failure::Panicked),
            }
        };
        complete.complete(outcome)
    }
}
