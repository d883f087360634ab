//! [`SessionStore`], its [`SessionRecord`], and the in-memory [`MemorySessionStore`].

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{StoreError, StoreFuture, ready};

/// The schema version of [`SessionRecord`]; a store refuses records of another.
pub const SESSION_RECORD_SCHEMA: u32 = 1;

/// The protocol era a session was created in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum SessionEra {
    /// 2025-11-25 and earlier: the `initialize` handshake and `Mcp-Session-Id`.
    Legacy,
}

/// The principal a session belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredPrincipal {
    /// Its subject: only this subject may use the session.
    pub subject: String,
    /// Its scopes when the session was created.
    pub scopes: Vec<String>,
}

/// A session as a shared store keeps it: what another instance needs to recognise it.
/// Times are wall-clock milliseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SessionRecord {
    /// [`SESSION_RECORD_SCHEMA`] when written.
    pub schema: u32,
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The era.
    pub era: SessionEra,
    /// The negotiated protocol version, such as `2025-11-25`.
    pub protocol_version: String,
    /// The client's `capabilities` from `initialize`.
    pub client_capabilities: Value,
    /// The client's `clientInfo`, if it sent one.
    pub client_info: Option<Value>,
    /// The principal that created the session; `None` without authentication.
    pub principal: Option<StoredPrincipal>,
    /// The level set with `logging/setLevel`, if any.
    pub log_level: Option<String>,
    /// Resource URIs the client subscribed to.
    pub subscriptions: Vec<String>,
    /// When the session was last used.
    pub last_seen: u64,
    /// How long it lives unused, in milliseconds.
    pub idle_timeout: u64,
    /// When it expires unless used again (`last_seen + idle_timeout`).
    pub expires_at: u64,
    /// Bumped by the store on every write: the compare-and-set token.
    pub version: u64,
}

impl SessionRecord {
    /// A fresh record of a legacy session `id` at `now`, living `idle_timeout` ms unused.
    pub fn new(
        id: impl Into<String>,
        protocol_version: impl Into<String>,
        now: u64,
        idle_timeout: u64,
    ) -> Self {
        Self {
            schema: SESSION_RECORD_SCHEMA,
            id: id.into(),
            era: SessionEra::Legacy,
            protocol_version: protocol_version.into(),
            client_capabilities: Value::Object(serde_json::Map::new()),
            client_info: None,
            principal: None,
            log_level: None,
            subscriptions: Vec::new(),
            last_seen: now,
            idle_timeout,
            expires_at: now.saturating_add(idle_timeout),
            version: 0,
        }
    }

    /// Whether the record has expired at `now`.
    pub fn is_expired(&self, now: u64) -> bool {
        now >= self.expires_at
    }

    /// Marks the record used at `now` (sliding expiry).
    pub fn touch(&mut self, now: u64) {
        self.last_seen = self.last_seen.max(now);
        self.expires_at = self.last_seen.saturating_add(self.idle_timeout);
    }

    /// The record as JSON, for a store that keeps bytes.
    pub fn encode(&self) -> Result<Vec<u8>, StoreError> {
        serde_json::to_vec(self).map_err(|e| StoreError::Corrupt(e.to_string()))
    }

    /// A record from [`encode`](Self::encode)'s bytes; refuses another schema version.
    pub fn decode(bytes: &[u8]) -> Result<Self, StoreError> {
        let record: Self =
            serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        if record.schema != SESSION_RECORD_SCHEMA {
            return Err(StoreError::Corrupt(format!(
                "session record schema {} (this build reads {SESSION_RECORD_SCHEMA})",
                record.schema
            )));
        }
        Ok(record)
    }
}

/// What [`SessionStore::create`] did to make room.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Created {
    /// Sessions removed to make room (expired, or the least recently used idle one): their
    /// live state must be dropped and their clients get `404`.
    pub evicted: Vec<String>,
}

/// The predicate that protects busy sessions: `true` for a session id that must not be
/// evicted or expired now (a call in flight, an open stream).
pub type Keep<'a> = &'a (dyn Fn(&str) -> bool + Sync);

