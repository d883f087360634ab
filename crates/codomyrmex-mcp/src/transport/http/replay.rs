//! The replay history behind `Last-Event-ID` (legacy era): one byte-and-count bounded log per
//! SSE stream ([`StreamLog`]), drawing from shared byte budgets ([`Budget`]) per session and
//! for the whole server.
//!
//! Every bound evicts the oldest events first: a stream's own (event count and bytes) when it
//! appends, a session's or the server's (bytes, across all the logs that draw from it) by the
//! age of the event, whichever log holds it. An event larger than the per-event bound is never
//! retained: a response is replaced by an error response with the same id, anything else
//! (advisory notifications, server-to-client requests) is dropped.
//!
//! Readers pull from the log with a cursor, so a reader that falls behind costs nothing beyond
//! the log. A reader whose next event was evicted is ended, and resuming before an evicted
//! event is refused ([`Evicted`]): the server never silently skips events.
//!
//! This is not a message queue: nothing is delivered twice to one reader, and nothing waits
//! for a reader.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;

use crate::MessageSink;
use crate::store::{
    EventId, EventStore, Replay, ReplayScope, StoreError, StoreFuture, StoredEvent,
};
use crate::wire::{ErrorObject, OutgoingMessage};

use super::sse_frame::frame;

/// The bounds of replay history, from [`HttpConfig`](super::HttpConfig).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReplayLimits {
    /// Events kept per stream.
    pub(crate) events: usize,
    /// The largest event kept, framed.
    pub(crate) event_bytes: usize,
    /// Bytes kept per stream.
    pub(crate) stream_bytes: usize,
    /// Bytes kept per session, over all its streams.
    pub(crate) session_bytes: usize,
    /// Bytes kept by the whole server.
    pub(crate) total_bytes: usize,
}

impl ReplayLimits {
    /// The bounds `config` sets.
    pub(crate) fn of(config: &super::HttpConfig) -> Self {
        Self {
            events: config.replay_events,
            event_bytes: config.replay_event_bytes,
            stream_bytes: config.replay_stream_bytes,
            session_bytes: config.replay_session_bytes,
            total_bytes: config.replay_total_bytes,
        }
    }
}

/// The most [`EventStore::wait_after`] waiters a log keeps before waking them all.
const MAX_FOLLOWERS: usize = 64;

/// The age of an event across the whole process: budgets evict the smallest first.
static CLOCK: AtomicU64 = AtomicU64::new(1);

/// A byte budget shared by several logs; when over, it evicts the oldest of their events.
pub(crate) struct Budget {
    limit: usize,
    state: Mutex<BudgetState>,
}

#[derive(Default)]
struct BudgetState {
    bytes: usize,
    /// Retained events by age: their log and size.
    events: BTreeMap<u64, (Weak<StreamLog>, usize)>,
}

impl Budget {
    /// A budget of `limit` bytes.
    pub(crate) fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            limit,
            state: Mutex::new(BudgetState::default()),
        })
    }

    // Lock order: a log's lock, then a budget's. A budget's lock is never held while taking
    // another lock.
    fn lock(&self) -> std::sync::MutexGuard<'_, BudgetState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The bytes retained under this budget.
    #[cfg(test)]
    pub(crate) fn used(&self) -> usize {
        self.lock().bytes
    }

    fn add(&self, clock: u64, size: usize, log: Weak<StreamLog>) {
        let mut s = self.lock();
        s.bytes += size;
        s.events.insert(clock, (log, size));
    }

    fn remove(&self, clock: u64) {
        let mut s = self.lock();
        if let Some((_, size)) = s.events.remove(&clock) {
            s.bytes -= size;
        }
    }

    /// Takes the oldest event off the budget while it is over.
    fn pop_if_over(&self) -> Option<(u64, Weak<StreamLog>)> {
        let mut s = self.lock();
        if s.bytes <= self.limit {
            return None;
        }
        let (clock, (log, size)) = s.events.pop_first()?;
        s.bytes -= size;
        Some((clock, log))
    }

    /// Evicts the oldest events until the budget holds.
    fn enforce(&self) {
        while let Some((clock, log)) = self.pop_if_over() {
            // A log that is gone has released (or is releasing) its events itself.
            if let Some(log) = log.upgrade() {
                log.evict_through(clock);
            }
        }
    }
}

