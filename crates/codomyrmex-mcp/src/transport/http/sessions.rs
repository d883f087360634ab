//! The legacy-era session store: bounded, with idle expiry, so sessions never leak. Each
//! session belongs to the principal that created it, and its replay history draws from a
//! per-session and a server-wide byte budget ([`replay`](super::replay)).
//!
//! A full table never locks new clients out: creating a session first drops the expired
//! ones, then evicts the least recently used *idle* session, one with no call in flight and
//! no open SSE response (a GET stream or a streamed POST still being read). Its client gets
//! `404` on its next request and re-initializes, as the spec expects of a lost session. Only
//! when every session is busy is a new one refused ([`StoreFull`]), and the endpoint answers
//! `503` with `Retry-After`. Finding the victim scans the table; that happens only when it is
//! full.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::context::Principal;
use crate::engine::Session;

use super::replay::{Budget, LogSink, ReplayLimits, StreamLog};

/// One legacy session over HTTP: the engine's session plus its SSE streams.
pub(crate) struct HttpSession {
    pub(crate) session: Arc<Session>,
    last_seen: Mutex<Instant>,
    /// Stream 0: the standalone GET stream, for messages not tied to a request.
    pub(crate) standalone: Arc<StreamLog>,
    /// [`standalone`](Self::standalone) as the sink of the session's JSON-answered requests.
    pub(crate) standalone_sink: Arc<dyn crate::context::MessageSink>,
    streams: Mutex<VecDeque<Arc<StreamLog>>>,
    next_stream: AtomicU64,
    limits: ReplayLimits,
    /// This session's budget, then the server's.
    budgets: Vec<Arc<Budget>>,
}

/// How many finished POST streams a session keeps for resumption.
const RETAINED_STREAMS: usize = 32;

impl HttpSession {
    fn new(session: Arc<Session>, limits: ReplayLimits, server: &Arc<Budget>) -> Self {
        let budgets = vec![Budget::new(limits.session_bytes), server.clone()];
        let standalone = StreamLog::new(0, limits, budgets.clone());
        Self {
            session,
            last_seen: Mutex::new(Instant::now()),
            standalone_sink: Arc::new(LogSink(standalone.clone())),
            standalone,
            streams: Mutex::new(VecDeque::new()),
            next_stream: AtomicU64::new(1),
            limits,
            budgets,
        }
    }

    /// Whether `principal` may use this session: the one that created it (by subject), or
    /// anyone when it was created without authentication.
    fn belongs_to(&self, principal: Option<&Principal>) -> bool {
        match self.session.principal() {
            None => true,
            Some(owner) => principal.is_some_and(|p| p.subject == owner.subject),
        }
    }

    /// Whether stream `id` was opened by this session, even if it is no longer retained.
    pub(crate) fn opened(&self, id: u64) -> bool {
        id < self.next_stream.load(Ordering::Relaxed)
    }

    pub(crate) fn touch(&self) {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn last_seen(&self) -> Instant {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn idle_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.last_seen())
    }

    /// Whether the session is in use: a call in flight, or an SSE response open on one of its
    /// streams. A busy session is never evicted to make room.
    fn is_busy(&self) -> bool {
        self.session.in_flight() > 0
            || self.standalone.has_reader()
            || self
                .streams
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .any(|s| s.has_reader())
    }

    /// A new resumable stream for a POST response.
    pub(crate) fn open_stream(&self) -> Arc<StreamLog> {
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let log = StreamLog::new(id, self.limits, self.budgets.clone());
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        if streams.len() >= RETAINED_STREAMS {
            // Forget the oldest finished stream; running ones stay resumable.
            if let Some(pos) = streams.iter().position(|s| s.is_closed()) {
                streams.remove(pos);
            } else {
                streams.pop_front();
            }
        }
        streams.push_back(log.clone());
        log
    }

    /// A stream by id (0 is the standalone stream).
    pub(crate) fn stream(&self, id: u64) -> Option<Arc<StreamLog>> {
        if id == 0 {
            return Some(self.standalone.clone());
        }
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|s| s.id() == id)
            .cloned()
    }

    fn close(&self) {
        self.session.cancel_all();
        self.standalone.close();
        for s in self
            .streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            s.close();
        }
    }
}

/// Why a session could not be created: the table is full and every session in it is busy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StoreFull;

/// Sessions by id.
pub(crate) struct SessionStore {
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    max: usize,
    idle: Duration,
    replay: ReplayLimits,
    /// The server-wide replay budget.
    retained: Arc<Budget>,
}

impl SessionStore {
    pub(crate) fn new(max: usize, idle: Duration, replay: ReplayLimits) -> Self {
        Self {
            sessions: Mutex::new(HashMap::new()),
            max,
            idle,
            replay,
            retained: Budget::new(replay.total_bytes),
        }
    }

