//! [`EventStore`]: the SSE history behind `Last-Event-ID`, and its ids.

use std::fmt;
use std::str::FromStr;

use super::StoreFuture;

/// An event's id, `STREAM-SEQ`: the stream it belongs to (0 is a session's standalone GET
/// stream) and its position there. Ids are unique within a session, increase within their
/// stream, and name it, so a resumption finds its stream from the id alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId {
    /// The stream.
    pub stream: u64,
    /// The event's sequence number in its stream, from 1.
    pub seq: u64,
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.stream, self.seq)
    }
}

/// A `Last-Event-ID` that is not `STREAM-SEQ`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not an event id of this server")]
pub struct EventIdError;

impl FromStr for EventId {
    type Err = EventIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (stream, seq) = s.trim().split_once('-').ok_or(EventIdError)?;
        Ok(Self {
            stream: stream.parse().map_err(|_| EventIdError)?,
            seq: seq.parse().map_err(|_| EventIdError)?,
        })
    }
}

/// Who asks to replay: only the session that owns a stream, under the principal that
/// created the session, sees its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayScope<'a> {
    /// The session.
    pub session: &'a str,
    /// The principal's subject; `None` without authentication.
    pub principal: Option<&'a str>,
}

/// One stored event: its id and the bytes the transport gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// The event's id.
    pub id: EventId,
    /// The bytes appended, unchanged.
    pub data: Vec<u8>,
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// The stream the id named.
    pub stream: u64,
    /// Its events after the id, oldest first.
    pub events: Vec<StoredEvent>,
    /// Whether the stream is closed: nothing will follow these events.
    pub closed: bool,
    /// The sequence number of the stream's last event so far (0: none yet), whether or not
    /// it was after the id: a reader that wants only what comes next follows from it.
    pub last_seq: u64,
}

/// Who writes a stream, recorded with it ([`EventStore::open_stream_by`]), so that a reader
/// in another process can tell when the writer is gone and end the stream instead of
/// waiting for events that will never come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamWriter<'a> {
    /// The writing instance's name on the message bus
    /// ([`MessageBus::instance`](super::MessageBus::instance)): it lives while it listens
    /// there.
    pub instance: &'a str,
    /// What the stream's readers get, as its last event, when the writer is gone before it
    /// answered: the JSON-RPC error response for the stream's request.
    pub epitaph: &'a [u8],
}

impl<'a> StreamWriter<'a> {
    /// `instance` writes the stream; `epitaph` ends it if `instance` goes away first.
    pub fn new(instance: &'a str, epitaph: &'a [u8]) -> Self {
        Self { instance, epitaph }
    }
}

/// Where SSE events are kept for resumption.
///
/// The contract ([`contract::event_store`](super::contract::event_store) checks it):
/// - `open_stream` makes a new stream of a session (the first call creates the session's
///   history, owned by `scope.principal`) and returns its id; stream 0 exists from the start.
/// - `append` stores bytes at the end of a stream and returns their id. Bounds are the
///   implementation's: an event over its per-event bound is
///   [`TooLarge`](super::StoreError::TooLarge); the oldest events go first when a stream,
///   session or the whole store is over its bounds.
/// - `replay_after(id)` returns the stream's events after `id`, and only for the owning
///   session and principal (to anyone else the stream does not exist:
///   [`UnknownStream`](super::StoreError::UnknownStream)). When some event after `id` was
///   evicted, it fails with [`Evicted`](super::StoreError::Evicted): never a silent gap. An
///   id past the end of a known stream replays nothing.
/// - `wait_after(id)` resolves once the stream holds an event after `id` or is closed (at
///   once if it does already); it may also resolve early (the caller reads again with
///   `replay_after`), so that a reader on any instance follows events appended on any other.
/// - `close_stream` ends a stream; `drop_session` forgets a session's history.
/// - `open_stream_by` is `open_stream` with the stream's writer recorded: a store whose readers
///   may run in other processes than the writer appends the writer's epitaph and closes the
///   stream once `wait_after` finds the writer gone (it no longer listens on the message bus)
///   before it answered, so a reader never waits for a response that cannot come. The
///   default records nothing: in one process a reader outlives no writer.
pub trait EventStore: Send + Sync + std::fmt::Debug {
    /// A new stream of `scope.session`.
    fn open_stream<'a>(&'a self, scope: ReplayScope<'a>) -> StoreFuture<'a, u64>;

    /// A new stream of `scope.session` written by `writer` ([`StreamWriter`]).
    fn open_stream_by<'a>(
        &'a self,
        scope: ReplayScope<'a>,
        writer: StreamWriter<'a>,
    ) -> StoreFuture<'a, u64> {
        let _ = writer;
        self.open_stream(scope)
    }

    /// Appends `data` to `stream` of `scope.session`.
    fn append<'a>(
        &'a self,
        scope: ReplayScope<'a>,
        stream: u64,
        data: Vec<u8>,
    ) -> StoreFuture<'a, EventId>;

    /// The events of `after.stream` after `after`, for `scope`.
    fn replay_after<'a>(
        &'a self,
        after: EventId,
        scope: ReplayScope<'a>,
    ) -> StoreFuture<'a, Replay>;

    /// Resolves once `after.stream` has an event after `after` or is closed, or earlier.
    fn wait_after<'a>(&'a self, after: EventId, scope: ReplayScope<'a>) -> StoreFuture<'a, ()>;

    /// Ends `stream` of `scope.session`.
    fn close_stream<'a>(&'a self, scope: ReplayScope<'a>, stream: u64) -> StoreFuture<'a, ()>;

    /// Forgets every stream of `session`.
    fn drop_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()>;
}
