//! [`RedisSessionStore`]: session records in Redis.
//!
//! Layout under the prefix `P`:
//! - `P:s:{id}`: a hash: `rec` (the record's JSON, [`SessionRecord::encode`]), and the fields
//!   the store itself keeps current: `ver` (the compare-and-set version), `exp` (expiry, Unix
//!   ms), `last` (last use) and `idle` (the idle timeout). A loaded record takes these four
//!   from the hash, not from `rec`.
//! - `P:s:lru`: a sorted set of ids by order of last use (a counter, `P:s:tick`, shared by all
//!   instances); `P:s:exp`: the ids by expiry.
//!
//! Each record key also carries a Redis expiry (relative, so no instance's clock needs to
//! match Redis's) of twice the idle timeout past its own, so a record that no instance ever
//! expires (every instance died) still leaves Redis. Its ids in the sorted sets are removed
//! by the next `expire` or by `create` when the table is full.

use codomyrmex_mcp::store::{Created, Keep, SessionRecord, SessionStore, StoreError, StoreFuture};
use redis::Script;

use crate::{RedisConnection, unavailable};

/// How many ids of the least-recently-used order (and of the expired ones) are read at a
/// time when looking for ones to evict: the candidates of one round of `create`.
const LRU_PAGE: isize = 64;

/// How many rounds `create` makes before it answers [`StoreError::Contended`] while some
/// session is idle: each round reads a fresh page of candidates. A round fails only when every one of
/// its candidates was used or taken by other admissions since it was read, so that each
/// failed round let others in.
const CREATE_ROUNDS: usize = 8;

/// `create`, atomically: refuses an existing id; removes the given expired ids that are still
/// expired; then, only while the table is full, removes the given idle candidates in order
/// (least recently used first), each only if it was not used since it was read (its place in
/// the order of use is the one given); refuses when the table is still full; else stores the
/// record. Many admissions at once with the same candidates each take the next one left.
/// KEYS: record, lru, exp, tick. ARGV: id, rec, ver, exp, last, idle, max, prefix, now,
/// number of expired ids, the expired ids, then (id, order of use) pairs of candidates.
/// Returns {status, removed...}: 1 stored, -1 exists, -2 full.
const CREATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return {-1} end
local removed = {1}
local max = tonumber(ARGV[7])
local now = tonumber(ARGV[9])
local nexp = tonumber(ARGV[10])
for i = 11, 10 + nexp do
  local v = ARGV[i]
  local key = ARGV[8] .. ':s:' .. v
  local e = redis.call('HGET', key, 'exp')
  if (not e) or tonumber(e) <= now then
    if redis.call('DEL', key) == 1 then table.insert(removed, v) end
    redis.call('ZREM', KEYS[2], v)
    redis.call('ZREM', KEYS[3], v)
  end
end
for i = 11 + nexp, #ARGV - 1, 2 do
  if redis.call('ZCARD', KEYS[2]) < max then break end
  local v = ARGV[i]
  local used = redis.call('ZSCORE', KEYS[2], v)
  if used and tonumber(used) == tonumber(ARGV[i + 1]) then
    if redis.call('DEL', ARGV[8] .. ':s:' .. v) == 1 then table.insert(removed, v) end
    redis.call('ZREM', KEYS[2], v)
    redis.call('ZREM', KEYS[3], v)
  end
end
if redis.call('ZCARD', KEYS[2]) >= max then
  removed[1] = -2
  return removed
end
redis.call('HSET', KEYS[1], 'rec', ARGV[2], 'ver', ARGV[3], 'exp', ARGV[4], 'last', ARGV[5], 'idle', ARGV[6])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]) - tonumber(ARGV[5]) + 2 * tonumber(ARGV[6]))
redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[4]), ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
return removed
";

/// `load` and `touch`: the unexpired record (an expired one is removed). With ARGV[3] = 1
/// the use is recorded: sliding expiry, a new version, the front of the LRU order.
/// KEYS: record, lru, exp, tick. ARGV: id, now, touch. Returns {rec, ver, exp, last} or nil.
const READ: &str = r"
local f = redis.call('HMGET', KEYS[1], 'rec', 'ver', 'exp', 'last', 'idle')
if not f[1] then return false end
local now = tonumber(ARGV[2])
if now >= tonumber(f[3]) then
  redis.call('DEL', KEYS[1])
  redis.call('ZREM', KEYS[2], ARGV[1])
  redis.call('ZREM', KEYS[3], ARGV[1])
  return false
end
if ARGV[3] ~= '1' then return {f[1], tonumber(f[2]), tonumber(f[3]), tonumber(f[4])} end
local last = math.max(tonumber(f[4]), now)
local exp = last + tonumber(f[5])
local ver = tonumber(f[2]) + 1
redis.call('HSET', KEYS[1], 'ver', ver, 'exp', exp, 'last', last)
redis.call('PEXPIRE', KEYS[1], exp - now + 2 * tonumber(f[5]))
redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[4]), ARGV[1])
redis.call('ZADD', KEYS[3], exp, ARGV[1])
return {f[1], ver, exp, last}
";

