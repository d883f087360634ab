//! [`Invocation`]: a handler call as a value, the boundary between the engine and its driver.
//!
//! The engine decides *what* to run (which handler, under which deadline, cancelled by which
//! token, admitted by which [`Admission`]) and *what the outcome means* on the wire; it never
//! runs the handler itself. Every handler kind (tool, resource read, resource lister, prompt,
//! completer, task work) leaves `Engine::handle` as an `Invocation`; the driver
//! (`crate::driver`, on tokio through the library's `runtime::drive`, or on the tests' virtual
//! clock) carries it out:
//!
//! 1. wait for a permit of the admission ([`Admission::permit`]), cancellably;
//! 2. run [`InvocationParts::work`] under the deadline, the cancellation token and an unwind
//!    guard, on a blocking thread when [`Invocation::is_blocking`];
//! 3. hand the [`Outcome`], with the invocation's [`Job`], back to its [`JobHost`] (the
//!    engine's `Engine::complete(now, job, outcome)`), which returns the message to send.
//!
//! An invocation is inert: the handler's own future and data. It carries no closure from the
//! core and nothing that changes the engine's state when called; the outcome re-enters the
//! engine through one method that takes the time.
//!
//! This module is not a driver: it holds no timer, spawns nothing and catches no panic.

use std::any::Any;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_lock::{Semaphore, SemaphoreGuardArc};

use crate::outbound::Outbound;
use crate::platform::{BoxFuture, Timestamp};
use crate::sync::{CancellationToken, Changes};
use crate::wire::OutgoingMessage;

/// What kind of handler an invocation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandlerKind {
    /// A `tools/call`.
    Tool,
    /// A `resources/read`, of a static resource or a template.
    Resource,
    /// A `resources/list` page, when the registry's `ResourceLister`s are asked for it.
    ResourceList,
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

/// The output of a handler's future, type-erased; only the engine, given the invocation's
/// [`Job`], knows its type.
pub type ErasedOutput = Box<dyn Any + Send>;

/// The handler's own future, with no policy applied.
pub type Work = std::pin::Pin<Box<dyn Future<Output = ErasedOutput> + Send + 'static>>;

/// `work` as the driver runs it: its output boxed ([`ErasedOutput`]). A combinator rather
/// than an `async` block, which would keep `work` twice (as captured and as awaited), and
/// every call's work is allocated and copied whole.
pub(crate) fn erase<T: Send + 'static>(work: impl Future<Output = T> + Send + 'static) -> Work {
    use futures_util::FutureExt as _;
    Box::pin(work.map(|output| Box::new(output) as ErasedOutput))
}

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

/// An admission bound (of one session, of all stateless requests together, of a registry's
/// direct calls, of a gateway's upstream): how many invocations run at once, and how many
/// more may wait for a turn.
#[derive(Debug)]
pub struct Gate {
    /// One per running invocation.
    permits: Arc<Semaphore>,
    /// One per admitted invocation, running or waiting.
    slots: Arc<Semaphore>,
}

impl Gate {
    /// A gate for `running` invocations at once (at least 1) and `waiting` more in line.
    pub fn new(running: usize, waiting: usize) -> Self {
        let running = running.clamp(1, usize::MAX / 4);
        let waiting = waiting.min(usize::MAX / 4);
        Self {
            permits: Arc::new(Semaphore::new(running)),
            slots: Arc::new(Semaphore::new(running + waiting)),
        }
    }

    /// A place in the gate, running or waiting; `None` when every place is taken (refuse
    /// the call at once).
    pub fn try_admit(&self) -> Option<Admission> {
        Some(Admission {
            _slot: self.slots.try_acquire_arc()?,
            permits: self.permits.clone(),
        })
    }
}

/// An admitted invocation's place in its session's gate: it holds a waiting slot until
/// dropped, and gives out the permit to run.
#[derive(Debug)]
pub struct Admission {
    _slot: SemaphoreGuardArc,
    permits: Arc<Semaphore>,
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

/// What the engine needs, later, to word an invocation's outcome: the request's id, its
/// scope, its in-flight guard and round, as plain data (no closure, no future, no engine).
/// Opaque here; the driver hands it back with the outcome to the invocation's
/// [`JobHost`] ([`JobHost::complete`], the engine's `Engine::complete`).
pub struct Job(Box<dyn Any + Send>);

impl Job {
    pub(crate) fn new(data: impl Any + Send) -> Self {
        Self(Box::new(data))
    }