    /// The bytes of replay history retained by all sessions.
    #[cfg(test)]
    pub(crate) fn retained_bytes(&self) -> usize {
        self.retained.used()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Stores a session under a fresh random id. When the table is full, the expired
    /// sessions go first, then the least recently used idle one (see the module docs).
    pub(crate) fn insert(
        &self,
        session: Arc<Session>,
    ) -> Result<(String, Arc<HttpSession>), StoreFull> {
        let mut map = self.lock();
        let mut evicted = None;
        if map.len() >= self.max {
            drop(map);
            self.sweep();
            map = self.lock();
            if map.len() >= self.max {
                let victim = map
                    .iter()
                    .filter(|(_, s)| !s.is_busy())
                    .min_by_key(|(_, s)| s.last_seen())
                    .map(|(k, _)| k.clone());
                let Some(victim) = victim else {
                    return Err(StoreFull);
                };
                evicted = map.remove(&victim);
            }
        }
        let id = new_session_id();
        let http = Arc::new(HttpSession::new(session, self.replay, &self.retained));
        map.insert(id.clone(), http.clone());
        drop(map);
        if let Some(old) = evicted {
            tracing::debug!("evicted the least recently used idle session to make room");
            old.close();
        }
        Ok((id, http))
    }

    /// A live session of `principal`, refreshed. Another principal's session is not found.
    pub(crate) fn get(&self, id: &str, principal: Option<&Principal>) -> Option<Arc<HttpSession>> {
        let s = self.lock().get(id).cloned()?;
        if !s.belongs_to(principal) {
            return None;
        }
        if s.idle_for(Instant::now()) > self.idle {
            self.remove(id, principal);
            return None;
        }
        s.touch();
        Some(s)
    }

    /// Ends a session of `principal`; returns whether it existed (another principal's does
    /// not).
    pub(crate) fn remove(&self, id: &str, principal: Option<&Principal>) -> bool {
        let removed = {
            let mut map = self.lock();
            if !map.get(id).is_some_and(|s| s.belongs_to(principal)) {
                return false;
            }
            let removed = map.remove(id);
            shrink_if_sparse(&mut map);
            removed
        };
        match removed {
            Some(s) => {
                s.close();
                true
            }
            None => false,
        }
    }

    /// Every live session (for broadcasting list changes).
    pub(crate) fn all(&self) -> Vec<Arc<HttpSession>> {
        self.lock().values().cloned().collect()
    }

    /// Drops sessions idle for longer than the expiry, and gives their memory back.
    pub(crate) fn sweep(&self) -> usize {
        let now = Instant::now();
        let expired: Vec<Arc<HttpSession>> = {
            let mut map = self.lock();
            let ids: Vec<String> = map
                .iter()
                .filter(|(_, s)| s.idle_for(now) > self.idle && s.session.in_flight() == 0)
                .map(|(k, _)| k.clone())
                .collect();
            let out = ids.iter().filter_map(|k| map.remove(k)).collect();
            shrink_if_sparse(&mut map);
            out
        };
        for s in &expired {
            s.close();
        }
        expired.len()
    }
}

/// A map never shrinks by itself: after a burst of 10,000 sessions its table would keep
/// room for 10,000 (about 0.5 MiB) for the life of the server. Shrinks it once it is less
/// than a quarter full, keeping room to double, so that a store going up and down around
/// one size does not reallocate on every change.
fn shrink_if_sparse<V>(map: &mut HashMap<String, V>) {
    if map.capacity() > 64 && map.len() < map.capacity() / 4 {
        map.shrink_to(map.len() * 2);
    }
}

/// 128 random bits, hex. Falls back to a time-and-counter id only if the OS has no randomness.
fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes[..8].copy_from_slice(&n.to_le_bytes());
        bytes[8..].copy_from_slice(&(t as u64).to_le_bytes());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::Semaphore;

    fn defaults() -> ReplayLimits {
        ReplayLimits::of(&super::super::HttpConfig::default())
    }

    fn limits() -> ReplayLimits {
        ReplayLimits {
            events: 8,
            ..defaults()
        }
    }

    fn session() -> Arc<Session> {
        Arc::new(Session::new(Arc::new(Semaphore::new(4))))
    }

