//! The driver: carries out what the engine hands out ([`Handled`]) on tokio.
//!
//! The engine returns handler calls as [`Invocation`] values; this module is the one place
//! they run, under the one execution policy: a permit of the invocation's admission (waited
//! for, cancellably), its deadline on tokio's timer, its cancellation token, an unwind guard,
//! and tokio's blocking pool for blocking handlers. The outcome goes back to the core's
//! completion, which words the reply. Transports call [`drive`] (or [`settle`]) and never
//! look inside an invocation.
//!
//! It is not a scheduler: the futures run on the task that awaits them (or, for blocking
//! handlers, on the blocking pool).

use codomyrmex_mcp_core::engine::Handled;
use codomyrmex_mcp_core::invocation::{Failure, Invocation, InvocationParts, Outcome};
use codomyrmex_mcp_core::platform::BoxFuture;
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

/// Carries out one invocation and returns what its completion makes of the outcome.
pub async fn run(invocation: Invocation) -> Option<OutgoingMessage> {
    let InvocationParts {
        deadline,
        cancel,
        blocking,
        admission,
        work,
        complete,
        ..
    } = invocation.into_parts();
    let outcome = 'run: {
        if cancel.is_cancelled() {
            break 'run Outcome::Cancelled;
        }
        // A free permit is taken at once; only a full gate waits, cancellably.
        let _permit = match admission.try_permit() {
            Some(p) => p,
            None => tokio::select! {
                biased;
                () = cancel.cancelled() => break 'run Outcome::Cancelled,
                p = admission.permit() => p,
            },
        };
        let guarded: BoxFuture<'static, Result<_, ()>> = if blocking {
            Box::pin(on_blocking_pool(work))
        } else {
            Box::pin(catch_unwind(work))
        };
        let done = match deadline {
            None => tokio::select! {
                biased;
                () = cancel.cancelled() => break 'run Outcome::Cancelled,
                r = guarded => r,
            },
            Some(limit) => tokio::select! {
                biased;
                () = cancel.cancelled() => break 'run Outcome::Cancelled,
                r = guarded => r,
                () = tokio::time::sleep(limit) => {
                    cancel.cancel();
                    break 'run Outcome::Failed(Failure::TimedOut(limit));
                }
            },
        };
        match done {
            Ok(output) => Outcome::Done(output),
            Err(()) => Outcome::Failed(Failure::Panicked),
        }
    };
    complete.complete(outcome)
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
