//! The core tests' driver: carries out what `Engine::handle` returns ([`Handled`]: replies,
//! [`Invocation`]s, [`Wait`]s, batches) on the tests' runtime ([`crate::test_runtime`]), as
//! the library's `runtime::drive` does on tokio, minus the blocking pool. Deadlines and the
//! engine's timers are waits on the virtual clock: they fire only when a test advances it.
//!
//! It is test code only, and not a second driver for programs: those use the library's.

use std::future::Future;
use std::pin::pin;
use std::task::Poll;
use std::time::Duration;

use super::Handled;
use crate::invocation::{
    Admission, Detach, Failure, Invocation, InvocationParts, Outcome, Timers, Wait, Work,
};
use crate::platform::BoxFuture;
use crate::sync::CancellationToken;
use crate::test_runtime::{sleep, sleep_until, spawn};
use crate::util::catch_unwind;
use crate::wire::OutgoingMessage;

impl Handled {
    /// Resolves to the message to send, carrying out any invocation.
    pub(crate) fn into_message(self) -> BoxFuture<'static, Option<OutgoingMessage>> {
        drive(self)
    }
}

/// Resolves `handled` to its message.
pub(crate) fn drive(handled: Handled) -> BoxFuture<'static, Option<OutgoingMessage>> {
    match handled {
        Handled::Nothing => Box::pin(std::future::ready(None)),
        Handled::Reply(m) => Box::pin(std::future::ready(Some(m))),
        Handled::Pending(work) => work,
        Handled::Invoke(invocation) => Box::pin(drive_invocation(invocation)),
        Handled::Wait(wait) => Box::pin(async move {
            let Wait {
                work,
                deadline,
                failed,
                ..
            } = wait;
            let mut work = pin!(catch_unwind(work));
            let mut timer = pin!(sleep(deadline));
            std::future::poll_fn(|cx| {
                if let Poll::Ready(done) = work.as_mut().poll(cx) {
                    return Poll::Ready(done.map_err(|()| Failure::Panicked));
                }
                if timer.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(Failure::TimedOut(deadline)));
                }
                Poll::Pending
            })
            .await
            .unwrap_or_else(failed)
        }),
        Handled::Batch(items) => Box::pin(async move {
            let mut out = Vec::new();
            for item in items {
                if let Some(m) = drive(item).await {
                    out.push(m);
                }
            }
            (!out.is_empty()).then_some(OutgoingMessage::Batch(out))
        }),
    }
}

/// Carries out `invocation`: its answer, or the early answer of detached task work (whose
/// rest runs on as a spawned task).
pub(crate) async fn drive_invocation(invocation: Invocation) -> Option<OutgoingMessage> {
    let InvocationParts {
        deadline,
        cancel,
        admission,
        work,
        complete,
        detach,
        timers,
        publish,
        ..
    } = invocation.into_parts();
    if let Some(timers) = timers {
        keep_timer(timers);
    }
    let mut finished =
        Box::pin(
            async move { complete.complete(policied(deadline, cancel, admission, work).await) },
        );
    match detach {
        Detach::Never => finished.await,
        Detach::Now(reply) => {
            spawn(finished);
            if let Some(publish) = publish {
                publish().await;
            }
            Some(reply)
        }
        Detach::OnFirstPending(early) => {
            match std::future::poll_fn(|cx| Poll::Ready(finished.as_mut().poll(cx))).await {
                Poll::Ready(m) => m,
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
    }
}

/// The execution policy of one invocation: the permit (cancellably), then the work under
/// the cancellation token, an unwind guard and the deadline (on the virtual clock), checked
/// in that order.
async fn policied(
    deadline: Option<Duration>,
    cancel: CancellationToken,
    admission: Admission,
    work: Work,
) -> Outcome {
    if cancel.is_cancelled() {
        return Outcome::Cancelled;
    }
    let _permit = match admission.try_permit() {
        Some(p) => p,
        None => {
            let mut cancelled = pin!(cancel.cancelled());
            let mut permit = pin!(admission.permit());
            let waited = std::future::poll_fn(|cx| {
                if cancelled.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(None);
                }
                permit.as_mut().poll(cx).map(Some)
            })
            .await;
            match waited {
                Some(p) => p,
                None => return Outcome::Cancelled,
            }
        }
    };
    let mut cancelled = pin!(cancel.cancelled());
    let mut work = pin!(catch_unwind(work));
    let mut timer = deadline.map(|d| Box::pin(sleep(d)));
    std::future::poll_fn(|cx| {
        if cancelled.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Outcome::Cancelled);
        }
        if let Poll::Ready(done) = work.as_mut().poll(cx) {
            return Poll::Ready(match done {
                Ok(output) => Outcome::Done(output),
                Err(()) => Outcome::Failed(Failure::Panicked),
            });
        }
        if let (Some(timer), Some(limit)) = (timer.as_mut(), deadline)
            && timer.as_mut().poll(cx).is_ready()
        {
            cancel.cancel();
            return Poll::Ready(Outcome::Failed(Failure::TimedOut(limit)));
        }
        Poll::Pending
    })
    .await
}

/// Keeps the engine's one timer running, as the library's driver does: armed to
/// `poll_timeout`, re-armed when the schedule changes, `handle_timeout` called with the
/// virtual clock when it fires, and ended (releasing the claim) when nothing is due.
fn keep_timer(timers: Timers) {
    let Some(claim) = timers.claim() else {
        return;
    };
    spawn(async move {
        let mut claim = Some(claim);
        loop {
            let Some(mut schedule) = timers.schedule() else {
                return;
            };
            let Some(at) = timers.poll_timeout() else {
                drop(claim.take());
                if timers.poll_timeout().is_some() {
                    claim = timers.claim();
                    if claim.is_some() {
                        continue;
                    }
                }
                return;
            };
            let mut due = pin!(sleep_until(at));
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
                Some(true) => timers.handle_timeout(crate::test_runtime::now()),
                Some(false) => {}
                None => return,
            }
        }
    });
}