/// `save`: compare-and-set on `ver`. KEYS: record, exp. ARGV: id, rec, expected, exp, last,
/// idle. Returns {1, new version} or {0, found version (0: no record)}.
const SAVE: &str = r"
local ver = redis.call('HGET', KEYS[1], 'ver')
if not ver then return {0, 0} end
if tonumber(ver) ~= tonumber(ARGV[3]) then return {0, tonumber(ver)} end
local new = tonumber(ver) + 1
redis.call('HSET', KEYS[1], 'rec', ARGV[2], 'ver', new, 'exp', ARGV[4], 'last', ARGV[5], 'idle', ARGV[6])
redis.call('PEXPIRE', KEYS[1], math.max(tonumber(ARGV[4]) - tonumber(ARGV[5]), 0) + 2 * tonumber(ARGV[6]))
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
return {1, new}
";

/// `delete`, and `expire` of one id (ARGV[2] = now: only if it is still expired then).
/// KEYS: record, lru, exp. ARGV: id, now or ''. Returns 1 when removed.
const REMOVE: &str = r"
if ARGV[2] ~= '' then
  local exp = redis.call('HGET', KEYS[1], 'exp')
  if exp and tonumber(exp) > tonumber(ARGV[2]) then return 0 end
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return redis.call('DEL', KEYS[1])
";

/// The [`SessionStore`] in Redis; cheap to clone (clones share the connection).
#[derive(Debug, Clone)]
pub struct RedisSessionStore {
    redis: RedisConnection,
}

impl RedisSessionStore {
    /// Session records on `redis`.
    pub fn new(redis: RedisConnection) -> Self {
        Self { redis }
    }

    fn key(&self, id: &str) -> String {
        format!("{}:s:{id}", self.redis.prefix)
    }

    fn lru(&self) -> String {
        format!("{}:s:lru", self.redis.prefix)
    }

    fn exp(&self) -> String {
        format!("{}:s:exp", self.redis.prefix)
    }

    fn tick(&self) -> String {
        format!("{}:s:tick", self.redis.prefix)
    }

    async fn read(
        &self,
        id: &str,
        now: u64,
        touch: bool,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let found: Option<(Vec<u8>, u64, u64, u64)> = Script::new(READ)
            .key(self.key(id))
            .key(self.lru())
            .key(self.exp())
            .key(self.tick())
            .arg(id)
            .arg(now)
            .arg(if touch { "1" } else { "0" })
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(|e| unavailable(&e))?;
        found
            .map(|(rec, version, expires_at, last_seen)| {
                let mut record = SessionRecord::decode(&rec)?;
                record.version = version;
                record.expires_at = expires_at;
                record.last_seen = last_seen;
                Ok(record)
            })
            .transpose()
    }

    async fn remove(&self, id: &str, if_expired_at: Option<u64>) -> Result<bool, StoreError> {
        let removed: i64 = Script::new(REMOVE)
            .key(self.key(id))
            .key(self.lru())
            .key(self.exp())
            .arg(id)
            .arg(if_expired_at.map(|n| n.to_string()).unwrap_or_default())
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(removed == 1)
    }

    /// The candidates for eviction so that a record fits: a page of the expired ids that
    /// `keep` does not protect, and the first page of the least-recently-used order that has
    /// ids it does not protect (each with its place in the order), at most [`LRU_PAGE`].
    /// `None` when no id can go: every session is busy.
    async fn candidates(&self, now: u64, keep: Keep<'_>) -> Result<Option<Candidates>, StoreError> {
        let mut conn = self.redis.conn();
        let expired: Vec<String> = redis::cmd("ZRANGEBYSCORE")
            .arg(self.exp())
            .arg("-inf")
            .arg(now)
            .arg("LIMIT")
            .arg(0)
            .arg(LRU_PAGE)
            .query_async(&mut conn)
            .await
            .map_err(|e| unavailable(&e))?;
        let expired: Vec<String> = expired.into_iter().filter(|id| !keep(id)).collect();
        let mut idle = Vec::new();
        let mut start = 0isize;
        while idle.is_empty() {
            let page: Vec<(String, u64)> = redis::cmd("ZRANGE")
                .arg(self.lru())
                .arg(start)
                .arg(start + LRU_PAGE - 1)
                .arg("WITHSCORES")
                .query_async(&mut conn)
                .await
                .map_err(|e| unavailable(&e))?;
            if page.is_empty() {
                break;
            }
            idle = page
                .into_iter()
                .filter(|(id, _)| !keep(id) && !expired.contains(id))
                .collect();
            start += LRU_PAGE;
        }
        if expired.is_empty() && idle.is_empty() {
            return Ok(None);
        }
        Ok(Some(Candidates { expired, idle }))
    }
}