    /// The data, if it is a `T`.
    pub(crate) fn into_data<T: Any>(self) -> Option<T> {
        self.0.downcast::<T>().ok().map(|d| *d)
    }

    /// The data, if it is a `T`.
    pub(crate) fn data_mut<T: Any>(&mut self) -> Option<&mut T> {
        self.0.downcast_mut::<T>()
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job(..)")
    }
}

/// Where a job's outcome goes: the engine that handed the invocation out. The driver's one
/// way back into it; every state change an outcome causes happens inside these calls, at
/// the `now` the driver passes.
pub trait JobHost: Send + Sync + 'static {
    /// The host's clock, read once: the `now` an outcome is handled at.
    fn now(&self) -> Timestamp;
    /// Takes a job's outcome and returns the message to send, if any (`Engine::complete`).
    fn complete(
        self: Arc<Self>,
        now: Timestamp,
        job: Job,
        outcome: Outcome,
    ) -> Option<OutgoingMessage>;
    /// For [`Detach::OnFirstPending`]: the work waited at its first poll, so the job goes on
    /// in the background; returns the early answer (`Engine::detach`), if any.
    fn detach(self: Arc<Self>, now: Timestamp, job: &mut Job) -> Option<OutgoingMessage>;
}

/// When an invocation's answer goes out: after its work, or before it (task work, which runs
/// on in the background).
#[derive(Debug)]
pub enum Detach {
    /// The answer is what [`JobHost::complete`] returns once the work ends (every handler
    /// but task work).
    Never,
    /// Send this now and carry the work out in the background; its completion records the
    /// outcome and returns nothing to send (a 2025-11-25 task).
    Now(OutgoingMessage),
    /// Poll the policied work (permit wait included) once: if it is done, answer with its
    /// completion; if not, send what [`JobHost::detach`] returns and carry the rest out in
    /// the background (a 2026-07-28 call that may become a task).
    OnFirstPending,
}

/// What owns time-driven state (task TTLs, the orphan check) and exposes it quinn-style: the
/// earliest instant anything is due, and a call that fires what is due.
pub trait TimerHost: Send + Sync + 'static {
    /// The earliest instant [`handle_timeout`](Self::handle_timeout) has work, if any.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Fires everything due at `now`. A call with nothing due does nothing.
    fn handle_timeout(&self, now: Instant);
    /// Changes whenever [`poll_timeout`](Self::poll_timeout) may have moved earlier.
    fn schedule(&self) -> Changes;
}

/// A driver's handle on an engine's timers (held weakly: it keeps no engine alive). The
/// contract: at most one timer per engine ([`Timers::claim`]), re-armed to
/// [`Timers::poll_timeout`] whenever it fires or [`Timers::schedule`] changes, and
/// [`Timers::handle_timeout`] called with the driver's clock when it fires.
#[derive(Clone)]
pub struct Timers {
    host: Weak<dyn TimerHost>,
    armed: Arc<AtomicBool>,
}

impl std::fmt::Debug for Timers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timers")
            .field("armed", &self.armed.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// The one running timer of an engine; dropping it lets another be claimed.
#[derive(Debug)]
pub struct TimerClaim(Arc<AtomicBool>);

impl Drop for TimerClaim {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Timers {
    pub(crate) fn new(host: Weak<dyn TimerHost>, armed: Arc<AtomicBool>) -> Self {
        Self { host, armed }
    }

    /// The right to run this engine's timer, unless another driver task holds it.
    pub fn claim(&self) -> Option<TimerClaim> {
        self.armed
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| TimerClaim(self.armed.clone()))
    }

    /// The earliest instant anything is due; `None` when nothing is, or the engine is gone.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.host.upgrade()?.poll_timeout()
    }

    /// Fires what is due at `now`.
    pub fn handle_timeout(&self, now: Instant) {
        if let Some(host) = self.host.upgrade() {
            host.handle_timeout(now);
        }
    }

    /// Changes whenever the earliest instant may have moved earlier; `None` once the engine
    /// is gone.
    pub fn schedule(&self) -> Option<Changes> {
        Some(self.host.upgrade()?.schedule())
    }
}

/// What a driver awaits before it sends a detached invocation's early answer: the new task's
/// record written to a shared task store, so that every instance finds the task the client
/// is told about. A lazy future over the store alone: it does nothing until awaited, and is
/// dropped unawaited when no early answer goes out.
pub type Publish = BoxFuture<'static, ()>;

