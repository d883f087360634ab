//! The legacy-era session table: bounded, with idle expiry, so sessions never leak. Each
//! session belongs to the principal that created it, and its replay history draws from a
//! per-session and a server-wide byte budget ([`replay`](super::replay)).
//!
//! Two halves: the records ([`SessionRecord`]s, what another instance would need) live in a
//! [`SessionStore`] (in memory by default, [`HttpConfig::session_store`](super::HttpConfig)
//! to choose), which decides the cap, the eviction and the idle expiry on the `now` given
//! here; the live state (the engine's [`Session`], its stream logs) stays in this process's
//! table, keyed by the same id. A session is usable while both hold it.
//!
//! A full table never locks new clients out: creating a session first drops the expired
//! ones, then evicts the least recently used *idle* session, one with no call in flight and
//! no open SSE response (a GET stream or a streamed POST still being read). Its client gets
//! `404` on its next request and re-initializes, as the spec expects of a lost session. Only
//! when every session is busy is a new one refused ([`StoreError::Full`]), and the endpoint
//! answers `503` with `Retry-After`. The store evicts atomically with the admission, so many
//! admissions at once each find their own victim (issue #26); a store that reads its
//! candidates before evicting retries a bounded number of rounds, then answers
//! [`StoreError::Contended`]. Each refusal is counted and logged by reason
//! ([`refusals`](super::refusals)).
//!
//! A later `logging/setLevel` (answered as JSON) is written back to the record
//! ([`SessionTable::persist`]). Not yet in the record after creation: the level set on a
//! streamed request, and resource subscriptions, which the engine's session holds without
//! a way to list them (the core crate of issue #14 will report changes).
//!
//! A session whose record exists but which this process does not hold live (another
//! instance sharing the store opened it) is rebuilt from the record when it is used: the
//! negotiated version, the client's capabilities and info, the log level and the owning
//! principal. Its SSE history and any call in flight stay with the instance that has them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::Principal;
use crate::engine::Session;
use crate::store::{SessionRecord, SessionStore, StoreError, StoredPrincipal};

use super::cluster::{ReaderGuard, Shared};

/// How often a live session's record is refreshed in the store while it is used, when a
/// message bus tells this instance of sessions ended elsewhere (see
/// [`SessionTable::touched_lately`]). Requests in between cost no store round trip.
pub(crate) const TOUCH_EVERY: Duration = Duration::from_secs(1);

use super::replay::{LogSink, MemoryEventStore, ReplayLimits, StreamLog};

/// One legacy session over HTTP: the engine's session plus its SSE streams, whose logs the
/// table's [`MemoryEventStore`] holds.
pub(crate) struct HttpSession {
    id: String,
    /// When it was last used, in the table's order of use (for the live cap).
    last_used: AtomicU64,
    /// When its record's expiry was last refreshed in the store (wall-clock milliseconds).
    touched: AtomicU64,
    /// The message bus's epoch when the record was last refreshed ([`NO_EPOCH`]: none).
    epoch: AtomicU64,
    pub(crate) session: Arc<Session>,
    /// Stream 0: the standalone GET stream, for messages not tied to a request.
    pub(crate) standalone: Arc<StreamLog>,
    /// [`standalone`](Self::standalone) as the sink of the session's JSON-answered requests.
    pub(crate) standalone_sink: Arc<dyn crate::MessageSink>,
    events: Arc<MemoryEventStore>,
    limits: ReplayLimits,
    /// Open SSE responses reading from an external event store.
    store_readers: Arc<std::sync::atomic::AtomicUsize>,
    /// Whether this instance delivers the session's notifications (list changes, resource
    /// updates): until another instance sharing the session takes them
    /// ([`BusMessage::NotificationsTaken`](crate::store::BusMessage::NotificationsTaken)).
    notifies: std::sync::atomic::AtomicBool,
    /// The instance that took them, while this one does not deliver them.
    notifier: std::sync::Mutex<Option<String>>,
}

