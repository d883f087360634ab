//! The legacy-era session store: bounded, with idle expiry, so sessions never leak.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::engine::Session;

use super::sse::StreamLog;

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
    replay: usize,
}

/// How many finished POST streams a session keeps for resumption.
const RETAINED_STREAMS: usize = 32;

impl HttpSession {
    fn new(session: Arc<Session>, replay: usize) -> Self {
        let standalone = StreamLog::new(0, replay);
        Self {
            session,
            last_seen: Mutex::new(Instant::now()),
            standalone_sink: Arc::new(super::sse::LogSink(standalone.clone())),
            standalone,
            streams: Mutex::new(VecDeque::new()),
            next_stream: AtomicU64::new(1),
            replay,
        }
    }

    pub(crate) fn touch(&self) {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn idle_for(&self, now: Instant) -> Duration {
        now.saturating_duration_since(
            *self
                .last_seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// A new resumable stream for a POST response.
    pub(crate) fn open_stream(&self) -> Arc<StreamLog> {
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let log = StreamLog::new(id, self.replay);
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

/// Why a session could not be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StoreFull;

/// Sessions by id.
pub(crate) struct SessionStore {
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    max: usize,
    idle: Duration,
    replay: usize,
}

impl SessionStore {
    pub(crate) fn new(max: usize, idle: Duration, replay: usize) -> Self {
        Self {
            sessions: Mutex::new(HashMap::new()),
            max,
            idle,
            replay,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<HttpSession>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Stores a session under a fresh random id.
    pub(crate) fn insert(
        &self,
        session: Arc<Session>,
    ) -> Result<(String, Arc<HttpSession>), StoreFull> {
        let mut map = self.lock();
        if map.len() >= self.max {
            drop(map);
            self.sweep();
            map = self.lock();
            if map.len() >= self.max {
                return Err(StoreFull);
            }
        }
        let id = new_session_id();
        let http = Arc::new(HttpSession::new(session, self.replay));
        map.insert(id.clone(), http.clone());
        Ok((id, http))
    }

    /// A live session, refreshed.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<HttpSession>> {
        let s = self.lock().get(id).cloned()?;
        if s.idle_for(Instant::now()) > self.idle {
            self.remove(id);
            return None;
        }
        s.touch();
        Some(s)
    }

    /// Ends a session; returns whether it existed.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let removed = {
            let mut map = self.lock();
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

    fn session() -> Arc<Session> {
        Arc::new(Session::new(Arc::new(Semaphore::new(4))))
    }

    #[test]
    fn store_is_bounded_and_ids_are_unique() {
        let store = SessionStore::new(2, Duration::from_secs(60), 8);
        let (a, _) = store.insert(session()).unwrap();
        let (b, _) = store.insert(session()).unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert_eq!(store.insert(session()).err(), Some(StoreFull));
        assert!(store.remove(&a));
        assert!(!store.remove(&a));
        assert!(store.get(&a).is_none());
        assert!(store.get(&b).is_some());
        assert!(store.insert(session()).is_ok());
    }

    #[test]
    fn the_table_shrinks_when_sessions_go() {
        let store = SessionStore::new(10_000, Duration::from_millis(0), 8);
        let ids: Vec<String> = (0..1000)
            .map(|_| store.insert(session()).unwrap().0)
            .collect();
        let full = store.lock().capacity();
        assert!(full >= 1000);
        // Ended one by one (DELETE).
        for id in &ids[..900] {
            assert!(store.remove(id));
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

    #[test]
    fn idle_sessions_expire() {
        let store = SessionStore::new(10, Duration::from_millis(0), 8);
        let (a, s) = store.insert(session()).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(store.sweep(), 1);
        assert!(store.get(&a).is_none());
        assert!(s.standalone.is_closed());
        assert_eq!(store.len(), 0);
    }
}
