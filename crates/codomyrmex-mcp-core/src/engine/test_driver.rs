//! The core tests' driver: carries out [`Invocation`](crate::invocation::Invocation)s on tokio's test runtime, as the
//! library's `runtime::drive` does, so the engine tests can await a [`Handled`].

use super::Handled;
use crate::invocation::testing::drive_invocation;
use crate::platform::BoxFuture;
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
            let crate::invocation::Wait {
                work,
                deadline,
                failed,
                ..
            } = wait;
            match tokio::time::timeout(deadline, crate::util::catch_unwind(work)).await {
                Ok(Ok(m)) => m,
                Ok(Err(())) => failed(crate::invocation::Failure::Panicked),
                Err(_) => failed(crate::invocation::Failure::TimedOut(deadline)),
            }
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