impl HttpSession {
    /// With `shared` (an external event store), the standalone stream is written through it;
    /// with its bus, this instance's server-to-client request ids carry its name.
    fn new(
        id: String,
        session: Arc<Session>,
        events: &Arc<MemoryEventStore>,
        limits: ReplayLimits,
        shared: Option<&Arc<Shared>>,
    ) -> Self {
        let owner = session.principal().map(|p| p.subject);
        let standalone = events.open_session(&id, owner.as_deref());
        let standalone_sink: Arc<dyn crate::MessageSink> = match shared {
            Some(shared) => {
                if let Some(bus) = &shared.bus {
                    session.set_request_id_prefix(bus.instance());
                }
                Arc::new(shared.sink(&id, owner, 0, false))
            }
            None => Arc::new(LogSink(standalone.clone())),
        };
        Self {
            id,
            last_used: AtomicU64::new(0),
            touched: AtomicU64::new(now_ms()),
            epoch: AtomicU64::new(bus_epoch(shared)),
            session,
            standalone_sink,
            standalone,
            events: events.clone(),
            limits,
            store_readers: Arc::default(),
            notifies: std::sync::atomic::AtomicBool::new(true),
            notifier: std::sync::Mutex::default(),
        }
    }

    /// Whether this instance delivers the session's notifications.
    pub(crate) fn notifies(&self) -> bool {
        self.notifies.load(Ordering::Relaxed)
    }

    /// This instance delivers the session's notifications (`true`), or another does.
    pub(crate) fn set_notifies(&self, on: bool) {
        self.notifies.store(on, Ordering::Relaxed);
    }

    /// Instance `name` took the session's notifications: this one stops delivering them.
    fn set_notifier(&self, name: Option<String>) {
        *self
            .notifier
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = name;
        self.set_notifies(false);
    }

