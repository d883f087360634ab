//! The state seam: the traits a shared store (Redis, say) implements so that several server
//! instances can serve one client, with serializable, versioned records.
//!
//! - [`SessionStore`]: 2025-11-25 sessions as [`SessionRecord`]s: create (with a cap, evicting
//!   the least recently used idle session when full), load, touch (sliding idle expiry), save
//!   (compare-and-set on the record version), delete, expire.
//! - [`EventStore`]: the SSE history behind `Last-Event-ID`: append an event to a stream and
//!   get its [`EventId`]; replay the events after an id, only for the session and principal
//!   that own the stream; wait for the next one, so a stream follows on any instance.
//! - [`MessageBus`]: routing a client's answer to a server-to-client request, or a
//!   cancellation, to the instance whose call waits for it ([`MemoryBus`] in one process).
//!
//! Time comes in as an argument (`now`, wall-clock milliseconds since the Unix epoch): no
//! implementation reads a clock, so the contracts are testable with explicit values. Methods
//! return boxed `Send` futures ([`StoreFuture`]), so the traits are dyn-compatible and need no
//! async runtime; an in-memory implementation answers at once.
//!
//! These traits live in the core beside [`TaskStore`](crate::task_store::TaskStore) and
//! [`ChangeBus`](crate::change_bus::ChangeBus): no runtime, no HTTP types, nothing of the
//! transports (the core's dependency tree has none: `crates/codomyrmex-mcp-cli/tests/
//! dependency_tree.rs` checks it). What it is not: it holds no live objects (engine
//! sessions, cancellation tokens, wakers), which stay with the instance that runs them; a
//! record is the data another instance needs to recognise the session.
//!
//! The in-memory implementations are [`MemorySessionStore`], [`MemoryBus`] and the library's
//! HTTP replay logs (`codomyrmex_mcp::transport::http`, bounded in events and bytes per
//! stream, session and server); the Redis crate implements all three traits.
//! [`contract`] holds the tests every implementation must pass.

mod bus;
mod events;
mod session;

pub mod contract;

use std::future::Future;
use std::pin::Pin;

pub use bus::{BusHandler, BusMessage, MemoryBus, MessageBus, Routed};
pub use events::{
    EventId, EventIdError, EventStore, Replay, ReplayScope, StoredEvent, StreamWriter,
};
pub use session::{
    Created, Keep, MemorySessionStore, SESSION_RECORD_SCHEMA, SessionEra, SessionRecord,
    SessionStore, StoredPrincipal,
};

/// What a store method returns: a boxed future, `Send`, borrowing the store.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The session table is full and every session in it is busy.
    #[error("the session store is full and every session is busy")]
    Full,
    /// The session table is full, and in each of a bounded number of rounds the idle
    /// sessions found to make room were used, or taken by other admissions, before this one
    /// could evict them (HTTP `503` with `Retry-After`). Only a store that cannot evict
    /// atomically with what it read answers it.
    #[error("the session store is full and the idle sessions found were taken by other admissions")]
    Contended,
    /// A record with this id exists already.
    #[error("a session with this id exists already")]
    Exists,
    /// A compare-and-set failed: the record changed since it was read.
    #[error("the record changed concurrently (expected version {expected}, found {found})")]
    Conflict {
        /// The version the caller read.
        expected: u64,
        /// The version in the store.
        found: u64,
    },
    /// The events after the requested id are no longer retained (HTTP `410`).
    #[error("the events after this id are no longer retained")]
    Evicted,
    /// No such stream for this session and principal (HTTP `404`).
    #[error("unknown event stream")]
    UnknownStream,
    /// An event over the per-event byte bound.
    #[error("the event exceeds the {limit}-byte limit")]
    TooLarge {
        /// The bound.
        limit: usize,
    },
    /// The stream no longer takes events.
    #[error("the stream is closed")]
    Closed,
    /// The instance a routed message is for no longer listens (it died): the message was
    /// not delivered, and the call it was for is lost with that instance (HTTP `410`).
    #[error("the instance this message is for is gone")]
    OwnerGone,
    /// The backing store cannot be reached (HTTP `503` with `Retry-After`).
    #[error("the store is unavailable: {0}")]
    Unavailable(String),
    /// A stored record does not decode (another version, or corrupt).
    #[error("a stored record is unreadable: {0}")]
    Corrupt(String),
}

/// A future that is ready at once.
pub(crate) fn ready<'a, T: Send + 'a>(value: Result<T, StoreError>) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(value))
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    /// Drives a future that completes without waiting (the in-memory store's): no runtime.
    pub(super) fn block_on<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(out) = f.as_mut().poll(&mut cx) {
                return out;
            }
        }
    }

    #[test]
    fn the_in_memory_bus_keeps_the_contract() {
        let hub = super::MemoryBus::new();
        block_on(super::contract::message_bus(&hub, &hub.join("1")));
    }

    #[test]
    fn the_in_memory_session_store_keeps_the_contract() {
        block_on(super::contract::session_store(
            &super::MemorySessionStore::new(),
        ));
    }
}
