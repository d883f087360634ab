//! The queue from a transport to the client's dispatch, bounded in messages and in bytes:
//! a message holds its share of [`MAX_INBOUND_BYTES`] until dispatch has handled it, so a
//! server whose messages pile up (while the client waits to write, say) cannot make the
//! queue hold more than that, however large each message is (up to the transports' own
//! bound, [`MAX_LINE`](super::MAX_LINE) or [`MAX_BODY`](super::http::MAX_BODY)).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use super::Inbound;

/// The most messages queued for dispatch.
const MAX_INBOUND_MESSAGES: usize = 256;
/// The most bytes of messages queued for dispatch (a larger message takes them all).
pub const MAX_INBOUND_BYTES: usize = 64 * 1024 * 1024;

/// A message and its share of the byte budget, given back when it is dropped.
pub(crate) struct Queued {
    pub(crate) item: Inbound,
    _share: OwnedSemaphorePermit,
}

/// The transport's end.
#[derive(Clone)]
pub(crate) struct InboundTx {
    tx: mpsc::Sender<Queued>,
    budget: Arc<Semaphore>,
}

/// Dispatch's end.
pub(crate) type InboundRx = mpsc::Receiver<Queued>;

/// A new queue.
pub(crate) fn channel() -> (InboundTx, InboundRx) {
    let (tx, rx) = mpsc::channel(MAX_INBOUND_MESSAGES);
    let budget = Arc::new(Semaphore::new(MAX_INBOUND_BYTES));
    (InboundTx { tx, budget }, rx)
}

impl InboundTx {
    /// Queues `item` once its bytes fit the budget; `Err` when dispatch has ended.
    pub(crate) async fn send(&self, item: Inbound) -> Result<(), ()> {
        let len = match &item {
            Inbound::Message(bytes) | Inbound::OnStream { bytes, .. } => bytes.len(),
            Inbound::Failed { message, .. } => message.len(),
        };
        // At least one, so that even empty messages count; at most the whole budget.
        let share = u32::try_from(len.clamp(1, MAX_INBOUND_BYTES)).unwrap_or(u32::MAX);
        let share = self
            .budget
            .clone()
            .acquire_many_owned(share)
            .await
            .map_err(|_| ())?;
        self.tx
            .send(Queued {
                item,
                _share: share,
            })
            .await
            .map_err(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Messages wait for bytes, not only for room: two messages of more than half the
    /// budget are never queued together; the second goes in once the first is handled.
    #[tokio::test]
    async fn the_queue_is_bounded_in_bytes() {
        let (tx, mut rx) = channel();
        let big = || Inbound::Message(vec![b' '; MAX_INBOUND_BYTES / 2 + 1]);
        tx.send(big()).await.unwrap();
        let second = tokio::spawn({
            let tx = tx.clone();
            async move { tx.send(big()).await }
        });
        tokio::task::yield_now().await;
        assert!(!second.is_finished(), "queued past the byte budget");
        let first = rx.recv().await.unwrap();
        assert!(!second.is_finished());
        drop(first);
        second.await.unwrap().unwrap();
        assert!(rx.recv().await.is_some());
        drop(rx);
        assert!(tx.send(big()).await.is_err(), "dispatch ended");
    }
}
