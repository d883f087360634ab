//! The execution policy: the one set of rules every handler invocation runs under.
//!
//! Tools, resource reads (static and templated), prompts, completers and task work are all
//! invoked through [`ExecutionPolicy`]:
//!
//! 1. **Admission** ([`ExecutionPolicy::admit`]), synchronously, while the engine handles the
//!    message: a slot in the session's [`Gate`] (at most `max_concurrent_requests` running plus
//!    `max_queued_requests` waiting; past that the request is refused at once with
//!    [`Refusal::Overloaded`]) and a rate-limit token ([`Refusal::RateLimited`]). Because the
//!    slot is taken before any future exists, a transport never holds more pending work than
//!    the gate admits, however fast requests arrive.
//! 2. **Execution** ([`ExecutionPolicy::run`]): a concurrency permit (waited for, cancellably),
//!    then the handler's future under its deadline, the request's cancellation token and an
//!    unwind guard. A panic becomes [`Failure::Panicked`], an overrun [`Failure::TimedOut`];
//!    either costs only that request.
//!
//! This is the runtime side of the sans-IO split: the engine decides *what* to invoke (kind,
//! name, deadline), this module is how a driver runs it. It is not where errors are worded:
//! each handler kind maps [`Refusal`] and [`Failure`] onto its own wire shape (a tool failure
//! result, or a JSON-RPC error).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use async_lock::{Semaphore, SemaphoreGuardArc};
use futures_util::FutureExt as _;

use crate::platform::Runtime;
use crate::platform::TimeSource;
use crate::sync::CancellationToken;

use super::limits::RateLimiter;
use crate::util::catch_unwind;

/// What kind of handler an invocation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HandlerKind {
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

/// The admission bound of one session (or of all stateless requests together): how many
/// handlers run at once, and how many more may wait for a turn.
#[derive(Debug)]
pub(crate) struct Gate {
    /// One per running handler.
    permits: Arc<Semaphore>,
    /// One per admitted handler, running or waiting.
    slots: Arc<Semaphore>,
}

impl Gate {
    /// A gate for `running` handlers at once (at least 1) and `waiting` more in line.
    pub(crate) fn new(running: usize, waiting: usize) -> Self {
        let running = running.clamp(1, usize::MAX / 4);
        let waiting = waiting.min(usize::MAX / 4);
        Self {
            permits: Arc::new(Semaphore::new(running)),
            slots: Arc::new(Semaphore::new(running + waiting)),
        }
    }
}

/// An admitted invocation: holds its slot in the [`Gate`] until dropped.
#[derive(Debug)]
pub(crate) struct Ticket {
    _slot: SemaphoreGuardArc,
    permits: Arc<Semaphore>,
}

/// Why an invocation was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Every running and waiting slot is taken.
    Overloaded,
    /// The rate limit is exhausted; a token is available after this long.
    RateLimited(Duration),
}

/// How an admitted invocation failed without producing its handler's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// It did not finish within its deadline and was cancelled.
    TimedOut(Duration),
    /// The handler panicked.
    Panicked,
}

/// The rules every handler invocation runs under. One per engine.
pub(crate) struct ExecutionPolicy {
    limiter: RateLimiter,
    /// The clock rate limits refill from.
    time: std::sync::Arc<dyn TimeSource>,
}

impl ExecutionPolicy {
    pub(crate) fn new(limiter: RateLimiter, time: std::sync::Arc<dyn TimeSource>) -> Self {
        Self { limiter, time }
    }

    /// Admits an invocation of `name` (a tool name, URI, prompt name, ...) into `gate`, or
    /// refuses it at once. Per-tool rate limits apply to tools and their tasks; the global
    /// limit to every kind.
    pub(crate) fn admit(
        &self,
        gate: &Gate,
        kind: HandlerKind,
        name: &str,
    ) -> Result<Ticket, Refusal> {
        let slot = gate.slots.try_acquire_arc().ok_or(Refusal::Overloaded)?;
        let now = self.time.now();
        let checked = match kind {
            HandlerKind::Tool | HandlerKind::Task => self.limiter.check(name, now),
            HandlerKind::Resource | HandlerKind::Prompt | HandlerKind::Completer => {
                self.limiter.check_global(now)
            }
        };
        checked.map_err(Refusal::RateLimited)?;
        Ok(Ticket {
            _slot: slot,
            permits: gate.permits.clone(),
        })
    }