/// What one round of `create` may remove: see [`RedisSessionStore::candidates`].
#[derive(Debug, Default)]
struct Candidates {
    expired: Vec<String>,
    /// Idle ids, least recently used first, with their place in the order of use.
    idle: Vec<(String, u64)>,
}

impl SessionStore for RedisSessionStore {
    fn create<'a>(
        &'a self,
        record: SessionRecord,
        max_sessions: usize,
        now: u64,
        keep: Keep<'a>,
    ) -> StoreFuture<'a, Created> {
        Box::pin(async move {
            let mut record = record;
            record.version = 1;
            let rec = record.encode()?;
            let mut candidates = Candidates::default();
            let mut evicted = Vec::new();
            let create = Script::new(CREATE);
            // Other admissions (of this instance or another) may take the room this one
            // found: a bounded number of rounds, each with fresh candidates.
            for _ in 0..=CREATE_ROUNDS {
                let mut script = create.prepare_invoke();
                script
                    .key(self.key(&record.id))
                    .key(self.lru())
                    .key(self.exp())
                    .key(self.tick())
                    .arg(&record.id)
                    .arg(rec.as_slice())
                    .arg(record.version)
                    .arg(record.expires_at)
                    .arg(record.last_seen)
                    .arg(record.idle_timeout)
                    .arg(max_sessions)
                    .arg(&self.redis.prefix)
                    .arg(now)
                    .arg(candidates.expired.len());
                for v in &candidates.expired {
                    script.arg(v);
                }
                for (v, used) in &candidates.idle {
                    script.arg(v).arg(*used);
                }
                let reply: Vec<redis::Value> = script
                    .invoke_async(&mut self.redis.conn())
                    .await
                    .map_err(|e| unavailable(&e))?;
                let (status, removed) = parse_create(&reply)?;
                evicted.extend(removed);
                match status {
                    1 => return Ok(Created { evicted }),
                    -1 => return Err(StoreError::Exists),
                    _ => {}
                }
                match self.candidates(now, keep).await? {
                    Some(c) => candidates = c,
                    None => return Err(StoreError::Full),
                }
            }
            Err(StoreError::Contended)
        })
    }

    fn load<'a>(&'a self, id: &'a str, now: u64) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(self.read(id, now, false))
    }

    fn touch<'a>(&'a self, id: &'a str, now: u64) -> StoreFuture<'a, Option<u64>> {
        Box::pin(async move {
            Ok(self
                .read(id, now, true)
                .await?
                .map(|record| record.expires_at))
        })
    }

    fn save<'a>(
        &'a self,
        record: SessionRecord,
        expected_version: u64,
    ) -> StoreFuture<'a, SessionRecord> {
        Box::pin(async move {
            let mut record = record;
            let rec = record.encode()?;
            let (ok, version): (i64, u64) = Script::new(SAVE)
                .key(self.key(&record.id))
                .key(self.exp())
                .arg(&record.id)
                .arg(rec)
                .arg(expected_version)
                .arg(record.expires_at)
                .arg(record.last_seen)
                .arg(record.idle_timeout)
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            if ok != 1 {
                return Err(StoreError::Conflict {
                    expected: expected_version,
                    found: version,
                });
            }
            record.version = version;
            Ok(record)
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(self.remove(id, None))
    }

    fn expire<'a>(&'a self, now: u64, keep: Keep<'a>) -> StoreFuture<'a, Vec<String>> {
        Box::pin(async move {
            let expired: Vec<String> = redis::cmd("ZRANGEBYSCORE")
                .arg(self.exp())
                .arg("-inf")
                .arg(now)
                .query_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            let mut removed = Vec::new();
            for id in expired.into_iter().filter(|id| !keep(id)) {
                if self.remove(&id, Some(now)).await? {
                    removed.push(id);
                }
            }
            Ok(removed)
        })
    }

    fn count(&self) -> StoreFuture<'_, usize> {
        Box::pin(async move {
            redis::cmd("ZCARD")
                .arg(self.lru())
                .query_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn round_trips(&self) -> Option<u64> {
        Some(self.redis.round_trips())
    }
}

/// `CREATE`'s reply: its status and the ids it removed.
fn parse_create(reply: &[redis::Value]) -> Result<(i64, Vec<String>), StoreError> {
    let corrupt = || StoreError::Corrupt("unexpected reply to the create script".into());
    let (first, rest) = reply.split_first().ok_or_else(corrupt)?;
    let redis::Value::Int(status) = first else {
        return Err(corrupt());
    };
    let removed = rest
        .iter()
        .map(|v| match v {
            redis::Value::BulkString(b) => Ok(String::from_utf8_lossy(b).into_owned()),
            _ => Err(corrupt()),
        })
        .collect::<Result<_, _>>()?;
    Ok((*status, removed))
}
