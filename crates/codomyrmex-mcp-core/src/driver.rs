//! The driver: the one place handler calls run, under the one execution policy, on any
//! [`Runtime`].
//!
//! The engine hands out handler calls as [`Invocation`] values and store reads as [`Wait`]s;
//! this module carries them out:
//!
//! 1. a permit of the invocation's admission, waited for cancellably;
//! 2. the work under its deadline (a [`Runtime::sleep_until`]), its cancellation token and
//!    the unwind guard ([`catch_unwind`]: the only place a handler's panic is caught), on the
//!    runtime's blocking pool when the invocation is blocking;
//! 3. what the work emits (progress, log messages, server-to-client requests and their
//!    cancels: its [`Outbound`] queue) drained to the request's stream after every poll of
//!    the work and once more after the work ended or was dropped, so before the outcome;
//! 4. the [`Outcome`] handed back, with the invocation's [`Job`], to the engine
//!    ([`JobHost::complete`], `Engine::complete(now, job, outcome)`), which words the reply.
//!
//! Task work answers before it ends ([`Detach`]): the driver sends the early answer and
//! spawns the rest. It also keeps the engine's one timer running while the engine has timers
//! ([`Timers`], quinn's `drive_timer`): a sleep re-armed to `poll_timeout`, firing
//! `handle_timeout` with the runtime's clock. A [`Wait`] runs under its deadline and the
//! unwind guard, with no permit: it is no handler call.
//!
//! The runtime is a small trait ([`Runtime`]: `now`, `sleep_until`, `spawn`,
//! `spawn_blocking`, after quinn's `runtime.rs`): the `codomyrmex-mcp` library implements it
//! on tokio and registers it as the default ([`DefaultRuntime`]); the core's tests implement
//! it on their virtual clock. Both run this code: there is no second driver.
//!
//! It is not a scheduler: the futures run on the task that awaits them (or, for blocking
//! handlers, on the runtime's blocking pool; for detached task work, on a spawned task).
//! `Handled` values (the engine's whole answer) are resolved by `Handled::drive`, which
//! calls [`run`] and [`run_wait`].

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use crate::invocation::{
    Admission, Detach, ErasedOutput, Failure, Invocation, InvocationParts, Job, JobHost, Outcome,
    Permit, Timers, Wait, Work,
};
use crate::outbound::Outbound;
use crate::platform::BoxFuture;
use crate::sync::CancellationToken;
use crate::util::catch_unwind;
use crate::wire::OutgoingMessage;

/// Work under the unwind guard: `Err(())` if it panicked.
pub type Guarded = BoxFuture<'static, Result<ErasedOutput, ()>>;

/// What the driver needs from an async runtime: a clock, a timer, a way to run a future beside
/// the caller's and a pool for work that blocks its thread. Object-safe; the driver holds it
/// as `&'static dyn Runtime`.
pub trait Runtime: Send + Sync + 'static {
    /// The monotonic time now, on the runtime's clock (a paused or virtual clock holds).
    fn now(&self) -> Instant;
    /// Resolves once the runtime's clock reaches `at`.
    fn sleep_until(&self, at: Instant) -> BoxFuture<'static, ()>;
    /// Runs `work` beside the caller, to its end; a runtime that cannot drops it (which
    /// cancels it) and says so.
    fn spawn(&self, work: BoxFuture<'static, ()>);
    /// Runs `work` to its end where blocking its thread stalls nothing else; `Err(())` if the
    /// runtime dropped it. A runtime with no such pool runs it inline.
    fn spawn_blocking(&self, work: Guarded) -> Guarded;
}