/// Where 2025-11-25 sessions live.
///
/// The contract ([`contract::session_store`](super::contract::session_store) checks it):
/// - `create` stores a new record (version 1). When `max_sessions` are stored, it first drops
///   the expired records that `keep` does not protect, then, if still full, the least recently
///   used record that `keep` does not protect, and reports what it removed; when every record
///   is protected it fails with [`StoreError::Full`]. A duplicate id is [`StoreError::Exists`].
///   The eviction is atomic with the admission: many `create`s at once into a full table of
///   idle records each evict one of their own and none is refused. A store that must read
///   its candidates first makes a bounded number of rounds, then fails with
///   [`StoreError::Contended`].
/// - `load` and `touch` see only unexpired records; `touch` slides the expiry to
///   `now + idle_timeout` and returns it. An expired record is removed.
/// - `save` replaces a record if its version is still `expected_version`, else
///   [`StoreError::Conflict`]; it bumps the version.
/// - `delete` removes a record and says whether it existed.
/// - `expire` removes the expired records that `keep` does not protect and returns their ids.
///
/// An implementation that spans instances protects busy sessions of other instances too, for
/// example with a busy lease in its own bookkeeping; `keep` answers for this instance only.
pub trait SessionStore: Send + Sync + std::fmt::Debug {
    /// Stores `record` under its id (see the trait docs for the cap).
    fn create<'a>(
        &'a self,
        record: SessionRecord,
        max_sessions: usize,
        now: u64,
        keep: Keep<'a>,
    ) -> StoreFuture<'a, Created>;

    /// The unexpired record `id`.
    fn load<'a>(&'a self, id: &'a str, now: u64) -> StoreFuture<'a, Option<SessionRecord>>;

    /// Marks `id` used at `now` and returns its new expiry; `None` when it does not exist or
    /// has expired. (No record comes back: this runs on every request.)
    fn touch<'a>(&'a self, id: &'a str, now: u64) -> StoreFuture<'a, Option<u64>>;

    /// Replaces the record if its stored version is `expected_version`; returns the new one.
    fn save<'a>(
        &'a self,
        record: SessionRecord,
        expected_version: u64,
    ) -> StoreFuture<'a, SessionRecord>;

    /// Removes `id`; whether it existed.
    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool>;

    /// Removes the expired records `keep` does not protect; their ids.
    fn expire<'a>(&'a self, now: u64, keep: Keep<'a>) -> StoreFuture<'a, Vec<String>>;

    /// How many records are stored (expired ones not yet removed included).
    fn count(&self) -> StoreFuture<'_, usize>;

    /// Round trips to the backing store so far, through the connection this store uses
    /// (shared with any other store built on it), when the implementation counts them. The
    /// HTTP transport's `/metrics` shows it as `mcp_store_round_trips_total`. `None` (the
    /// default, and the in-memory store's answer): there is no remote store.
    fn round_trips(&self) -> Option<u64> {
        None
    }
}

/// The in-memory [`SessionStore`]: a map behind a mutex, with two ordered indexes (by order
/// of use, by expiry), so that making room in a full table reads only the oldest records
/// rather than scanning them all. Records used in the same millisecond are ordered by when
/// they were used.
///
/// A touch (every request of a session) moves nothing in the indexes: a record's place in
/// them may lag behind its last use, never run ahead of it, and a scan that meets a lagging
/// place moves it to the record's own before it decides anything.
#[derive(Debug, Default)]
pub struct MemorySessionStore {
    records: Mutex<Records>,
}

/// A stored record with its place in the order of use (a tick) and the keys it is filed
/// under in the two indexes.
#[derive(Debug)]
struct Held {
    record: SessionRecord,
    /// The tick of its last use.
    used: u64,
    /// Its key in [`Records::by_use`]: at most `(record.last_seen, used)`.
    use_key: (u64, u64),
    /// Its key in [`Records::by_expiry`]: at most `(record.expires_at, used)`.
    expiry_key: (u64, u64),
}

impl Held {
    fn use_now(&self) -> (u64, u64) {
        (self.record.last_seen, self.used)
    }

    fn expiry_now(&self) -> (u64, u64) {
        (self.record.expires_at, self.used)
    }
}

