//! [`Outbound`]: what a running handler emits towards its client (progress and log
//! notifications), queued as [`OutgoingMessage`] values for the driver to drain, and the
//! [`MessageSink`] a transport gives for a request's stream, which the drain writes to.
//!
//! A handler's context never writes to the transport: [`ToolContext::progress`] and
//! [`ToolContext::log`] put a value in the request's queue, and the driver
//! (`driver.rs`) takes them out with [`Outbound::poll_outbound`] after every poll of the
//! handler's work, and once more before it hands the outcome back. So what a call emits
//! before its answer is on its stream before the answer. Work that emits from elsewhere (a
//! thread the handler started) wakes the driver through the queue's waker.
//!
//! The queue is bounded in messages and in bytes ([`MAX_QUEUED`], [`MAX_QUEUED_BYTES`]). At
//! the bound a progress notification replaces the last one queued for the same token (the
//! client sees the latest progress); any other notification is dropped and the push says so
//! (`false`). Responses never enter this queue: the driver returns them.
//!
//! [`ToolContext::progress`]: crate::context::ToolContext::progress
//! [`ToolContext::log`]: crate::context::ToolContext::log

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Context;

use futures_util::task::AtomicWaker;
use serde_json::Value;

use crate::wire::OutgoingMessage;

/// The most messages one request's queue holds between two drains.
pub const MAX_QUEUED: usize = 256;

/// The most bytes (of notification parameters, as JSON) one request's queue holds between two
/// drains.
pub const MAX_QUEUED_BYTES: usize = 1024 * 1024;

/// Where a request's stream is written: the transport's end of it.
///
/// Transports implement this: the stdio transport writes to stdout, the HTTP transport to the
/// request's SSE stream. `send` must not block; a full or closed sink returns `false` and the
/// message is dropped (progress and log messages are advisory). What a handler emits reaches
/// it through its request's [`Outbound`] queue, drained by the driver.
pub trait MessageSink: Send + Sync + 'static {
    /// Queues `message` for the peer.
    fn send(&self, message: OutgoingMessage) -> bool;
}

/// A sink that drops everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NullSink;

impl MessageSink for NullSink {
    fn send(&self, _message: OutgoingMessage) -> bool {
        false
    }
}

impl NullSink {
    /// One shared null sink, so that a request without a stream need not allocate one.
    #[doc(hidden)]
    pub fn shared() -> Arc<dyn MessageSink> {
        static SHARED: std::sync::LazyLock<Arc<dyn MessageSink>> =
            std::sync::LazyLock::new(|| Arc::new(NullSink));
        SHARED.clone()
    }
}

/// One request's queue of emitted messages, bounded in messages and bytes, with the waker of
/// the driver that drains it, and the stream it is drained to. Cheap to clone (a reference
/// count); a closed queue ([`Outbound::closed`], no allocation) takes nothing.
#[derive(Clone)]
pub struct Outbound(Option<Arc<Queue>>);

struct Queue {
    items: Mutex<Items>,
    waker: AtomicWaker,
    stream: Arc<dyn MessageSink>,
}

#[derive(Default)]
struct Items {
    queued: VecDeque<(OutgoingMessage, usize)>,
    bytes: usize,
}

impl std::fmt::Debug for Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("open", &self.0.is_some())
            .field("queued", &self.queued())
            .finish()
    }
}

fn lock(m: &Mutex<Items>) -> MutexGuard<'_, Items> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The bytes a message counts for: its parameters as JSON, and its method.
fn weight(message: &OutgoingMessage) -> usize {
    match message {
        OutgoingMessage::Notification { method, params }
        | OutgoingMessage::Request { method, params, .. } => {
            method.len() + serde_json::to_vec(params).map_or(usize::MAX / 2, |v| v.len())
        }
        _ => 0,
    }
}

/// The progress token of a `notifications/progress`, if `message` is one.
fn progress_token(message: &OutgoingMessage) -> Option<&Value> {
    match message {
        OutgoingMessage::Notification {
            method: "notifications/progress",
            params,
        } => params.get("progressToken"),
        _ => None,
    }
}

impl Outbound {
    /// A queue drained to `stream`.
    pub(crate) fn to(stream: Arc<dyn MessageSink>) -> Self {
        Self(Some(Arc::new(Queue {
            items: Mutex::new(Items::default()),
            waker: AtomicWaker::new(),
            stream,
        })))
    }

    /// The queue of a request that emits nothing (no progress token, no log level, or no
    /// server): takes nothing, allocates nothing.
    pub(crate) fn closed() -> Self {
        Self(None)
    }