/// The runtime a program registers as the default (`inventory::submit!`); the
/// `codomyrmex-mcp` library registers its tokio one. The first registered wins.
pub struct DefaultRuntime(pub &'static dyn Runtime);

inventory::collect!(DefaultRuntime);

/// The registered default runtime, or [`NoRuntime`] when none is linked in.
pub fn default_runtime() -> &'static dyn Runtime {
    static DEFAULT: std::sync::OnceLock<&'static dyn Runtime> = std::sync::OnceLock::new();
    *DEFAULT.get_or_init(
        || match inventory::iter::<DefaultRuntime>.into_iter().next() {
            Some(r) => r.0,
            None => &NoRuntime,
        },
    )
}

/// The runtime of a program that links the core without a host: the default platform's
/// clock, no timer (a deadline never fires), nothing spawned (detached work is dropped, with
/// an error logged), blocking work inline.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRuntime;

impl Runtime for NoRuntime {
    fn now(&self) -> Instant {
        crate::platform::Platform::default_platform().time.now()
    }
    fn sleep_until(&self, _: Instant) -> BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
    fn spawn(&self, _: BoxFuture<'static, ()>) {
        tracing::error!("no runtime is linked in: background work was dropped");
    }
    fn spawn_blocking(&self, work: Guarded) -> Guarded {
        work
    }
}

/// Carries out one invocation on `rt` and returns what its host makes of the outcome (or, for
/// detached task work, the early answer). The outcome goes back to the engine through
/// [`JobHost::complete`] with the engine's `now`, the one way back in.
///
/// A plain function returning the future, the invocation taken apart first: an `async fn`
/// keeps its argument and the parts taken out of it both in its future, which every call
/// allocates.
pub fn run(
    rt: &'static dyn Runtime,
    invocation: Invocation,
) -> impl Future<Output = Option<OutgoingMessage>> + Send + 'static {
    let InvocationParts {
        deadline,
        cancel,
        blocking,
        admission,
        work,
        job,
        host,
        detach,
        timers,
        publish,
        outbound,
        ..
    } = invocation.into_parts();
    let policied = Policied {
        deadline,
        cancel,
        blocking,
        admission,
        work,
        outbound,
    };
    async move {
        if let Some(timers) = timers {
            keep_timer(rt, timers);
        }
        match detach {
            // The hot path: the policied work awaited in place, no box and no spawn.
            Detach::Never => {
                let outcome = policied.run(rt).await;
                complete(host, job, outcome)
            }
            Detach::Now(reply) => {
                rt.spawn(Box::pin(async move {
                    let outcome = policied.run(rt).await;
                    complete(host, job, outcome);
                }));
                if let Some(publish) = publish {
                    publish.await;
                }
                Some(reply)
            }
            Detach::OnFirstPending => {
                let mut running = Box::pin(policied.run(rt));
                let first = std::future::poll_fn(|cx| Poll::Ready(running.as_mut().poll(cx))).await;
                match first {
                    Poll::Ready(outcome) => complete(host, job, outcome),
                    Poll::Pending => {
                        let mut job = job;
                        let now = host.now();
                        let reply = host.clone().detach(now, &mut job);
                        rt.spawn(Box::pin(async move {
                            let outcome = running.await;
                            complete(host, job, outcome);
                        }));
                        if reply.is_some()
                            && let Some(publish) = publish
                        {
                            publish.await;
                        }
                        reply
                    }
                }
            }
        }
    }
}

/// `outcome` back to `host`, at its clock's `now`.
fn complete(host: Arc<dyn JobHost>, job: Job, outcome: Outcome) -> Option<OutgoingMessage> {
    let now = host.now();
    host.complete(now, job, outcome)
}

/// Carries out a wait that runs no handler: under its deadline on `rt`'s timer and the
/// unwind guard, with no permit; its outcome goes back to the engine as an invocation's does.
pub async fn run_wait(rt: &'static dyn Runtime, wait: Wait) -> Option<OutgoingMessage> {
    let Wait {
        work,
        deadline,
        job,
        host,
        ..
    } = wait;
    let outcome = match within(rt, deadline, catch_unwind(work)).await {
        Ok(r) => done(r),
        Err(failure) => Outcome::Failed(failure),
    };
    complete(host, job, outcome)
}