    /// Runs `work` for an admitted invocation: waits for a permit, then runs it under
    /// `deadline` (none: unbounded here) and an unwind guard, with `runtime`'s timer and
    /// `time`'s clock. `None` when `cancel` fired first; on a timeout `cancel` is cancelled,
    /// so the handler's context sees it.
    pub(crate) async fn run<F: Future>(
        runtime: &dyn Runtime,
        time: &dyn TimeSource,
        ticket: Ticket,
        deadline: Option<Duration>,
        cancel: &CancellationToken,
        work: F,
    ) -> Option<Result<F::Output, Failure>> {
        if cancel.is_cancelled() {
            return None;
        }
        // A free permit is taken at once; only a full gate waits, cancellably.
        let _permit = match ticket.permits.try_acquire_arc() {
            Some(p) => p,
            None => futures_util::select_biased! {
                () = cancel.cancelled().fuse() => return None,
                p = ticket.permits.acquire_arc().fuse() => p,
            },
        };
        let guarded = catch_unwind(work).fuse();
        futures_util::pin_mut!(guarded);
        let outcome = match deadline {
            None => futures_util::select_biased! {
                () = cancel.cancelled().fuse() => return None,
                r = guarded => r,
            },
            Some(limit) => {
                let timer = runtime.sleep_until(time.now() + limit).fuse();
                futures_util::pin_mut!(timer);
                futures_util::select_biased! {
                    () = cancel.cancelled().fuse() => return None,
                    r = guarded => r,
                    () = timer => {
                        cancel.cancel();
                        return Some(Err(Failure::TimedOut(limit)));
                    }
                }
            }
        };
        Some(outcome.map_err(|()| Failure::Panicked))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::config::RateLimit;

    use crate::platform::testing::{TokioTestRuntime, TokioTime};

    fn policy(global: Option<RateLimit>) -> ExecutionPolicy {
        ExecutionPolicy::new(
            RateLimiter::new(global, HashMap::new()),
            std::sync::Arc::new(TokioTime),
        )
    }

    async fn run<F: Future>(
        ticket: Ticket,
        deadline: Option<Duration>,
        cancel: &CancellationToken,
        work: F,
    ) -> Option<Result<F::Output, Failure>> {
        ExecutionPolicy::run(
            &TokioTestRuntime,
            &TokioTime,
            ticket,
            deadline,
            cancel,
            work,
        )
        .await
    }

    #[tokio::test(start_paused = true)]
    async fn a_panic_and_an_overrun_cost_only_their_own_invocation() {
        let p = policy(None);
        let gate = Gate::new(1, 0);
        let cancel = CancellationToken::new();
        let t = p.admit(&gate, HandlerKind::Completer, "c").unwrap();
        let r: Option<Result<(), Failure>> = run(t, None, &cancel, async { panic!("boom") }).await;
        assert_eq!(r, Some(Err(Failure::Panicked)));

        let t = p.admit(&gate, HandlerKind::Prompt, "p").unwrap();
        let limit = Duration::from_secs(5);
        let r = run(t, Some(limit), &cancel, std::future::pending::<()>()).await;
        assert_eq!(r, Some(Err(Failure::TimedOut(limit))));
        assert!(cancel.is_cancelled(), "a timeout cancels the request");

        // The permit and slot came back both times.
        let cancel = CancellationToken::new();
        let t = p.admit(&gate, HandlerKind::Resource, "r").unwrap();
        let r = run(t, Some(limit), &cancel, async { 7 }).await;
        assert_eq!(r, Some(Ok(7)));
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_waiting_bound_admission_is_refused_at_once() {
        let p = policy(None);
        let gate = Gate::new(1, 1);
        let running = p.admit(&gate, HandlerKind::Tool, "t").unwrap();
        let waiting = p.admit(&gate, HandlerKind::Resource, "r").unwrap();
        assert_eq!(
            p.admit(&gate, HandlerKind::Prompt, "p").unwrap_err(),
            Refusal::Overloaded
        );
        // The waiting one runs once the running one is done, and a cancelled wait ends.
        let (release, hold) = tokio::sync::oneshot::channel::<()>();
        let cancel = CancellationToken::new();
        let first = tokio::spawn({
            let cancel = cancel.clone();
            async move { run(running, None, &cancel, hold).await }
        });
        tokio::task::yield_now().await;
        let other = CancellationToken::new();
        let second = tokio::spawn({
            let other = other.clone();
            async move { run(waiting, None, &other, async { 2 }).await }
        });
        tokio::task::yield_now().await;
        assert!(!second.is_finished(), "it waits for the permit");
        release.send(()).unwrap();
        assert!(matches!(first.await.unwrap(), Some(Ok(Ok(())))));
        assert_eq!(second.await.unwrap(), Some(Ok(2)));
        assert!(p.admit(&gate, HandlerKind::Prompt, "p").is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_for_a_permit_ends_when_the_request_is_cancelled() {
        let p = policy(None);
        let gate = Gate::new(1, 1);
        let _running = {
            let t = p.admit(&gate, HandlerKind::Tool, "t").unwrap();
            let _permit = t.permits.try_acquire_arc().unwrap();
            (t, _permit)
        };
        let waiting = p.admit(&gate, HandlerKind::Task, "t").unwrap();
        let cancel = CancellationToken::new();
        cancel.cancel();
        assert_eq!(run(waiting, None, &cancel, async { 1 }).await, None);
    }

    #[test]
    fn the_global_rate_limit_covers_every_kind() {
        let p = policy(Some(RateLimit {
            per_second: 0.0,
            burst: 2,
        }));
        let gate = Gate::new(8, 8);
        assert!(p.admit(&gate, HandlerKind::Completer, "c").is_ok());
        assert!(p.admit(&gate, HandlerKind::Resource, "r").is_ok());
        assert!(matches!(
            p.admit(&gate, HandlerKind::Prompt, "p"),
            Err(Refusal::RateLimited(_))
        ));
    }
}
