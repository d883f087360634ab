//! Graceful shutdown of the requests a server is running: how many calls are in flight, and
//! the end of the grace period, when each of them is answered with a JSON-RPC error
//! ([`ErrorCode::SHUTTING_DOWN`]) on its own response (the POST's JSON body or its SSE
//! stream) instead of a cut connection.
//!
//! It does not stop accepting connections or end never-ending streams; the server loop
//! ([`super::HttpServer::serve`]) does that.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;

use tokio_util::sync::CancellationToken;

use crate::engine::Handled;
use crate::wire::{ErrorCode, ErrorObject, OutgoingMessage, RequestId};

/// The in-flight calls of one server and the end of their grace period.
#[derive(Debug, Default)]
pub(crate) struct Drain {
    /// Cancelled when the grace period is over.
    calls_end: CancellationToken,
    /// Calls being worked on.
    in_flight: AtomicUsize,
}

/// Counts one call as in flight while it lives.
struct InFlight<'a>(&'a Drain);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Drain {
    /// Calls being worked on now.
    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Ends the grace period: every watched call still running is dropped (which cancels
    /// it) and answered with a shutting-down error.
    pub(crate) fn end_calls(&self) {
        self.calls_end.cancel();
    }

    /// What `handled` comes to, or a shutting-down error for `id` if the grace period ends
    /// first. A call that finishes at its first poll is done before anything is counted: only
    /// one that waits is counted in flight, in the count every call shares (a write that
    /// moves the count between the workers' caches). It borrows the drain: nothing is
    /// cloned for it.
    pub(crate) fn answer(
        &self,
        id: RequestId,
        handled: Handled,
    ) -> impl Future<Output = Option<OutgoingMessage>> + Send + '_ {
        let mut work = crate::runtime::drive(handled);
        async move {
            if let Poll::Ready(m) = futures_util::poll!(work.as_mut()) {
                return m;
            }
            self.in_flight.fetch_add(1, Ordering::Relaxed);
            let _counted = InFlight(self);
            tokio::select! {
                biased;
                m = work => m,
                () = self.calls_end.cancelled() => Some(shutting_down(id)),
            }
        }
    }

    /// [`answer`](Self::answer) as a `Handled` of its own, for a response that outlives the
    /// request's borrow of the server (a stream): `handled` itself when it needs no driving.
    pub(crate) fn watch(self: &Arc<Self>, id: RequestId, handled: Handled) -> Handled {
        match handled {
            h @ (Handled::Nothing | Handled::Reply(_)) => h,
            work => {
                let drain = self.clone();
                Handled::Pending(Box::pin(async move { drain.answer(id, work).await }))
            }
        }
    }
}

/// The error a call gets when the server stops before it finished.
fn shutting_down(id: RequestId) -> OutgoingMessage {
    OutgoingMessage::Error {
        id: Some(id),
        error: ErrorObject::new(
            ErrorCode::SHUTTING_DOWN,
            "Server is shutting down: the request was cancelled",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Drive as _;

    fn seven() -> RequestId {
        RequestId::Number(7.into())
    }

    fn is_shutting_down(m: Option<OutgoingMessage>) {
        let Some(OutgoingMessage::Error { id, error }) = m else {
            panic!("not an error: {m:?}")
        };
        assert_eq!(id, Some(seven()));
        assert_eq!(error.code, ErrorCode::SHUTTING_DOWN.0);
    }

    /// A call that never finishes.
    fn never_ending() -> Handled {
        Handled::Pending(Box::pin(std::future::pending()))
    }

    /// `answer`, still running, is counted in flight; when the grace ends it is answered with
    /// the shutting-down error and no longer counted.
    async fn ends_with_the_grace(
        drain: &Drain,
        answer: impl Future<Output = Option<OutgoingMessage>>,
    ) {
        tokio::pin!(answer);
        assert!(futures_util::poll!(answer.as_mut()).is_pending());
        assert_eq!(drain.in_flight(), 1);
        drain.end_calls();
        is_shutting_down(answer.await);
        assert_eq!(drain.in_flight(), 0);
    }

    #[tokio::test]
    async fn a_call_still_running_when_the_grace_ends_gets_an_error() {
        let drain = Drain::default();
        ends_with_the_grace(&drain, drain.answer(seven(), never_ending())).await;
    }

    #[tokio::test]
    async fn a_watched_call_still_running_when_the_grace_ends_gets_an_error() {
        let drain = Arc::new(Drain::default());
        let answer = drain.watch(seven(), never_ending()).into_message();
        ends_with_the_grace(&drain, answer).await;
    }

    #[tokio::test]
    async fn a_call_that_finishes_at_its_first_poll_is_never_counted() {
        let drain = Arc::new(Drain::default());
        let watching = drain.clone();
        let work = std::future::poll_fn(move |_| {
            // Counted calls: none, even while this one runs.
            assert_eq!(watching.in_flight(), 0);
            Poll::Ready(None)
        });
        assert_eq!(
            drain
                .answer(seven(), Handled::Pending(Box::pin(work)))
                .await,
            None
        );
        assert_eq!(drain.in_flight(), 0);
    }
}