    /// Whether the queue takes messages (it is not [`closed`](Self::closed)).
    pub(crate) fn is_open(&self) -> bool {
        self.0.is_some()
    }

    /// Queues `message` (a notification) and wakes the driver. At the bound a progress
    /// notification replaces the last one queued for its token; otherwise `false`, and the
    /// message is dropped.
    pub(crate) fn push(&self, message: OutgoingMessage) -> bool {
        let Some(queue) = &self.0 else {
            return false;
        };
        let size = weight(&message);
        {
            let mut items = lock(&queue.items);
            if items.queued.len() >= MAX_QUEUED
                || items.bytes.saturating_add(size) > MAX_QUEUED_BYTES
            {
                let token = progress_token(&message).cloned();
                let Some(token) = token else {
                    return false;
                };
                let Some(slot) = items
                    .queued
                    .iter()
                    .rposition(|(m, _)| progress_token(m) == Some(&token))
                else {
                    return false;
                };
                let old = items.queued[slot].1;
                if items.bytes - old + size > MAX_QUEUED_BYTES {
                    return false;
                }
                items.bytes = items.bytes - old + size;
                items.queued[slot] = (message, size);
            } else {
                items.bytes += size;
                items.queued.push_back((message, size));
            }
        }
        queue.waker.wake();
        true
    }

    /// The next queued message, if any, in the order it was pushed: the one poll a driver
    /// drains the queue through.
    pub fn poll_outbound(&self) -> Option<OutgoingMessage> {
        let queue = self.0.as_ref()?;
        let mut items = lock(&queue.items);
        let (message, size) = items.queued.pop_front()?;
        items.bytes -= size;
        Some(message)
    }

    /// Registers the task to wake when something is queued (the driver, while it polls the
    /// handler's work).
    pub fn register(&self, cx: &Context<'_>) {
        if let Some(queue) = &self.0 {
            queue.waker.register(cx.waker());
        }
    }

    /// Drains everything queued to the request's stream, in order. A message the stream
    /// refuses is dropped (notifications are advisory).
    pub fn drain(&self) {
        let Some(queue) = &self.0 else {
            return;
        };
        while let Some(message) = self.poll_outbound() {
            queue.stream.send(message);
        }
    }

    /// How many messages are queued now.
    pub fn queued(&self) -> usize {
        self.0.as_ref().map_or(0, |q| lock(&q.items).queued.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn progress(token: &str, n: u64) -> OutgoingMessage {
        OutgoingMessage::Notification {
            method: "notifications/progress",
            params: json!({"progressToken": token, "progress": n}),
        }
    }

    fn log(n: u64) -> OutgoingMessage {
        OutgoingMessage::Notification {
            method: "notifications/message",
            params: json!({"level": "info", "data": n}),
        }
    }

    /// At the bound a log message is dropped, and a progress notification replaces the last
    /// queued one of its token: the client still gets the latest progress.
    #[test]
    fn the_queue_is_bounded_and_progress_is_coalesced_at_the_bound() {
        let out = Outbound::to(NullSink::shared());
        for n in 0..MAX_QUEUED as u64 {
            assert!(out.push(log(n)));
        }
        assert!(
            !out.push(log(9999)),
            "a log message past the bound is dropped"
        );
        assert_eq!(out.queued(), MAX_QUEUED);
        // Make room for one progress notification, then fill again.
        out.poll_outbound();
        assert!(out.push(progress("p", 1)));
        assert!(out.push(progress("p", 2)), "coalesced into the queued one");
        assert!(
            !out.push(progress("q", 1)),
            "no progress of token q to coalesce"
        );
        assert_eq!(out.queued(), MAX_QUEUED);
        let last = std::iter::from_fn(|| out.poll_outbound()).last().unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&last.to_bytes()).unwrap()["params"]["progress"],
            2
        );
        assert_eq!(out.queued(), 0);
    }

    /// Bytes bound the queue as well as messages.
    #[test]
    fn the_queue_is_bounded_in_bytes() {
        let out = Outbound::to(NullSink::shared());
        let big = "x".repeat(64 * 1024);
        let mut kept = 0;
        for _ in 0..MAX_QUEUED {
            if out.push(OutgoingMessage::Notification {
                method: "notifications/message",
                params: json!({"data": big}),
            }) {
                kept += 1;
            }
        }
        assert!(
            kept < MAX_QUEUED && kept * big.len() <= MAX_QUEUED_BYTES,
            "{kept}"
        );
    }

    /// A closed queue takes nothing.
    #[test]
    fn a_closed_queue_takes_nothing() {
        let out = Outbound::closed();
        assert!(!out.push(log(1)));
        assert!(out.poll_outbound().is_none());
    }
}