/// Records with the order in which they were last used.
///
/// Each record is filed once in each index, under a key that is at most its own (its last
/// use, its expiry): a touch only raises the record's own keys, and the indexes catch up
/// when a scan reads them. A scan walks an index in key order; a record met under a key
/// lower than its own is filed again under its own, further on, where the walk meets it
/// again in its true order. So every decision reads true keys, and a touch costs one hash
/// lookup instead of four tree operations.
#[derive(Debug, Default)]
struct Records {
    /// Each record by id. Hashed with foldhash, not SipHash: its keys are ids the server
    /// minted at random, and a client's id is only looked up (this runs on every request of
    /// a session).
    map: HashMap<String, Held, foldhash::fast::RandomState>,
    /// The ids by `(last_seen, tick)`: least recently used first (keys may lag, see above).
    by_use: BTreeMap<(u64, u64), String>,
    /// The ids by `(expires_at, tick)`: soonest expired first (keys may lag, see above).
    by_expiry: BTreeMap<(u64, u64), String>,
    tick: u64,
}

/// Which of the two indexes.
#[derive(Clone, Copy)]
enum Index {
    Use,
    Expiry,
}

impl Records {
    fn tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }

    /// Stores `record` at place `used` in the order of use, replacing any of the same id.
    fn put(&mut self, record: SessionRecord, used: u64) {
        self.take(&record.id);
        let held = Held {
            use_key: (record.last_seen, used),
            expiry_key: (record.expires_at, used),
            record,
            used,
        };
        self.by_use.insert(held.use_key, held.record.id.clone());
        self.by_expiry
            .insert(held.expiry_key, held.record.id.clone());
        self.map.insert(held.record.id.clone(), held);
    }

    /// Removes record `id` (and its places in the indexes).
    fn take(&mut self, id: &str) -> Option<SessionRecord> {
        let held = self.map.remove(id)?;
        self.by_use.remove(&held.use_key);
        self.by_expiry.remove(&held.expiry_key);
        Some(held.record)
    }

    /// Marks record `id` used at `now` and at place `used` in the order of use. Its keys
    /// only rise, so the indexes are left to catch up (unless a record saved with an expiry
    /// beyond its idle timeout now expires sooner: then it is filed again at once). Its new
    /// expiry; `None` when it is not held, or expired at `now` (then it is removed).
    fn touch(&mut self, id: &str, now: u64, used: u64) -> Option<u64> {
        let held = self.map.get_mut(id)?;
        if held.record.is_expired(now) {
            self.take(id);
            shrink_if_sparse(&mut self.map);
            return None;
        }
        held.record.touch(now);
        held.record.version += 1;
        held.used = used;
        let expires_at = held.record.expires_at;
        if held.expiry_now() < held.expiry_key {
            let (old, new) = (held.expiry_key, held.expiry_now());
            held.expiry_key = new;
            if let Some(id) = self.by_expiry.remove(&old) {
                self.by_expiry.insert(new, id);
            }
        }
        Some(expires_at)
    }

    /// The first id of `index`, in true key order, for which `pick` holds among the records
    /// filed at or below `upto`; lagging keys met on the way are filed again under their
    /// own. `pick` sees each record once, under its own key.
    fn first(
        &mut self,
        index: Index,
        upto: (u64, u64),
        mut pick: impl FnMut(&str) -> bool,
    ) -> Option<String> {
        let mut from = (0, 0);
        loop {
            // Past the bound (a walk that ended on it): nothing more (`range` would panic).
            if from > upto {
                return None;
            }
            let tree = match index {
                Index::Use => &mut self.by_use,
                Index::Expiry => &mut self.by_expiry,
            };
            let (key, id) = tree.range(from..=upto).next()?;
            let key = *key;
            let Some(held) = self.map.get_mut(id.as_str()) else {
                // Not reached: the map and the indexes change together.
                tree.remove(&key);
                continue;
            };
            let own = match index {
                Index::Use => held.use_now(),
                Index::Expiry => held.expiry_now(),
            };
            if key < own {
                if let Some(id) = tree.remove(&key) {
                    tree.insert(own, id);
                }
                match index {
                    Index::Use => held.use_key = own,
                    Index::Expiry => held.expiry_key = own,
                }
                from = key;
                continue;
            }
            if pick(id) {
                return Some(id.clone());
            }
            match key.1.checked_add(1) {
                Some(next) => from = (key.0, next),
                None => from = (key.0.checked_add(1)?, 0),
            }
        }
    }

    /// Removes the records expired at `now` that `keep` does not protect; their ids.
    fn remove_expired(&mut self, now: u64, keep: Keep<'_>) -> Vec<String> {
        let mut ids = Vec::new();
        self.first(Index::Expiry, (now, u64::MAX), |id| {
            if !keep(id) {
                ids.push(id.to_owned());
            }
            false
        });
        for id in &ids {
            self.take(id);
        }
        shrink_if_sparse(&mut self.map);
        ids
    }

    /// The least recently used record that `keep` does not protect.
    fn least_recently_used_idle(&mut self, keep: Keep<'_>) -> Option<String> {
        self.first(Index::Use, (u64::MAX, u64::MAX), |id| !keep(id))
    }
}