    /// The instance that delivers the session's notifications, when it is not this one and
    /// is known.
    pub(crate) fn notifier(&self) -> Option<String> {
        if self.notifies() {
            return None;
        }
        self.notifier
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Counts an SSE response reading this session's streams from an external store.
    pub(crate) fn store_reader(&self) -> ReaderGuard {
        ReaderGuard::new(&self.store_readers)
    }

    /// Whether `principal` may use this session: the one that created it (by subject), or
    /// anyone when it was created without authentication.
    fn belongs_to(&self, principal: Option<&Principal>) -> bool {
        owned_by(
            self.session
                .principal()
                .as_ref()
                .map(|p| p.subject.as_str()),
            principal,
        )
    }

    /// The subject that owns this session's streams.
    pub(crate) fn owner(&self) -> Option<String> {
        self.session.principal().map(|p| p.subject)
    }

    /// The session's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Whether the session is in use: a call in flight, or an SSE response open on one of its
    /// streams. A busy session is never evicted or expired.
    fn is_busy(&self) -> bool {
        self.session.in_flight() > 0
            || self.events.has_reader(&self.id)
            || self.store_readers.load(Ordering::Relaxed) > 0
    }

    /// A new resumable stream for a POST response (a closed, unbounded-by-nothing log if the
    /// session just ended, so the caller needs no special case: nothing is kept).
    pub(crate) fn open_stream(&self) -> Arc<StreamLog> {
        self.events.new_log(&self.id).unwrap_or_else(|| {
            let log = StreamLog::new(0, self.limits, Vec::new());
            log.close();
            log
        })
    }

    /// A stream by id (0 is the standalone stream).
    #[cfg(test)]
    pub(crate) fn stream(&self, id: u64) -> Option<Arc<StreamLog>> {
        let owner = self.owner();
        let scope = crate::store::ReplayScope {
            session: &self.id,
            principal: owner.as_deref(),
        };
        self.events.log(scope, id).ok()
    }

    fn close(&self) {
        self.session.cancel_all();
        self.standalone.close();
        self.events.end_session(&self.id);
    }
}

/// An epoch no bus reports: a session validated at it is checked again.
const NO_EPOCH: u64 = u64::MAX;

/// The bus's epoch ([`MessageBus::epoch`](crate::store::MessageBus::epoch)), or
/// [`NO_EPOCH`] while it may be losing messages (or there is no bus).
fn bus_epoch(shared: Option<&Arc<Shared>>) -> u64 {
    shared
        .and_then(|s| s.bus.as_ref())
        .and_then(|b| b.epoch())
        .unwrap_or(NO_EPOCH)
}

/// The record of `session`, created at `now`.
fn record_of(session: &Session, id: &str, now: u64, idle: Duration) -> SessionRecord {
    let version = session
        .negotiated()
        .map_or_else(String::new, |v| v.as_str().to_owned());
    let idle = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
    let mut record = SessionRecord::new(id, version, now, idle);
    if let Some((_, capabilities, level)) = session.negotiated_scope() {
        record.client_capabilities = (*capabilities).clone();
        record.log_level = level.map(|l| l.as_str().to_owned());
    }
    record.client_info = session.client_info();
    record.principal = session.principal().map(|p| StoredPrincipal {
        subject: p.subject,
        scopes: p.scopes,
    });
    record
}

/// Whether `principal` may use a session owned by `owner` (a subject): the owner, or anyone
/// when the session was created without authentication.
fn owned_by(owner: Option<&str>, principal: Option<&Principal>) -> bool {
    owner.is_none_or(|owner| principal.is_some_and(|p| p.subject == owner))
}

/// Whether `principal` may use the session of `record`: [`HttpSession::belongs_to`]'s rule.
fn record_belongs_to(record: &SessionRecord, principal: Option<&Principal>) -> bool {
    owned_by(
        record.principal.as_ref().map(|p| p.subject.as_str()),
        principal,
    )
}

/// The wall clock, in milliseconds since the Unix epoch: the `now` of the session records.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Sessions by id: their records in a [`SessionStore`], their live state here.
pub(crate) struct SessionTable {
    /// Rebuilds the live state of a session whose record another instance wrote; `None`
    /// (tests): such sessions are not found.
    engine: Option<crate::engine::Engine>,
    /// The most sessions kept live (`None`: as many as the store holds).
    live_cap: Option<usize>,
    /// The order of use, for the live cap.
    uses: AtomicU64,
    live: Mutex<LiveMap>,
    records: Arc<dyn SessionStore>,
    max: usize,
    idle: Duration,
    replay: ReplayLimits,
    /// Every session's replay logs.
    events: Arc<MemoryEventStore>,
    /// Where session ids' random bytes come from (the OS; a test can make it fail).
    random: fn(&mut [u8]) -> Result<(), getrandom::Error>,
    /// The external event store and bus, when instances share them.
    shared: Option<Arc<Shared>>,
}

impl SessionTable {
    pub(crate) fn new(
        records: Arc<dyn SessionStore>,
        max: usize,
        idle: Duration,
        replay: ReplayLimits,
    ) -> Self {
        Self {
            engine: None,
            live_cap: None,
            uses: AtomicU64::new(0),
            live: Mutex::new(LiveMap::default()),
            records,
            max,
            idle,
            replay,
            events: Arc::new(MemoryEventStore::new(replay)),
            random: getrandom::fill,
            shared: None,
        }
    }

    /// Writes and follows every session's streams through `shared`'s event store.
    pub(crate) fn with_shared(mut self, shared: Option<Arc<Shared>>) -> Self {
        self.shared = shared;
        self
    }

    /// The external event store and bus, if any.
    pub(crate) fn shared(&self) -> Option<&Arc<Shared>> {
        self.shared.as_ref()
    }

    /// The live session `id`, if this process holds it (no store round trip).
    pub(crate) fn live(&self, id: &str) -> Option<Arc<HttpSession>> {
        self.lock().get(id).cloned()
    }

    /// Sessions whose record exists but which this process does not hold live (another
    /// instance sharing the store opened them) are rebuilt with `engine` when they are used.
    pub(crate) fn restoring_with(mut self, engine: crate::engine::Engine) -> Self {
        self.engine = Some(engine);
        self
    }

    /// Keeps at most `cap` sessions live (see [`HttpConfig::max_live_sessions`]); only
    /// meaningful with [`restoring_with`](Self::restoring_with).
    ///
    /// [`HttpConfig::max_live_sessions`]: super::HttpConfig::max_live_sessions
    pub(crate) fn with_live_cap(mut self, cap: Option<usize>) -> Self {
        self.live_cap = cap.map(|c| c.max(1));
        self
    }

