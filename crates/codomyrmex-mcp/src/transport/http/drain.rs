//! Graceful shutdown of the requests a server is running: how many calls are in flight, and
//! the end of the grace period, when each of them is answered with a JSON-RPC error
//! ([`ErrorCode::SHUTTING_DOWN`]) on its own response (the POST's JSON body or its SSE
//! stream) instead of a cut connection.
//!
//! It does not stop accepting connections or end never-ending streams; the server loop
//! ([`super::HttpServer::serve`]) does that.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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
struct InFlight(Arc<Drain>);

impl Drop for InFlight {
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

    /// `handled`, counted as in flight while pending and answered with a shutting-down error
    /// for `id` if the grace period ends first.
    pub(crate) fn watch(self: &Arc<Self>, id: RequestId, handled: Handled) -> Handled {
        let handled = crate::runtime::settle(handled);
        let Handled::Pending(work) = handled else {
            return handled;
        };
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        let guard = InFlight(self.clone());
        Handled::Pending(Box::pin(async move {
            let _guard = guard;
            tokio::select! {
                biased;
                m = work => m,
                () = _guard.0.calls_end.cancelled() => Some(shutting_down(id)),
            }
        }))
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

    #[tokio::test]
    async fn a_call_still_running_when_the_grace_ends_gets_an_error() {
        let drain = Arc::new(Drain::default());
        let handled = drain.watch(
            RequestId::Number(7.into()),
            Handled::Pending(Box::pin(std::future::pending())),
        );
        assert_eq!(drain.in_flight(), 1);
        drain.end_calls();
        let m = handled.into_message().await;
        let Some(OutgoingMessage::Error { id, error }) = m else {
            panic!("not an error: {m:?}")
        };
        assert_eq!(id, Some(RequestId::Number(7.into())));
        assert_eq!(error.code, ErrorCode::SHUTTING_DOWN.0);
        assert_eq!(drain.in_flight(), 0);
    }
}