/// Why [`StreamLog::push`] kept nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    Closed,
    TooLarge,
}

/// Resuming would skip events that are no longer retained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Evicted;

/// What a log holds after a sequence number.
struct After {
    /// The retained events after it, with their sequence numbers.
    events: Vec<(u64, Bytes)>,
    closed: bool,
    /// The last sequence number issued.
    last_seq: u64,
}

struct Event {
    seq: u64,
    clock: u64,
    bytes: Bytes,
}

/// A bounded, replayable log of one SSE stream's events, so a client that lost the connection
/// can resume with `Last-Event-ID`.
pub(crate) struct StreamLog {
    id: u64,
    limits: ReplayLimits,
    /// The session's and the server's budgets.
    budgets: Vec<Arc<Budget>>,
    me: Weak<StreamLog>,
    state: Mutex<LogState>,
    /// Readers alive (open SSE responses on this log), whether or not current.
    readers: AtomicUsize,
}

struct LogState {
    events: VecDeque<Event>,
    bytes: usize,
    next_seq: u64,
    /// The last evicted sequence number (0: none): a reader must be past it.
    evicted_through: u64,
    closed: bool,
    /// The current reader's generation; attaching a new reader ends the old one.
    reader: u64,
    waker: Option<Waker>,
    /// Who waits through [`EventStore::wait_after`]: woken by the next append or the close.
    followers: Vec<Waker>,
}