    /// The record store's round trips so far ([`SessionStore::round_trips`]).
    pub(crate) fn store_round_trips(&self) -> Option<u64> {
        self.records.round_trips()
    }

    /// Marks `s` used now, for the live cap's order of use. Without a cap nothing reads the
    /// order, and the count every request would write (one for all sessions, moving between
    /// the workers' caches) is not kept.
    fn used(&self, s: &HttpSession) {
        if self.live_cap.is_none() {
            return;
        }
        let n = self.uses.fetch_add(1, Ordering::Relaxed) + 1;
        s.last_used.store(n, Ordering::Relaxed);
    }

    /// Past the live cap, drops the live state of the least recently used idle sessions
    /// (their records stay: they are rebuilt when used again).
    fn shed_live(&self) {
        let Some(cap) = self.live_cap else {
            return;
        };
        let gone: Vec<Arc<HttpSession>> = {
            let mut map = self.lock();
            if map.len() <= cap {
                return;
            }
            let mut idle: Vec<(u64, String)> = map
                .values()
                .filter(|s| !s.is_busy())
                .map(|s| (s.last_used.load(Ordering::Relaxed), s.id.clone()))
                .collect();
            idle.sort_unstable();
            let excess = map.len() - cap;
            let gone = idle
                .into_iter()
                .take(excess)
                .filter_map(|(_, id)| map.remove(&id))
                .collect();
            shrink_if_sparse(&mut map);
            gone
        };
        for s in &gone {
            s.close();
        }
    }

    /// The bytes of replay history retained by all sessions.
    #[cfg(test)]
    pub(crate) fn retained_bytes(&self) -> usize {
        self.events.retained_bytes()
    }

    /// The replay logs, for resumption through [`EventStore`](crate::store::EventStore).
    pub(crate) fn events(&self) -> &Arc<MemoryEventStore> {
        &self.events
    }

    // Lock order: the record store's lock (if it has one), then this one. This one is never
    // held while calling the store.
    fn lock(&self) -> std::sync::MutexGuard<'_, LiveMap> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Live sessions in this process.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    fn is_busy(&self, id: &str) -> bool {
        self.lock().get(id).is_some_and(|s| s.is_busy())
    }

    /// Drops the live state of `ids` and closes them.
    fn forget(&self, ids: &[String]) {
        let gone: Vec<Arc<HttpSession>> = {
            let mut map = self.lock();
            let gone = ids.iter().filter_map(|id| map.remove(id)).collect();
            shrink_if_sparse(&mut map);
            gone
        };
        for s in &gone {
            s.close();
        }
    }

    /// Stores a session under a fresh random id. When the table is full, the expired
    /// sessions go first, then the least recently used idle one (see the module docs).
    pub(crate) async fn insert(
        &self,
        session: Arc<Session>,
    ) -> Result<(String, Arc<HttpSession>), StoreError> {
        let id = new_session_id(self.random)?;
        session.set_key(&id);
        let now = now_ms();
        let keep = |id: &str| self.is_busy(id);
        let created = self
            .records
            .create(
                record_of(&session, &id, now, self.idle),
                self.max,
                now,
                &keep,
            )
            .await?;
        if !created.evicted.is_empty() {
            tracing::debug!(
                evicted = created.evicted.len(),
                "made room in the session table"
            );
            self.forget(&created.evicted);
            self.announce_ended(&created.evicted).await;
        }
        let http = Arc::new(HttpSession::new(
            id.clone(),
            session,
            &self.events,
            self.replay,
            self.shared.as_ref(),
        ));
        self.used(&http);
        self.lock().insert(id.clone(), http.clone());
        self.shed_live();
        Ok((id, http))
    }

