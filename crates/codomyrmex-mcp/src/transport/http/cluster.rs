//! Legacy SSE streams and client answers across instances: what the transport does when an
//! external [`EventStore`] ([`HttpConfig::event_store`](super::HttpConfig)) and a
//! [`MessageBus`] ([`HttpConfig::message_bus`](super::HttpConfig)) are configured.
//!
//! - **Every event goes through the store.** A POST stream is opened in the store; what the
//!   call sends (notifications, server-to-client requests, its response) is appended there
//!   in order by one writer task per stream ([`StoreSink`]), and the SSE response reads it
//!   back from the store ([`feed`](super::cluster_routing::feed)), as a resumption with `Last-Event-ID` does on any other
//!   instance: one path, so nothing is lost or repeated between instances. A session's
//!   standalone stream (stream 0) is written and followed the same way. With a bus, a POST
//!   stream records this instance as its writer ([`Shared::open`]): if this instance dies
//!   before it answers, the store ends the stream for its readers elsewhere with an error
//!   for the request.
//! - **Answers find their call.** Before a server-to-client request is appended, its id is
//!   claimed on the bus for this instance; an answer that reaches an instance whose session
//!   does not await it is routed to the claim's owner, and a cancellation (the core reads
//!   which request it names, [`cancelled_request`]) for a request not in flight here is
//!   broadcast ([`route`](super::cluster_routing::route)). [`Delivery`](super::cluster_routing::Delivery) hands what was routed here to the session's engine.
//! - **Instances speak store-level messages.** What instances tell each other of their own
//!   (a session ended, who delivers its notifications, a task's relay) is a typed
//!   [`BusMessage`], never a JSON-RPC method of this layer's invention; a client's message is
//!   carried as the client sent it ([`BusMessage::Client`]). No method name is matched here:
//!   the core says what a message asks ([`cancelled_request`], [`relayed_task`]).
//! - **One instance notifies.** A session live on several instances gets its notifications
//!   (list changes, resource updates) from one: the last to take it live or to open its GET
//!   stream, which says so on the bus ([`Shared::take_notifications`]); the others stop.
//!   A reader of the session's GET stream on another instance takes them back when that
//!   one no longer listens on the bus ([`Shared::look_at_notifier`]).
//!
//! What it is not: without an external store the in-memory replay logs
//! ([`replay`](super::replay)) serve every stream directly, and without a bus nothing is
//! routed. A message routed to an instance that died is lost, as the call it was for is.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;

use crate::MessageSink;
use crate::store::{EventStore, MessageBus, ReplayScope, StoreError};
use crate::wire::{ErrorObject, OutgoingMessage, RequestId};

use super::metrics::HttpMetrics;

/// The error a request's stream ends with when the instance handling the request went away
/// before it answered ([`Shared::open`]).
pub(crate) const WRITER_GONE: &str =
    "The server instance handling this request stopped before it answered; retry the request";

/// How long the instance delivering a session's notifications must stay silent on the bus
/// before a reader of the session's GET stream on another instance takes them
/// ([`Shared::look_at_notifier`]): more than a pub/sub reconnect takes.
pub(super) const NOTIFIER_GONE_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

/// Messages a stream's writer may hold before a sender is refused (as a full SSE channel is).
pub(super) const WRITER_QUEUE: usize = 256;

/// The external stores of a cluster of instances, as the transport uses them.
pub(crate) struct Shared {
    pub(crate) events: Arc<dyn EventStore>,
    pub(crate) bus: Option<Arc<dyn MessageBus>>,
    /// The largest event kept, as for the in-memory logs.
    pub(super) event_bytes: usize,
    /// How long a server-to-client request's claim lives (the session idle timeout).
    pub(super) claim_ttl_ms: u64,
    pub(super) metrics: Arc<HttpMetrics>,
}

/// Wall-clock milliseconds since the Unix epoch.
pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How a server-to-client request's id is named in a claim.
pub(super) fn claim_key(id: &RequestId) -> String {
    serde_json::to_string(id).unwrap_or_default()
}