    #[test]
    fn store_is_bounded_and_ids_are_unique() {
        let store = SessionStore::new(2, Duration::from_secs(60), limits());
        let (a, _) = store.insert(session()).unwrap();
        let (b, _) = store.insert(session()).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(store.remove(&a, None));
        assert!(!store.remove(&a, None));
        assert!(store.get(&a, None).is_none());
        assert!(store.get(&b, None).is_some());
        assert!(store.insert(session()).is_ok());
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn a_full_store_evicts_the_least_recently_used_idle_session() {
        let store = SessionStore::new(2, Duration::from_secs(60), limits());
        let (a, _) = store.insert(session()).unwrap();
        let (b, b_session) = store.insert(session()).unwrap();
        // `b` listens on its standalone stream: busy, never evicted.
        let reader = b_session.standalone.follow();
        let (c, _) = store.insert(session()).unwrap();
        assert!(store.get(&a, None).is_none(), "the idle one went");
        assert!(store.get(&b, None).is_some());
        assert!(store.get(&c, None).is_some());
        assert_eq!(store.len(), 2);
        // `c` is idle too, and now the only candidate.
        let (_d, _) = store.insert(session()).unwrap();
        assert!(store.get(&c, None).is_none());
        drop(reader);
        // With the reader gone, `b` can make room as well.
        assert!(store.insert(session()).is_ok());
        assert!(store.get(&b, None).is_none());
    }

    #[test]
    fn a_store_of_busy_sessions_refuses() {
        let store = SessionStore::new(1, Duration::from_secs(60), limits());
        let (_a, a) = store.insert(session()).unwrap();
        let reader = a.standalone.follow();
        assert_eq!(store.insert(session()).err(), Some(StoreFull));
        drop(reader);
        assert!(store.insert(session()).is_ok());
    }

    #[test]
    fn the_table_shrinks_when_sessions_go() {
        let store = SessionStore::new(10_000, Duration::from_millis(0), limits());
        let ids: Vec<String> = (0..1000)
            .map(|_| store.insert(session()).unwrap().0)
            .collect();
        let full = store.lock().capacity();
        assert!(full >= 1000);
        // Ended one by one (DELETE).
        for id in &ids[..900] {
            assert!(store.remove(id, None));
        }
        let sparse = store.lock().capacity();
        assert!(
            sparse < full / 2,
            "{sparse} of {full} kept for 100 sessions"
        );
        assert!(sparse >= 100);
        // Expired all at once.
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(store.sweep(), 100);
        assert_eq!(store.len(), 0);
        assert!(store.lock().capacity() <= 64);
    }

    /// What a session's logs hold for `Last-Event-ID` replay, in bytes, read back through
    /// replay itself.
    async fn replayable_bytes(s: &HttpSession) -> usize {
        let mut total = 0;
        for id in 0..=64 {
            let Some(log) = s.stream(id) else { continue };
            log.close();
            // From the oldest event retained (what was evicted cannot be replayed).
            let mut after = 0;
            let mut rx = loop {
                match log.attach(after) {
                    Ok(c) => break c,
                    Err(_) => after += 1,
                }
            };
            while let Some(b) = std::future::poll_fn(|cx| rx.poll_next(cx)).await {
                total += b.len();
            }
        }
        total
    }

    fn big(n: usize) -> crate::wire::OutgoingMessage {
        crate::wire::OutgoingMessage::Notification {
            method: "notifications/message",
            params: serde_json::json!({"level": "info", "data": "x".repeat(n)}),
        }
    }

    #[tokio::test]
    async fn replay_history_is_bounded_in_bytes() {
        // Issue #13: two sessions with 32 large streaming calls each kept everything until
        // idle expiry (32 streams x 256 events per session, whatever their size).
        let store = SessionStore::new(10_000, Duration::from_secs(600), defaults());
        let mut sessions = Vec::new();
        for _ in 0..2 {
            let (_, s) = store.insert(session()).unwrap();
            for _ in 0..32 {
                let log = s.open_stream();
                for _ in 0..2 {
                    log.append(&big(1024 * 1024));
                }
                log.close();
            }
            sessions.push(s);
        }
        let mut total = 0;
        for s in &sessions {
            let b = replayable_bytes(s).await;
            assert!(b <= 34 * 1024 * 1024, "one session retains {b} bytes");
            total += b;
        }
        assert!(
            total <= 68 * 1024 * 1024,
            "two sessions retain {total} bytes"
        );
        assert_eq!(
            store.retained_bytes(),
            total,
            "the store's own accounting agrees"
        );
    }

    #[test]
    fn the_server_budget_spans_sessions_and_evicts_the_oldest() {
        let store = SessionStore::new(
            100,
            Duration::from_secs(600),
            ReplayLimits {
                total_bytes: 3 * 1024 * 1024,
                ..defaults()
            },
        );
        let (_, old) = store.insert(session()).unwrap();
        let first = old.open_stream();
        first.append(&big(1024 * 1024));
        for _ in 0..10 {
            let (_, s) = store.insert(session()).unwrap();
            s.open_stream().append(&big(1024 * 1024));
            assert!(store.retained_bytes() <= 3 * 1024 * 1024);
        }
        assert!(store.retained_bytes() > 2 * 1024 * 1024);
        // The oldest event went first.
        assert!(first.attach(0).is_err());
    }

    #[test]
    fn sessions_belong_to_their_principal() {
        let store = SessionStore::new(10, Duration::from_secs(60), limits());
        let alice = Principal {
            subject: "alice".into(),
            scopes: Vec::new(),
        };
        let bob = Principal {
            subject: "bob".into(),
            scopes: Vec::new(),
        };
        let (id, _) = store
            .insert(session().with_principal(Some(alice.clone())))
            .unwrap();
        assert!(store.get(&id, Some(&bob)).is_none());
        assert!(store.get(&id, None).is_none());
        assert!(!store.remove(&id, Some(&bob)));
        assert!(store.get(&id, Some(&alice)).is_some());
        assert!(store.remove(&id, Some(&alice)));
    }

    #[test]
    fn idle_sessions_expire() {
        let store = SessionStore::new(10, Duration::from_millis(0), limits());
        let (a, s) = store.insert(session()).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(store.sweep(), 1);
        assert!(store.get(&a, None).is_none());
        assert!(s.standalone.is_closed());
        assert_eq!(store.len(), 0);
    }
}