    /// A live session of `principal`, refreshed. Another principal's session is not found,
    /// nor is an id of another form than ours (see [`minted_form`]).
    pub(crate) async fn get(
        &self,
        id: &str,
        principal: Option<&Principal>,
    ) -> Result<Option<Arc<HttpSession>>, StoreError> {
        if !minted_form(id) {
            return Ok(None);
        }
        let Some(s) = self.lock().get(id).cloned() else {
            // Boxed: rare, and the future of every call would otherwise be as large.
            return Box::pin(self.restore(id, principal)).await;
        };
        if !s.belongs_to(principal) {
            return Ok(None);
        }
        let now = now_ms();
        if !self.touched_lately(&s, now) {
            // Read before the touch: a DELETE after it is heard at this epoch, or changes it.
            let epoch = bus_epoch(self.shared.as_ref());
            if self.records.touch(id, now).await?.is_none() {
                // Expired, or ended elsewhere.
                self.forget(&[id.to_owned()]);
                return Ok(None);
            }
            s.touched.store(now, Ordering::Relaxed);
            s.epoch.store(epoch, Ordering::Relaxed);
        }
        self.used(&s);
        Ok(Some(s))
    }

    /// Whether a live session's record was refreshed less than [`TOUCH_EVERY`] ago, so that
    /// this request need not refresh it again. Only with a message bus: then a `DELETE`, or
    /// an eviction, on another instance reaches this one as a broadcast
    /// ([`BusMessage::SessionEnded`](crate::store::BusMessage::SessionEnded)) instead of as the next touch's "gone", and the record's expiry
    /// (the idle timeout, minutes) is refreshed at least every [`TOUCH_EVERY`] while the
    /// session is used. Without a bus every request touches the record.
    ///
    /// Only while the bus hears everything, at the epoch the record was last refreshed at
    /// ([`MessageBus::epoch`](crate::store::MessageBus::epoch)): after the bus's
    /// subscription was lost, a `DELETE`'s broadcast may have been missed, so each live
    /// session's next request checks its record again (one round trip each, once).
    fn touched_lately(&self, s: &HttpSession, now: u64) -> bool {
        let epoch = s.epoch.load(Ordering::Relaxed);
        self.shared.as_ref().is_some_and(|sh| sh.bus.is_some())
            && epoch != NO_EPOCH
            && epoch == bus_epoch(self.shared.as_ref())
            && now.saturating_sub(s.touched.load(Ordering::Relaxed))
                < TOUCH_EVERY.as_millis() as u64
            && TOUCH_EVERY < self.idle
    }

    /// Tells the other instances that `ids` ended (deleted or evicted), so that they drop
    /// their live state now rather than at their next touch of the record.
    async fn announce_ended(&self, ids: &[String]) {
        let Some(bus) = self.shared.as_ref().and_then(|s| s.bus.as_ref()) else {
            return;
        };
        for id in ids {
            if let Err(e) = bus
                .broadcast(id, crate::store::BusMessage::SessionEnded)
                .await
            {
                tracing::warn!(error = %e, "could not tell the other instances a session ended");
                if let Some(shared) = &self.shared {
                    shared.store_error(&e);
                }
            }
        }
    }

    /// Drops the live state of a session another instance ended
    /// ([`BusMessage::SessionEnded`](crate::store::BusMessage::SessionEnded)).
    pub(crate) fn ended_elsewhere(&self, id: &str) {
        self.forget(&[id.to_owned()]);
    }

    /// Instance `by` took the notifications of session `id`
    /// ([`BusMessage::NotificationsTaken`](crate::store::BusMessage::NotificationsTaken)).
    pub(crate) fn taken_elsewhere(&self, id: &str, by: Option<String>) {
        if let Some(s) = self.lock().get(id) {
            s.set_notifier(by);
        }
    }

    /// The live state of a session of `principal` that this process does not hold, rebuilt
    /// from its record (written by another instance sharing the store), refreshed.
    async fn restore(
        &self,
        id: &str,
        principal: Option<&Principal>,
    ) -> Result<Option<Arc<HttpSession>>, StoreError> {
        let Some(engine) = &self.engine else {
            return Ok(None);
        };
        let now = now_ms();
        let Some(record) = self.records.load(id, now).await? else {
            return Ok(None);
        };
        if !record_belongs_to(&record, principal) {
            return Ok(None);
        }
        let Some(version) = crate::ProtocolVersion::parse(&record.protocol_version) else {
            return Ok(None);
        };
        if self.records.touch(id, now).await?.is_none() {
            return Ok(None);
        }
        // The record keeps no claims: a restored session's caller is matched by its subject
        // and scopes only.
        let owner = record
            .principal
            .map(|p| Principal::new(p.subject, p.scopes));
        let session = engine.new_session().with_principal(owner);
        session.set_key(id);
        let level = record
            .log_level
            .and_then(|l| serde_json::from_value(serde_json::Value::String(l)).ok());
        session.restore(
            version,
            record.client_capabilities,
            record.client_info,
            level,
        );
        let http = Arc::new(HttpSession::new(
            id.to_owned(),
            session,
            &self.events,
            self.replay,
            self.shared.as_ref(),
        ));
        // Another request of the same session may have restored it meanwhile: one wins.
        let http = self.lock().entry(id.to_owned()).or_insert(http).clone();
        self.used(&http);
        self.shed_live();
        if let Some(shared) = &self.shared {
            shared.take_notifications(&http).await;
        }
        Ok(Some(http))
    }