/// A wait that runs no user handler (a read of the task store, in-memory or shared, such as a
/// 2025-11-25 `tasks/result`) for a driver to carry out under a deadline: it takes no permit
/// and no rate-limit token (it is no handler call, and store reads must not starve
/// handlers), but it never waits unbounded. A driver runs [`work`](Self::work) under an
/// unwind guard and [`deadline`](Self::deadline), and hands the [`Outcome`] (the read, or
/// the [`Failure`]) back to [`host`](Self::host) with [`job`](Self::job), as it does an
/// invocation's. The work reads the store; it holds no engine and no session. Dropping it
/// cancels the wait.
#[non_exhaustive]
pub struct Wait {
    /// The read, type-erased; only the engine, given the job, knows its type.
    pub work: Work,
    /// The longest the wait may take.
    pub deadline: Duration,
    /// What the engine needs to word the answer.
    pub job: Job,
    /// The engine the outcome goes back to.
    pub host: Arc<dyn JobHost>,
}

impl Wait {
    pub(crate) fn new<T: Send + 'static>(
        work: impl Future<Output = T> + Send + 'static,
        deadline: Duration,
        job: Job,
        host: Arc<dyn JobHost>,
    ) -> Self {
        Self {
            work: erase(work),
            deadline,
            job,
            host,
        }
    }
}

impl std::fmt::Debug for Wait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wait")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
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
    job: Job,
    host: Arc<dyn JobHost>,
    detach: Detach,
    timers: Option<Timers>,
    publish: Option<Publish>,
    outbound: Outbound,
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
    /// What the engine needs to word the outcome: hand it back to `host` with the outcome.
    pub job: Job,
    /// The engine the outcome goes back to.
    pub host: Arc<dyn JobHost>,
    /// Whether the answer goes out before the work ends.
    pub detach: Detach,
    /// The engine's timers, when the work outlives its request (task work): the driver keeps
    /// one timer running for them.
    pub timers: Option<Timers>,
    /// Awaited before a detached invocation's early answer is sent, if any.
    pub publish: Option<Publish>,
    /// What the work emits (progress, log messages), queued: the driver drains it after
    /// every poll of `work` and before the outcome goes back.
    pub outbound: Outbound,
}

impl Invocation {
    /// An invocation of `work`, whose outcome `host` words with `job`
    /// ([`JobHost::complete`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new<T, F>(
        kind: HandlerKind,
        name: impl Into<String>,
        deadline: Option<Duration>,
        cancel: CancellationToken,
        admission: Admission,
        work: F,
        job: Job,
        host: Arc<dyn JobHost>,
    ) -> Self
    where
        T: Send + 'static,
        F: Future<Output = T> + Send + 'static,
    {
        let work = erase(work);
        Self {
            kind,
            name: name.into(),
            deadline,
            cancel,
            blocking: false,
            admission,
            work,
            job,
            host,
            detach: Detach::Never,
            timers: None,
            publish: None,
            outbound: Outbound::closed(),
        }
    }

    /// Has the driver drain `outbound` (what the work's context emits) to its stream.
    pub(crate) fn emitting(mut self, outbound: Outbound) -> Self {
        self.outbound = outbound;
        self
    }

    /// Answers before the work ends (task work), which then needs the engine's `timers`.
    pub(crate) fn detached(mut self, detach: Detach, timers: Timers) -> Self {
        self.detach = detach;
        self.timers = Some(timers);
        self
    }

    /// Has the driver await `publish` before it sends the early answer.
    pub(crate) fn publishing(mut self, publish: Option<Publish>) -> Self {
        self.publish = publish;
        self
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
            job: self.job,
            host: self.host,
            detach: self.detach,
            timers: self.timers,
            publish: self.publish,
            outbound: self.outbound,
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
            .field("detach", &self.detach)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    /// Every call's work is boxed by `erase` and copied whole into its allocation: it keeps
    /// the work once. An `async` block awaiting it kept it twice, as captured and as awaited.
    #[test]
    fn erased_work_keeps_the_work_once() {
        let payload = [7u8; 256];
        let work = async move { payload.iter().map(|&b| u32::from(b)).sum::<u32>() };
        let alone = std::mem::size_of_val(&work);
        let erased = super::erase(work);
        let size = std::mem::size_of_val(&*erased);
        assert!(
            size < alone + 64,
            "{alone} bytes of work take {size} erased"
        );
    }
}