/// Runs `work` under the execution policy (a permit of `admission`, `deadline`, `cancel` and
/// the unwind guard; on `rt`'s blocking pool when `blocking`) and returns its outcome: the
/// policy of an invocation without its completion, for callers that want the typed output
/// (`McpToolRegistry::execute`).
pub(crate) async fn policied<T: Send + 'static>(
    rt: &'static dyn Runtime,
    deadline: Option<Duration>,
    cancel: CancellationToken,
    blocking: bool,
    admission: Admission,
    work: impl Future<Output = T> + Send + 'static,
) -> Result<T, Option<Failure>> {
    let work = crate::invocation::erase(work);
    let outcome = Policied {
        deadline,
        cancel,
        blocking,
        admission,
        work,
        outbound: Outbound::closed(),
    }
    .run(rt)
    .await;
    match outcome {
        Outcome::Done(out) => out
            .downcast::<T>()
            .map(|out| *out)
            .map_err(|_| Some(Failure::Panicked)),
        Outcome::Failed(failure) => Err(Some(failure)),
        Outcome::Cancelled => Err(None),
    }
}

/// A permit of `admission`, the driver's one way to take one: a free permit at once; when
/// the gate is full, waited for until `cancel` fires (`None`). Held while the work runs. The
/// gateway takes its upstream calls' permits here too.
pub async fn permit(admission: &Admission, cancel: &CancellationToken) -> Option<Permit> {
    if let Some(p) = admission.try_permit() {
        return Some(p);
    }
    let mut cancelled = pin!(cancel.cancelled());
    let mut permit = pin!(admission.permit());
    std::future::poll_fn(|cx| {
        if cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        permit.as_mut().poll(cx).map(Some)
    })
    .await
}

/// `work`'s output, or [`Failure::TimedOut`] once `deadline` has passed on `rt`'s clock
/// (dropping `work`): the deadline of a [`Wait`], and of the gateway's upstream calls.
pub async fn within<T>(
    rt: &'static dyn Runtime,
    deadline: Duration,
    work: impl Future<Output = T>,
) -> Result<T, Failure> {
    let mut work = pin!(work);
    let mut timer = sleep(rt, deadline);
    std::future::poll_fn(|cx| {
        if let Poll::Ready(out) = work.as_mut().poll(cx) {
            return Poll::Ready(Ok(out));
        }
        if timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(Failure::TimedOut(deadline)));
        }
        Poll::Pending
    })
    .await
}