    /// Ends a session of `principal`; returns whether it existed (another principal's does
    /// not, nor one whose id is of another form than ours: [`minted_form`]). A session this
    /// process does not hold live is ended through its record.
    pub(crate) async fn remove(
        &self,
        id: &str,
        principal: Option<&Principal>,
    ) -> Result<bool, StoreError> {
        if !minted_form(id) {
            return Ok(false);
        }
        let live = self.lock().get(id).cloned();
        match live {
            Some(s) if !s.belongs_to(principal) => return Ok(false),
            Some(_) => {}
            None => match self.records.load(id, now_ms()).await? {
                Some(record) if record_belongs_to(&record, principal) => {}
                _ => return Ok(false),
            },
        }
        let existed = self.records.delete(id).await?;
        self.forget(&[id.to_owned()]);
        if let Some(shared) = &self.shared {
            shared.drop_history(id);
        }
        self.announce_ended(&[id.to_owned()]).await;
        Ok(existed)
    }

    /// Writes what the engine's session changed since creation (its log level) into the
    /// record, with compare-and-set; a concurrent change is retried once.
    pub(crate) async fn persist(&self, http: &HttpSession) -> Result<(), StoreError> {
        let level = http.session.log_level().map(|l| l.as_str().to_owned());
        for _ in 0..2 {
            let Some(mut record) = self.records.load(&http.id, now_ms()).await? else {
                return Ok(());
            };
            if record.log_level == level {
                return Ok(());
            }
            let version = record.version;
            record.log_level = level.clone();
            match self.records.save(record, version).await {
                Err(StoreError::Conflict { .. }) => continue,
                other => return other.map(drop),
            }
        }
        Ok(())
    }

    /// Every live session (for broadcasting list changes).
    pub(crate) fn all(&self) -> Vec<Arc<HttpSession>> {
        self.lock().values().cloned().collect()
    }

    /// Drops sessions idle for longer than the expiry (busy ones stay), and gives their
    /// memory back.
    pub(crate) async fn sweep(&self) -> Result<usize, StoreError> {
        let keep = |id: &str| self.is_busy(id);
        let expired = self.records.expire(now_ms(), &keep).await?;
        self.forget(&expired);
        Ok(expired.len())
    }
}

/// The live sessions by id. Hashed with foldhash, not SipHash: its keys are ids the server
/// minted at random, and a client's id is only looked up, after [`minted_form`] (this runs on
/// every request of a session).
type LiveMap = HashMap<String, Arc<HttpSession>, foldhash::fast::RandomState>;

/// A map never shrinks by itself: after a burst of 10,000 sessions its table would keep
/// room for 10,000 (about 0.5 MiB) for the life of the server. Shrinks it once it is less
/// than a quarter full, keeping room to double, so that a table going up and down around
/// one size does not reallocate on every change.
fn shrink_if_sparse<V, S: std::hash::BuildHasher>(map: &mut HashMap<String, V, S>) {
    if map.capacity() > 64 && map.len() < map.capacity() / 4 {
        map.shrink_to(map.len() * 2);
    }
}

/// The random bytes of a session id.
const SESSION_ID_BYTES: usize = 16;