impl StreamLog {
    /// A log with stream id `id`, drawing from `budgets`.
    pub(crate) fn new(id: u64, limits: ReplayLimits, budgets: Vec<Arc<Budget>>) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            id,
            limits: ReplayLimits {
                events: limits.events.max(1),
                ..limits
            },
            budgets,
            me: me.clone(),
            readers: AtomicUsize::new(0),
            state: Mutex::new(LogState {
                events: VecDeque::new(),
                bytes: 0,
                next_seq: 1,
                evicted_through: 0,
                closed: false,
                reader: 0,
                waker: None,
                followers: Vec::new(),
            }),
        })
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The bytes this log retains.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Appends a message and wakes the reader. Returns `false` when the stream is closed or
    /// the message was too large to keep (and was not a response, which is replaced).
    pub(crate) fn append(&self, message: &OutgoingMessage) -> bool {
        self.push(|id| {
            let bytes = frame(message, Some(id));
            if bytes.len() <= self.limits.event_bytes {
                return Some(bytes);
            }
            let Some(replacement) = self.too_large(message) else {
                tracing::debug!(size = bytes.len(), "dropped an SSE event over the limit");
                return None;
            };
            Some(frame(&replacement, Some(id)))
        })
        .is_ok()
    }

    /// Appends the bytes `make` returns for the next event id (`None`: nothing to keep), under
    /// every bound, and wakes the reader. Returns the event's sequence number.
    fn push(&self, make: impl FnOnce(&str) -> Option<Bytes>) -> Result<u64, Refused> {
        let seq = {
            let mut s = self.lock();
            if s.closed {
                return Err(Refused::Closed);
            }
            let seq = s.next_seq;
            let id = format!("{}-{}", self.id, seq);
            let bytes = make(&id).ok_or(Refused::TooLarge)?;
            if bytes.len() > self.limits.event_bytes {
                return Err(Refused::TooLarge);
            }
            s.next_seq += 1;
            let size = bytes.len();
            while !s.events.is_empty()
                && (s.events.len() >= self.limits.events
                    || s.bytes + size > self.limits.stream_bytes)
            {
                self.pop_front(&mut s);
            }
            let clock = CLOCK.fetch_add(1, Ordering::Relaxed);
            s.events.push_back(Event { seq, clock, bytes });
            s.bytes += size;
            for b in &self.budgets {
                b.add(clock, size, self.me.clone());
            }
            if let Some(w) = s.waker.take() {
                w.wake();
            }
            s.followers.drain(..).for_each(Waker::wake);
            seq
        };
        for b in &self.budgets {
            b.enforce();
        }
        Ok(seq)
    }

    /// The retained events after `after_seq` and whether the stream is closed, without
    /// becoming its reader. Refused when some of those events were evicted.
    fn events_after(&self, after_seq: u64) -> Result<After, Evicted> {
        let s = self.lock();
        if after_seq < s.evicted_through {
            return Err(Evicted);
        }
        let events = s
            .events
            .iter()
            .filter(|e| e.seq > after_seq)
            .map(|e| (e.seq, e.bytes.clone()))
            .collect();
        Ok(After {
            events,
            closed: s.closed,
            last_seq: s.next_seq - 1,
        })
    }

    /// Ready once an event after `after_seq` exists or the log is closed.
    fn poll_after(&self, after_seq: u64, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.lock();
        if s.closed || s.next_seq - 1 > after_seq {
            return Poll::Ready(());
        }
        // At most one entry per waiting task: a re-poll replaces its own. Waiters that went
        // away leave theirs until the next append: past a bound, everyone is woken (an early
        // wake-up is allowed) so the list stays bounded.
        s.followers.retain(|w| !w.will_wake(cx.waker()));
        if s.followers.len() >= MAX_FOLLOWERS {
            s.followers.drain(..).for_each(Waker::wake);
        }
        s.followers.push(cx.waker().clone());
        Poll::Pending
    }

    /// What replaces a message too large to keep: an error response for a response.
    fn too_large(&self, message: &OutgoingMessage) -> Option<OutgoingMessage> {
        let id = match message {
            OutgoingMessage::Response { id, .. } | OutgoingMessage::Encoded { id, .. } => {
                Some(id.clone())
            }
            OutgoingMessage::Error { id, .. } => id.clone(),
            _ => return None,
        };
        Some(OutgoingMessage::Error {
            id,
            error: ErrorObject::internal(format!(
                "The response exceeds the {}-byte event limit of this stream",
                self.limits.event_bytes
            )),
        })
    }

    /// Drops the oldest event, releasing it from every budget.
    fn pop_front(&self, s: &mut LogState) {
        if let Some(e) = s.events.pop_front() {
            s.bytes -= e.bytes.len();
            s.evicted_through = e.seq;
            for b in &self.budgets {
                b.remove(e.clock);
            }
            if let Some(w) = s.waker.take() {
                w.wake();
            }
        }
    }

    /// Evicts every event at least as old as `clock` (a budget's choice).
    fn evict_through(&self, clock: u64) {
        let mut s = self.lock();
        while s.events.front().is_some_and(|e| e.clock <= clock) {
            self.pop_front(&mut s);
        }
    }

    /// Writes the priming event (an id and empty data) that lets a client resume.
    pub(crate) fn prime(&self, retry: Duration) -> Bytes {
        let s = self.lock();
        let last = s.next_seq - 1;
        Bytes::from(format!(
            "id: {}-{}\nretry: {}\ndata: \n\n",
            self.id,
            last,
            retry.as_millis()
        ))
    }

    /// Ends the stream: readers finish after what is retained.
    pub(crate) fn close(&self) {
        let mut s = self.lock();
        s.closed = true;
        if let Some(w) = s.waker.take() {
            w.wake();
        }
        s.followers.drain(..).for_each(Waker::wake);
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Whether a reader (an open SSE response) holds this log.
    pub(crate) fn has_reader(&self) -> bool {
        self.readers.load(Ordering::Relaxed) > 0
    }

    /// A reader of the events after `after_seq`; ends any earlier reader. Refused when some
    /// of those events were evicted.
    pub(crate) fn attach(self: &Arc<Self>, after_seq: u64) -> Result<Cursor, Evicted> {
        let mut s = self.lock();
        if after_seq < s.evicted_through {
            return Err(Evicted);
        }
        // An id this log never issued (from another server, say) follows from now on.
        let after = after_seq.min(s.next_seq - 1);
        Ok(self.new_reader(&mut s, after))
    }

    /// A reader of every event retained, from the oldest; ends any earlier reader.
    pub(crate) fn follow_from_start(self: &Arc<Self>) -> Cursor {
        let mut s = self.lock();
        let after = s.evicted_through;
        self.new_reader(&mut s, after)
    }

    /// A reader of the events appended from now on; ends any earlier reader.
    pub(crate) fn follow(self: &Arc<Self>) -> Cursor {
        let mut s = self.lock();
        let after = s.next_seq - 1;
        self.new_reader(&mut s, after)
    }

    fn new_reader(self: &Arc<Self>, s: &mut LogState, after: u64) -> Cursor {
        s.reader += 1;
        if let Some(w) = s.waker.take() {
            w.wake();
        }
        self.readers.fetch_add(1, Ordering::Relaxed);
        Cursor {
            log: self.clone(),
            after,
            generation: s.reader,
        }
    }

    fn poll_next(&self, c: &mut Cursor, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut s = self.lock();
        if c.generation != s.reader || c.after < s.evicted_through {
            // Replaced by a newer reader, or fell behind the history: the client resumes.
            return Poll::Ready(None);
        }
        let next = s
            .events
            .front()
            .and_then(|f| usize::try_from(c.after.checked_add(1)?.checked_sub(f.seq)?).ok())
            .and_then(|i| s.events.get(i));
        if let Some(e) = next {
            c.after = e.seq;
            return Poll::Ready(Some(e.bytes.clone()));
        }
        if s.closed {
            return Poll::Ready(None);
        }
        s.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for StreamLog {
    fn drop(&mut self) {
        let s = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        for e in &s.events {
            for b in &self.budgets {
                b.remove(e.clock);
            }
        }
    }
}

/// A reader's position in a [`StreamLog`].
pub(crate) struct Cursor {
    log: Arc<StreamLog>,
    after: u64,
    generation: u64,
}

impl Cursor {
    /// The next event; `None` when the stream ended, was taken over by a newer reader, or the
    /// reader fell behind what is retained.
    pub(crate) fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let log = self.log.clone();
        log.poll_next(self, cx)
    }
}

impl Drop for Cursor {
    fn drop(&mut self) {
        self.log.readers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A sink that appends to a stream log.
pub(crate) struct LogSink(pub(crate) Arc<StreamLog>);

impl MessageSink for LogSink {
    fn send(&self, message: OutgoingMessage) -> bool {
        self.0.append(&message)
    }
}

/// How many POST streams a session keeps for resumption, besides its standalone stream.
const RETAINED_STREAMS: usize = 32;

/// One session's history in a [`MemoryEventStore`].
struct MemorySession {
    principal: Option<String>,
    budgets: Vec<Arc<Budget>>,
    /// Stream 0.
    standalone: Arc<StreamLog>,
    /// POST streams, oldest first.
    streams: VecDeque<Arc<StreamLog>>,
    next_stream: u64,
}

impl MemorySession {
    fn log(&self, stream: u64) -> Result<Arc<StreamLog>, StoreError> {
        if stream == 0 {
            return Ok(self.standalone.clone());
        }
        match self.streams.iter().find(|s| s.id() == stream) {
            Some(log) => Ok(log.clone()),
            // Issued, then forgotten: what followed cannot be replayed.
            None if stream < self.next_stream => Err(StoreError::Evicted),
            None => Err(StoreError::UnknownStream),
        }
    }

    fn logs(&self) -> impl Iterator<Item = &Arc<StreamLog>> {
        std::iter::once(&self.standalone).chain(self.streams.iter())
    }
}

/// The in-memory [`EventStore`], and the replay logs of the HTTP transport: every session's
/// [`StreamLog`]s under their [`Budget`]s (events and bytes per stream, bytes per session and
/// for the whole store, the oldest evicted first). The transport appends to and follows the
/// logs directly (a [`LogSink`], a [`Cursor`]); resumption goes through the trait. Bytes
/// given through the trait are kept as they are; the transport's are SSE frames.
pub(crate) struct MemoryEventStore {
    limits: ReplayLimits,
    server: Arc<Budget>,
    sessions: Mutex<HashMap<String, MemorySession>>,
}

impl std::fmt::Debug for MemoryEventStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryEventStore")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl MemoryEventStore {
    /// A store under `limits`.
    pub(crate) fn new(limits: ReplayLimits) -> Self {
        Self {
            limits,
            server: Budget::new(limits.total_bytes),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    // Lock order: this lock, then a log's, then a budget's.
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, MemorySession>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The bytes retained by all sessions.
    #[cfg(test)]
    pub(crate) fn retained_bytes(&self) -> usize {
        self.server.used()
    }

    /// The standalone stream of `session`, whose history is created for `principal` if it
    /// does not exist yet.
    pub(crate) fn open_session(&self, session: &str, principal: Option<&str>) -> Arc<StreamLog> {
        let mut map = self.lock();
        let limits = self.limits;
        let entry = map.entry(session.to_owned()).or_insert_with(|| {
            let budgets = vec![Budget::new(limits.session_bytes), self.server.clone()];
            MemorySession {
                principal: principal.map(str::to_owned),
                standalone: StreamLog::new(0, limits, budgets.clone()),
                budgets,
                streams: VecDeque::new(),
                next_stream: 1,
            }
        });
        entry.standalone.clone()
    }

    /// A new POST stream of `session`; `None` when the session has no history (it ended).
    /// Past [`RETAINED_STREAMS`], the oldest finished stream is forgotten (the oldest running
    /// one if none has finished).
    pub(crate) fn new_log(&self, session: &str) -> Option<Arc<StreamLog>> {
        let mut map = self.lock();
        let s = map.get_mut(session)?;
        let id = s.next_stream;
        s.next_stream += 1;
        let log = StreamLog::new(id, self.limits, s.budgets.clone());
        if s.streams.len() >= RETAINED_STREAMS {
            if let Some(pos) = s.streams.iter().position(|l| l.is_closed()) {
                s.streams.remove(pos);
            } else {
                s.streams.pop_front();
            }
        }
        s.streams.push_back(log.clone());
        Some(log)
    }

    /// `stream` of the session in `scope`, if `scope` owns it.
    pub(crate) fn log(
        &self,
        scope: ReplayScope<'_>,
        stream: u64,
    ) -> Result<Arc<StreamLog>, StoreError> {
        let map = self.lock();
        map.get(scope.session)
            .filter(|s| s.principal.as_deref() == scope.principal)
            .ok_or(StoreError::UnknownStream)?
            .log(stream)
    }

    /// Whether an SSE response is open on any stream of `session`.
    pub(crate) fn has_reader(&self, session: &str) -> bool {
        self.lock()
            .get(session)
            .is_some_and(|s| s.logs().any(|l| l.has_reader()))
    }

    /// Closes and forgets every stream of `session`.
    pub(crate) fn end_session(&self, session: &str) {
        let removed = {
            let mut map = self.lock();
            let removed = map.remove(session);
            // A map keeps its room after a burst of sessions: give it back once it is less
            // than a quarter full (keeping room to double).
            let len = map.len();
            if map.capacity() > 64 && len < map.capacity() / 4 {
                map.shrink_to(len * 2);
            }
            removed
        };
        if let Some(s) = removed {
            // The logs release their budgets as they drop, outside the lock.
            for log in s.logs() {
                log.close();
            }
        }
    }
}

impl EventStore for MemoryEventStore {
    fn open_stream<'a>(&'a self, scope: ReplayScope<'a>) -> StoreFuture<'a, u64> {
        let owner = self
            .lock()
            .get(scope.session)
            .map(|s| s.principal.as_deref() == scope.principal);
        let out = match owner {
            Some(false) => Err(StoreError::UnknownStream),
            _ => {
                self.open_session(scope.session, scope.principal);
                self.new_log(scope.session)
                    .map(|l| l.id())
                    .ok_or(StoreError::UnknownStream)
            }
        };
        Box::pin(std::future::ready(out))
    }

    fn append<'a>(
        &'a self,
        scope: ReplayScope<'a>,
        stream: u64,
        data: Vec<u8>,
    ) -> StoreFuture<'a, EventId> {
        let out = self.log(scope, stream).and_then(|log| {
            let limit = self.limits.event_bytes;
            log.push(|_| Some(Bytes::from(data)))
                .map(|seq| EventId { stream, seq })
                .map_err(|r| match r {
                    Refused::Closed => StoreError::Closed,
                    Refused::TooLarge => StoreError::TooLarge { limit },
                })
        });
        Box::pin(std::future::ready(out))
    }

    fn replay_after<'a>(
        &'a self,
        after: EventId,
        scope: ReplayScope<'a>,
    ) -> StoreFuture<'a, Replay> {
        let out = self.log(scope, after.stream).and_then(|log| {
            let After {
                events,
                closed,
                last_seq,
            } = log
                .events_after(after.seq)
                .map_err(|_| StoreError::Evicted)?;
            Ok(Replay {
                stream: after.stream,
                events: events
                    .into_iter()
                    .map(|(seq, data)| StoredEvent {
                        id: EventId {
                            stream: after.stream,
                            seq,
                        },
                        data: data.to_vec(),
                    })
                    .collect(),
                closed,
                last_seq,
            })
        });
        Box::pin(std::future::ready(out))
    }

    fn wait_after<'a>(&'a self, after: EventId, scope: ReplayScope<'a>) -> StoreFuture<'a, ()> {
        let log = self.log(scope, after.stream);
        Box::pin(async move {
            let log = log?;
            std::future::poll_fn(|cx| log.poll_after(after.seq, cx)).await;
            Ok(())
        })
    }

    fn close_stream<'a>(&'a self, scope: ReplayScope<'a>, stream: u64) -> StoreFuture<'a, ()> {
        let out = self.log(scope, stream).map(|log| log.close());
        Box::pin(std::future::ready(out))
    }

    fn drop_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        self.end_session(session);
        Box::pin(std::future::ready(Ok(())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::RequestId;
    use serde_json::json;

    fn note(n: i64) -> OutgoingMessage {
        OutgoingMessage::Notification {
            method: "notifications/progress",
            params: json!({"progress": n}),
        }
    }

    fn limits(events: usize) -> ReplayLimits {
        ReplayLimits {
            events,
            event_bytes: 1 << 20,
            stream_bytes: 1 << 20,
            session_bytes: 1 << 20,
            total_bytes: 1 << 20,
        }
    }

    async fn next(c: &mut Cursor) -> Option<Bytes> {
        std::future::poll_fn(|cx| c.poll_next(cx)).await
    }

    fn starts(b: &Bytes, prefix: &str) -> bool {
        std::str::from_utf8(b).unwrap().starts_with(prefix)
    }

    #[tokio::test]
    async fn logs_replay_after_an_id_and_stay_bounded() {
        let log = StreamLog::new(7, limits(3), Vec::new());
        for n in 0..5 {
            assert!(log.append(&note(n)));
        }
        // 1 and 2 were evicted: resuming after 1 would skip 2.
        assert_eq!(log.attach(1).err(), Some(Evicted));
        let mut rx = log.attach(3).unwrap();
        assert!(starts(&next(&mut rx).await.unwrap(), "id: 7-4\n"));
        assert!(starts(&next(&mut rx).await.unwrap(), "id: 7-5\n"));
        log.close();
        assert!(next(&mut rx).await.is_none());
        assert!(!log.append(&note(9)));
        // Only the last three were kept.
        let mut all = log.attach(2).unwrap();
        let mut n = 0;
        while next(&mut all).await.is_some() {
            n += 1;
        }
        assert_eq!(n, 3);
    }

    #[tokio::test]
    async fn a_reader_that_falls_behind_is_ended_not_buffered_for() {
        let log = StreamLog::new(1, limits(4), Vec::new());
        let mut rx = log.attach(0).unwrap();
        for n in 0..100 {
            log.append(&note(n));
        }
        // Nothing is queued for the reader: the log holds four events, and the reader, whose
        // next event is gone, ends (the client resumes, and is told what was lost).
        assert_eq!(log.lock().events.len(), 4);
        assert!(next(&mut rx).await.is_none());
        assert_eq!(log.attach(0).err(), Some(Evicted));
    }

    #[test]
    fn an_id_never_issued_follows_from_now_on() {
        let log = StreamLog::new(1, limits(8), Vec::new());
        log.append(&note(1));
        let mut c = log.attach(1_000).unwrap();
        log.append(&note(2));
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match c.poll_next(&mut cx) {
            Poll::Ready(Some(b)) => assert!(starts(&b, "id: 1-2\n")),
            other => panic!("the next event is not delivered: {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_newer_reader_ends_the_older_one() {
        let log = StreamLog::new(1, limits(8), Vec::new());
        let mut old = log.attach(0).unwrap();
        let mut new = log.follow();
        log.append(&note(1));
        assert!(next(&mut old).await.is_none());
        assert!(next(&mut new).await.is_some());
    }

    #[test]
    fn streams_are_bounded_in_bytes_and_big_events_are_not_kept() {
        let l = ReplayLimits {
            event_bytes: 300,
            stream_bytes: 1000,
            ..limits(256)
        };
        let log = StreamLog::new(1, l, Vec::new());
        let big = OutgoingMessage::Notification {
            method: "notifications/message",
            params: json!({"data": "x".repeat(400)}),
        };
        assert!(
            !log.append(&big),
            "an advisory event over the limit is dropped"
        );
        assert_eq!(log.bytes(), 0);
        let response = OutgoingMessage::Response {
            id: RequestId::from(3),
            result: json!({"data": "x".repeat(400)}),
        };
        assert!(log.append(&response));
        let mut c = log.attach(0).unwrap();
        let waker = std::task::Waker::noop();
        let Poll::Ready(Some(b)) = c.poll_next(&mut Context::from_waker(waker)) else {
            panic!("the replacement is retained");
        };
        let text = std::str::from_utf8(&b).unwrap();
        assert!(
            text.contains("\"id\":3") && text.contains("-32603"),
            "{text}"
        );
        for n in 0..100 {
            log.append(&note(n));
            assert!(log.bytes() <= 1000);
        }
    }

    #[tokio::test]
    async fn the_in_memory_event_store_keeps_the_contract() {
        let store = MemoryEventStore::new(ReplayLimits {
            events: 4,
            event_bytes: 100,
            stream_bytes: 300,
            session_bytes: 400,
            total_bytes: 600,
        });
        crate::store::contract::event_store(&store).await;
    }

    #[test]
    fn shared_budgets_evict_the_oldest_event_of_any_log() {
        let budget = Budget::new(1000);
        let l = limits(256);
        let a = StreamLog::new(1, l, vec![budget.clone()]);
        let b = StreamLog::new(2, l, vec![budget.clone()]);
        let event = |n: i64| OutgoingMessage::Notification {
            method: "notifications/message",
            params: json!({"n": n, "data": "x".repeat(150)}),
        };
        for n in 0..10 {
            a.append(&event(n));
            b.append(&event(n));
            assert!(budget.used() <= 1000);
            assert_eq!(budget.used(), a.bytes() + b.bytes());
        }
        // Oldest first: both logs lost their early events, not one log all of its.
        assert!(a.bytes() > 0 && b.bytes() > 0);
        assert_eq!(a.attach(0).err(), Some(Evicted));
        drop(a);
        assert_eq!(budget.used(), b.bytes(), "a dropped log releases its bytes");
    }
}