/// A sleep of `by` on `rt`'s clock (forever, past the clock's range).
fn sleep(rt: &'static dyn Runtime, by: Duration) -> BoxFuture<'static, ()> {
    match rt.now().checked_add(by) {
        Some(at) => rt.sleep_until(at),
        None => Box::pin(std::future::pending()),
    }
}

/// The un-policied parts of an invocation.
struct Policied {
    deadline: Option<Duration>,
    cancel: CancellationToken,
    blocking: bool,
    admission: Admission,
    work: Work,
    /// What the work emits, drained to its stream after every poll of the work (and so
    /// before the outcome, and the answer, go back).
    outbound: Outbound,
}

impl Policied {
    /// The one execution policy: a permit (waited for cancellably), then the work under its
    /// deadline, its cancellation token and the unwind guard, checked in that order. (Not an
    /// `async fn`, which would keep `self` and its fields both in the future.)
    fn run(self, rt: &'static dyn Runtime) -> impl Future<Output = Outcome> + Send + 'static {
        let Self {
            deadline,
            cancel,
            blocking,
            admission,
            work,
            outbound,
        } = self;
        async move {
            if cancel.is_cancelled() {
                return Outcome::Cancelled;
            }
            let Some(_permit) = permit(&admission, &cancel).await else {
                return Outcome::Cancelled;
            };
            // Work that may block its thread goes to the runtime's pool; other work is polled
            // here, its unwind guard in this future.
            let mut guarded = if blocking {
                Guard::Pool(rt.spawn_blocking(Box::pin(catch_unwind(work))))
            } else {
                Guard::Here(catch_unwind(work))
            };
            // The deadline runs from here, before the work's first poll.
            let due = deadline.map(|limit| (limit, rt.now().checked_add(limit)));
            // The first poll of the work alone, once the token is seen uncancelled: a call that
            // ends at once, as most do, then never sets up a cancellation listener or a timer.
            if !cancel.is_cancelled() {
                let first = std::future::poll_fn(|cx| {
                    outbound.register(cx);
                    Poll::Ready(guarded.as_mut().poll(cx))
                })
                .await;
                outbound.drain();
                if let Poll::Ready(r) = first {
                    return done(r);
                }
            }
            let mut cancelled = pin!(cancel.cancelled());
            let mut timer = due.map(|(limit, at)| {
                let sleep = match at {
                    Some(at) => rt.sleep_until(at),
                    None => Box::pin(std::future::pending()),
                };
                (limit, sleep)
            });
            let outcome = std::future::poll_fn(|cx| {
                if cancelled.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Outcome::Cancelled);
                }
                // Woken by the work or by its queue (work emitting from another thread).
                outbound.register(cx);
                let polled = guarded.as_mut().poll(cx);
                outbound.drain();
                if let Poll::Ready(r) = polled {
                    return Poll::Ready(done(r));
                }
                if let Some((limit, sleep)) = timer.as_mut()
                    && sleep.as_mut().poll(cx).is_ready()
                {
                    cancel.cancel();
                    return Poll::Ready(Outcome::Failed(Failure::TimedOut(*limit)));
                }
                Poll::Pending
            })
            .await;
            // Work stopped (cancelled, timed out) emits the last of what it has to say as it is
            // dropped (a `notifications/cancelled` for a request it asked its client): drained
            // after the drop, before the outcome goes back.
            drop(guarded);
            outbound.drain();
            outcome
        }
    }
}

/// Work under the unwind guard: polled here, or on the runtime's blocking pool.
enum Guard {
    Here(crate::util::CatchUnwind<Work>),
    Pool(Guarded),
}

impl Guard {
    fn as_mut(
        &mut self,
    ) -> std::pin::Pin<&mut (dyn Future<Output = Result<ErasedOutput, ()>> + Send)> {
        match self {
            // `Work` is a box, so its guard is `Unpin`.
            Guard::Here(work) => {
                let work: std::pin::Pin<&mut crate::util::CatchUnwind<Work>> =
                    std::pin::Pin::new(work);
                work
            }
            Guard::Pool(work) => work.as_mut(),
        }
    }
}

/// The outcome of guarded work that ended.
fn done(r: Result<ErasedOutput, ()>) -> Outcome {
    match r {
        Ok(output) => Outcome::Done(output),
        Err(()) => Outcome::Failed(Failure::Panicked),
    }
}

/// Makes sure one timer task runs on `rt` for `timers` while they have anything due: armed
/// to `poll_timeout`, re-armed when the schedule changes, `handle_timeout` called with the
/// runtime's clock when it fires, and ended (releasing the claim) when nothing is due.
fn keep_timer(rt: &'static dyn Runtime, timers: Timers) {
    let Some(claim) = timers.claim() else {
        return;
    };
    rt.spawn(Box::pin(async move {
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
            let mut due = rt.sleep_until(at);
            let mut changed = pin!(schedule.changed());
            // Some(true): due; Some(false): the schedule changed; None: the engine is gone.
            let woke = std::future::poll_fn(|cx| {
                if due.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Some(true));
                }
                changed
                    .as_mut()
                    .poll(cx)
                    .map(|c| c.is_ok().then_some(false))
            })
            .await;
            match woke {
                Some(true) => timers.handle_timeout(rt.now()),
                Some(false) => {}
                None => return,
            }
        }
    }));
}