/// 128 random bits, lowercase hex. Without OS randomness there is no session: a guessable id
/// would let anyone take a session over, so this fails closed (the client gets `503`).
fn new_session_id(
    random: fn(&mut [u8]) -> Result<(), getrandom::Error>,
) -> Result<String, StoreError> {
    let mut bytes = [0u8; SESSION_ID_BYTES];
    random(&mut bytes)
        .map_err(|e| StoreError::Unavailable(format!("no OS randomness for a session id: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Whether `id` has the form [`new_session_id`] mints: the check every id from a client
/// passes before any store sees it ([`SessionTable::get`] and [`SessionTable::remove`], the
/// only ways in; restoring, touching and loading happen behind them). Any other id (the
/// name of a store's own key such as Redis's `lru`, an overlong one, spaces, control
/// characters) names no session: the client gets `404`, as for an unknown session.
fn minted_form(id: &str) -> bool {
    // Every byte is looked at (no early exit), which lets the check run on whole words:
    // every request of a session carries its id.
    id.len() == 2 * SESSION_ID_BYTES
        && id.bytes().fold(true, |ok, b| {
            ok & (b.is_ascii_digit() | (b'a'..=b'f').contains(&b))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> ReplayLimits {
        ReplayLimits::of(&super::super::HttpConfig::default())
    }

    fn limits() -> ReplayLimits {
        ReplayLimits {
            events: 8,
            ..defaults()
        }
    }

    fn table(max: usize, idle: Duration, replay: ReplayLimits) -> SessionTable {
        SessionTable::new(
            Arc::new(crate::store::MemorySessionStore::new()),
            max,
            idle,
            replay,
        )
    }

    fn session() -> Arc<Session> {
        crate::engine::Engine::new(
            crate::McpServerConfig::default(),
            Arc::new(crate::McpToolRegistry::new()),
        )
        .new_session()
    }

    #[tokio::test]
    async fn the_order_of_use_is_kept_only_under_a_live_cap() {
        let plain = table(4, Duration::from_secs(60), limits());
        let (id, _) = plain.insert(session()).await.unwrap();
        for _ in 0..3 {
            assert!(plain.get(&id, None).await.unwrap().is_some());
        }
        assert_eq!(plain.uses.load(Ordering::Relaxed), 0);
        let capped = table(4, Duration::from_secs(60), limits()).with_live_cap(Some(2));
        let (id, _) = capped.insert(session()).await.unwrap();
        for _ in 0..3 {
            assert!(capped.get(&id, None).await.unwrap().is_some());
        }
        assert_eq!(capped.uses.load(Ordering::Relaxed), 4);
    }

    #[tokio::test]
    async fn store_is_bounded_and_ids_are_unique() {
        let store = table(2, Duration::from_secs(60), limits());
        let (a, _) = store.insert(session()).await.unwrap();
        let (b, _) = store.insert(session()).await.unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(store.remove(&a, None).await.unwrap());
        assert!(!store.remove(&a, None).await.unwrap());
        assert!(store.get(&a, None).await.unwrap().is_none());
        assert!(store.get(&b, None).await.unwrap().is_some());
        assert!(store.insert(session()).await.is_ok());
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn only_ids_of_the_minted_form_pass() {
        let minted = new_session_id(getrandom::fill).unwrap();
        assert!(minted_form(&minted), "{minted}");
        let long = "0".repeat(33);
        let upper = minted.to_ascii_uppercase();
        for bad in ["", "lru", "exp", "tick", &minted[1..], &long, "a b", &upper] {
            assert!(!minted_form(bad), "{bad:?}");
        }
        assert!(!minted_form("0123456789abcdef0123456789abcde\u{1}"));
    }

    #[tokio::test]
    async fn without_os_randomness_no_session_is_opened() {
        fn broken(_: &mut [u8]) -> Result<(), getrandom::Error> {
            Err(getrandom::Error::UNSUPPORTED)
        }
        let mut store = table(2, Duration::from_secs(60), limits());
        store.random = broken;
        let refused = store.insert(session()).await;
        assert!(
            matches!(&refused, Err(StoreError::Unavailable(m)) if m.contains("randomness")),
            "{:?}",
            refused.map(|(id, _)| id)
        );
        assert_eq!(store.len(), 0);
    }

    #[tokio::test]
    async fn a_full_store_evicts_the_least_recently_used_idle_session() {
        let store = table(2, Duration::from_secs(60), limits());
        let (a, _) = store.insert(session()).await.unwrap();
        let (b, b_session) = store.insert(session()).await.unwrap();
        // `b` listens on its standalone stream: busy, never evicted.
        let reader = b_session.standalone.follow();
        let (c, _) = store.insert(session()).await.unwrap();
        assert!(
            store.get(&a, None).await.unwrap().is_none(),
            "the idle one went"
        );
        assert!(store.get(&b, None).await.unwrap().is_some());
        assert!(store.get(&c, None).await.unwrap().is_some());
        assert_eq!(store.len(), 2);
        // `c` is idle too, and now the only candidate.
        let (_d, _) = store.insert(session()).await.unwrap();
        assert!(store.get(&c, None).await.unwrap().is_none());
        drop(reader);
        // With the reader gone, `b` can make room as well.
        assert!(store.insert(session()).await.is_ok());
        assert!(store.get(&b, None).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_store_of_busy_sessions_refuses() {
        let store = table(1, Duration::from_secs(60), limits());
        let (_a, a) = store.insert(session()).await.unwrap();
        let reader = a.standalone.follow();
        assert_eq!(store.insert(session()).await.err(), Some(StoreError::Full));
        drop(reader);
        assert!(store.insert(session()).await.is_ok());
    }

    #[tokio::test]
    async fn the_table_shrinks_when_sessions_go() {
        let store = table(10_000, Duration::from_millis(0), limits());
        let mut ids = Vec::new();
        for _ in 0..1000 {
            ids.push(store.insert(session()).await.unwrap().0);
        }
        let full = store.lock().capacity();
        assert!(full >= 1000);
        // Ended one by one (DELETE).
        for id in &ids[..900] {
            assert!(store.remove(id, None).await.unwrap());
        }
        let sparse = store.lock().capacity();
        assert!(
            sparse < full / 2,
            "{sparse} of {full} kept for 100 sessions"
        );
        assert!(sparse >= 100);
        // Expired all at once (an idle timeout of 0 expires at once).
        assert_eq!(store.sweep().await.unwrap(), 100);
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
        let store = table(10_000, Duration::from_secs(600), defaults());
        let mut sessions = Vec::new();
        for _ in 0..2 {
            let (_, s) = store.insert(session()).await.unwrap();
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

    #[tokio::test]
    async fn the_server_budget_spans_sessions_and_evicts_the_oldest() {
        let store = table(
            100,
            Duration::from_secs(600),
            ReplayLimits {
                total_bytes: 3 * 1024 * 1024,
                ..defaults()
            },
        );
        let (_, old) = store.insert(session()).await.unwrap();
        let first = old.open_stream();
        first.append(&big(1024 * 1024));
        for _ in 0..10 {
            let (_, s) = store.insert(session()).await.unwrap();
            s.open_stream().append(&big(1024 * 1024));
            assert!(store.retained_bytes() <= 3 * 1024 * 1024);
        }
        assert!(store.retained_bytes() > 2 * 1024 * 1024);
        // The oldest event went first.
        assert!(first.attach(0).is_err());
    }

    #[tokio::test]
    async fn sessions_belong_to_their_principal() {
        let store = table(10, Duration::from_secs(60), limits());
        let alice = Principal::new("alice", Vec::new());
        let bob = Principal::new("bob", Vec::new());
        let (id, _) = store
            .insert(session().with_principal(Some(alice.clone())))
            .await
            .unwrap();
        assert!(store.get(&id, Some(&bob)).await.unwrap().is_none());
        assert!(store.get(&id, None).await.unwrap().is_none());
        assert!(!store.remove(&id, Some(&bob)).await.unwrap());
        assert!(store.get(&id, Some(&alice)).await.unwrap().is_some());
        assert!(store.remove(&id, Some(&alice)).await.unwrap());
    }

    #[tokio::test]
    async fn idle_sessions_expire() {
        let store = table(10, Duration::from_millis(0), limits());
        let (a, s) = store.insert(session()).await.unwrap();
        assert_eq!(store.sweep().await.unwrap(), 1);
        assert!(store.get(&a, None).await.unwrap().is_none());
        assert!(s.standalone.is_closed());
        assert_eq!(store.len(), 0);
    }
}
