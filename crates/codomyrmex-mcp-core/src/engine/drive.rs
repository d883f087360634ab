//! [`Handled`] resolved to the message to send, by the driver ([`crate::driver`]) on a
//! [`Runtime`]: replies as they are, invocations and waits carried out, batches in order.
//!
//! It is not a second driver: the policy, the timer and the unwind guard are the driver's.

use super::Handled;
use crate::driver::{self, Runtime};
use crate::platform::BoxFuture;
use crate::wire::OutgoingMessage;

impl Handled {
    /// Resolves to the message to send, carrying out any invocation on `rt`. Dropping the
    /// future cancels the work.
    pub fn drive(self, rt: &'static dyn Runtime) -> BoxFuture<'static, Option<OutgoingMessage>> {
        match self {
            Handled::Nothing => Box::pin(std::future::ready(None)),
            Handled::Reply(m) => Box::pin(std::future::ready(Some(m))),
            Handled::Pending(work) => work,
            Handled::Invoke(invocation) => Box::pin(driver::run(rt, invocation)),
            Handled::Wait(wait) => Box::pin(driver::run_wait(rt, wait)),
            Handled::Batch(items) => Box::pin(async move {
                let mut out = Vec::new();
                for item in items {
                    if let Some(m) = item.drive(rt).await {
                        out.push(m);
                    }
                }
                (!out.is_empty()).then_some(OutgoingMessage::Batch(out))
            }),
        }
    }
}

/// The virtual-clock runtime ([`crate::test_runtime`]), for the driver: the core's tests run
/// the shipped driver on it. No blocking pool: blocking work runs inline.
#[cfg(test)]
pub(crate) struct TestRuntime;

#[cfg(test)]
impl Runtime for TestRuntime {
    fn now(&self) -> std::time::Instant {
        crate::test_runtime::now()
    }
    fn sleep_until(&self, at: std::time::Instant) -> BoxFuture<'static, ()> {
        Box::pin(crate::test_runtime::sleep_until(at))
    }
    fn spawn(&self, work: BoxFuture<'static, ()>) {
        drop(crate::test_runtime::spawn(work));
    }
    fn spawn_blocking(&self, work: driver::Guarded) -> driver::Guarded {
        work
    }
}

#[cfg(test)]
impl Handled {
    /// Resolves to the message to send, on the shipped driver with the virtual clock.
    pub(crate) fn into_message(self) -> BoxFuture<'static, Option<OutgoingMessage>> {
        self.drive(&TestRuntime)
    }
}