impl MemorySessionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A map never shrinks by itself: after a burst of sessions it would keep their room. Shrinks
/// it once it is less than a quarter full, keeping room to double.
fn shrink_if_sparse<V, S: std::hash::BuildHasher>(map: &mut HashMap<String, V, S>) {
    if map.capacity() > 64 && map.len() < map.capacity() / 4 {
        map.shrink_to(map.len() * 2);
    }
}

impl SessionStore for MemorySessionStore {
    fn create<'a>(
        &'a self,
        mut record: SessionRecord,
        max_sessions: usize,
        now: u64,
        keep: Keep<'a>,
    ) -> StoreFuture<'a, Created> {
        let mut records = self.lock();
        let tick = records.tick();
        if records.map.contains_key(&record.id) {
            return ready(Err(StoreError::Exists));
        }
        let mut created = Created::default();
        if records.map.len() >= max_sessions {
            created.evicted = records.remove_expired(now, keep);
        }
        if records.map.len() >= max_sessions {
            let Some(victim) = records.least_recently_used_idle(keep) else {
                return ready(Err(StoreError::Full));
            };
            records.take(&victim);
            created.evicted.push(victim);
        }
        record.version = 1;
        records.put(record, tick);
        ready(Ok(created))
    }

    fn load<'a>(&'a self, id: &'a str, now: u64) -> StoreFuture<'a, Option<SessionRecord>> {
        let records = self.lock();
        let found = records.map.get(id).map(|held| &held.record);
        ready(Ok(found.filter(|r| !r.is_expired(now)).cloned()))
    }

    fn touch<'a>(&'a self, id: &'a str, now: u64) -> StoreFuture<'a, Option<u64>> {
        let mut records = self.lock();
        let tick = records.tick();
        ready(Ok(records.touch(id, now, tick)))
    }

    fn save<'a>(
        &'a self,
        mut record: SessionRecord,
        expected_version: u64,
    ) -> StoreFuture<'a, SessionRecord> {
        let mut records = self.lock();
        let Some(Held {
            record: stored,
            used,
            ..
        }) = records.map.get(&record.id)
        else {
            return ready(Err(StoreError::Conflict {
                expected: expected_version,
                found: 0,
            }));
        };
        if stored.version != expected_version {
            return ready(Err(StoreError::Conflict {
                expected: expected_version,
                found: stored.version,
            }));
        }
        let used = *used;
        record.version = expected_version + 1;
        records.put(record.clone(), used);
        ready(Ok(record))
    }

    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let mut records = self.lock();
        let existed = records.take(id).is_some();
        shrink_if_sparse(&mut records.map);
        ready(Ok(existed))
    }

    fn expire<'a>(&'a self, now: u64, keep: Keep<'a>) -> StoreFuture<'a, Vec<String>> {
        ready(Ok(self.lock().remove_expired(now, keep)))
    }

    fn count(&self) -> StoreFuture<'_, usize> {
        ready(Ok(self.lock().map.len()))
    }
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