impl Shared {
    pub(crate) fn new(
        events: Arc<dyn EventStore>,
        bus: Option<Arc<dyn MessageBus>>,
        event_bytes: usize,
        claim_ttl: std::time::Duration,
        metrics: Arc<HttpMetrics>,
    ) -> Self {
        Self {
            events,
            bus,
            event_bytes,
            claim_ttl_ms: u64::try_from(claim_ttl.as_millis()).unwrap_or(u64::MAX),
            metrics,
        }
    }

    /// A sink appending to `stream` of `session` (owned by `owner`) through the store, in
    /// order, on a writer task of its own; with `close`, the writer closes the stream once
    /// every clone of the sink is gone.
    pub(crate) fn sink(
        self: &Arc<Self>,
        session: &str,
        owner: Option<String>,
        stream: u64,
        close: bool,
    ) -> StoreSink {
        let (tx, mut rx) = mpsc::channel::<OutgoingMessage>(WRITER_QUEUE);
        let shared = self.clone();
        let session = session.to_owned();
        let write = async move {
            let scope = ReplayScope {
                session: &session,
                principal: owner.as_deref(),
            };
            while let Some(message) = rx.recv().await {
                shared.write(scope, stream, message).await;
            }
            if close && let Err(e) = shared.events.close_stream(scope, stream).await {
                shared.store_error(&e);
            }
        };
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(write);
        }
        StoreSink { tx }
    }

    pub(crate) fn store_error(&self, e: &StoreError) {
        tracing::warn!(error = %e, "event store error");
        self.metrics.store_error();
    }

    /// Claims a server-to-client request's id, then appends the message.
    pub(super) async fn write(
        &self,
        scope: ReplayScope<'_>,
        stream: u64,
        message: OutgoingMessage,
    ) {
        if let (OutgoingMessage::Request { id, .. }, Some(bus)) = (&message, &self.bus) {
            let key = claim_key(id);
            if let Err(e) = bus
                .claim(scope.session, &key, now_ms(), self.claim_ttl_ms)
                .await
            {
                // Its answer can then only be taken here.
                self.store_error(&e);
            }
        }
        let mut bytes = message.to_bytes();
        if bytes.len() > self.event_bytes {
            let id = match &message {
                OutgoingMessage::Response { id, .. } | OutgoingMessage::Encoded { id, .. } => {
                    Some(id.clone())
                }
                OutgoingMessage::Error { id, .. } => id.clone(),
                _ => {
                    tracing::debug!(size = bytes.len(), "dropped an SSE event over the limit");
                    return;
                }
            };
            bytes = OutgoingMessage::Error {
                id,
                error: ErrorObject::internal(format!(
                    "The response exceeds the {}-byte event limit of this stream",
                    self.event_bytes
                )),
            }
            .to_bytes();
        }
        let bytes = bytes.to_vec();
        let mut appended = self.events.append(scope, stream, bytes.clone()).await;
        if stream == 0 && appended == Err(StoreError::UnknownStream) {
            // The session's history does not exist yet: opening a stream creates it.
            appended = match self.events.open_stream(scope).await {
                Ok(_) => self.events.append(scope, stream, bytes).await,
                Err(e) => Err(e),
            };
        }
        if let Err(e) = appended {
            self.store_error(&e);
        }
    }

    /// Deletes a session's history (the session ended).
    pub(crate) fn drop_history(self: &Arc<Self>, session: &str) {
        let shared = self.clone();
        let session = session.to_owned();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                if let Err(e) = shared.events.drop_session(&session).await {
                    shared.store_error(&e);
                }
            });
        }
    }
}

/// A sink whose messages a writer task appends to a stream in the store, in order.
#[derive(Clone)]
pub(crate) struct StoreSink {
    tx: mpsc::Sender<OutgoingMessage>,
}

impl StoreSink {
    /// Queues the stream's last message, waiting for room: a response is never dropped.
    pub(crate) async fn finish(&self, message: OutgoingMessage) {
        let _ = self.tx.send(message).await;
    }
}

impl MessageSink for StoreSink {
    fn send(&self, message: OutgoingMessage) -> bool {
        self.tx.try_send(message).is_ok()
    }
}

/// Counts a session's open SSE responses that read from the store (a busy session is never
/// evicted); one per response, released when it ends.
pub(crate) struct ReaderGuard(Arc<AtomicUsize>);

impl ReaderGuard {
    pub(crate) fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count.clone())
    }
}

impl Drop for ReaderGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
