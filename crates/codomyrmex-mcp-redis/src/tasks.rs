//! [`RedisTaskStore`]: task records in Redis, so that `tasks/*` work from any instance.
//!
//! Layout under the prefix `P`:
//! - `P:t:{id}`: a hash: `rec` (the record's JSON, [`TaskRecord::encode`]), and the fields the
//!   store keeps current itself: `fin` (`1` once terminal: then nothing changes it), `lease`
//!   (until when the owner vouches for it, Unix ms; a read takes it from here, not from `rec`),
//!   `exp` (its expiry), `upd` (its `updated_at`, for [`TaskStore::changed`]) and `own` (its
//!   owner's instance name).
//! - `P:t:{id}:q`: the `tasks/update` answers queued for the owner (at most 64, oldest first).
//! - `P:t:s:{session}`: a sorted set of a 2025-11-25 session's task ids by creation time.
//!
//! Each key also carries a Redis expiry (relative: the record's TTL left plus a minute), so a
//! task no instance reads again still leaves Redis. Every write is one Lua script: a terminal
//! record, a lapsed lease turned `failed`, or a cancel, wins atomically across instances.
//! [`TaskStore::changed`] polls (every 100 ms, for at most 2 s): no subscription to lose.
//!
//! A cancel, or answers queued for a running task, also publish the task id on the owner's
//! channel `P:t:wake:{owner}` (in the same script): [`RedisTaskStore::wakeups`] is that
//! channel as the owner's [`TaskWakeups`], so its sync renews at once instead of at its next
//! poll. A wakeup lost while the pub/sub connection reconnects only waits for that poll.
//!
//! [`TaskWakeups`]: codomyrmex_mcp::runtime::TaskWakeups

use std::time::Duration;

use codomyrmex_mcp::task_store::{Renewal, TaskRecord, TaskStore, TaskStoreError, TaskStoreFuture};
use redis::Script;
use serde_json::{Map, Value};

use crate::RedisConnection;

/// Slack past a record's own expiry before Redis drops its keys.
const SLACK_MS: u64 = 60_000;
/// How often and how long [`TaskStore::changed`] looks.
const CHANGE_POLL: Duration = Duration::from_millis(100);
const CHANGE_WAIT: Duration = Duration::from_secs(2);

/// `put`. KEYS: record, queue, session set (or the record again). ARGV: rec, fin, lease, exp,
/// ttl left (ms), id, created_at, with session ('1'), upd, owner. Returns 1 when written.
const PUT: &str = r"
if redis.call('HGET', KEYS[1], 'fin') == '1' then return 0 end
local lease = tonumber(ARGV[3])
local old = tonumber(redis.call('HGET', KEYS[1], 'lease') or '0')
if old > lease then lease = old end
redis.call('HSET', KEYS[1], 'rec', ARGV[1], 'fin', ARGV[2], 'lease', lease, 'exp', ARGV[4], 'upd', ARGV[9], 'own', ARGV[10])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
if ARGV[2] == '1' then redis.call('DEL', KEYS[2]) end
if ARGV[8] == '1' then
  redis.call('ZADD', KEYS[3], ARGV[7], ARGV[6])
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
end
return 1
";

/// `get`'s read: the record, or nil (an expired one is removed).
/// KEYS: record, queue. ARGV: now. Returns {rec, lease}.
const READ: &str = r"
local f = redis.call('HMGET', KEYS[1], 'rec', 'lease', 'exp')
if not f[1] then return false end
if tonumber(ARGV[1]) >= tonumber(f[3]) then
  redis.call('DEL', KEYS[1], KEYS[2])
  return false
end
return {f[1], f[2]}
";

/// Ends a running record with `rec` (a cancel, or with ARGV[3] = '1' a lapsed lease: only if
/// the lease is still lapsed at ARGV[2]). KEYS: record, queue. ARGV: rec, now, lapsed only,
/// upd, prefix, id. A cancel wakes the owner. Returns {rec, lease} as stored after, or nil.
const FINISH: &str = r"
local f = redis.call('HMGET', KEYS[1], 'rec', 'fin', 'lease', 'own')
if not f[1] then return false end
if f[2] == '1' then return {f[1], f[3]} end
if ARGV[3] == '1' and tonumber(f[3]) > tonumber(ARGV[2]) then return {f[1], f[3]} end
redis.call('HSET', KEYS[1], 'rec', ARGV[1], 'fin', '1', 'upd', ARGV[4])
redis.call('DEL', KEYS[2])
if ARGV[3] ~= '1' and f[4] then redis.call('PUBLISH', ARGV[5] .. ':t:wake:' .. f[4], ARGV[6]) end
return {ARGV[1], f[3]}
";

/// `deliver`. KEYS: record, queue. ARGV: answers, prefix, id. Wakes the owner. Returns 1
/// when queued.
const DELIVER: &str = r"
local f = redis.call('HMGET', KEYS[1], 'fin', 'own')
if not f[1] or f[1] == '1' then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], -64, -1)
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
if f[2] then redis.call('PUBLISH', ARGV[2] .. ':t:wake:' .. f[2], ARGV[3]) end
return 1
";

/// `renew`. KEYS: record and queue of each task, in pairs. ARGV: lease. Returns, per task,
/// {'1'} (stop) or {'0', answers...}.
const RENEW: &str = r"
local out = {}
for i = 1, #KEYS, 2 do
  local fin = redis.call('HGET', KEYS[i], 'fin')
  if not fin or fin == '1' then
    table.insert(out, {'1'})
  else
    local old = tonumber(redis.call('HGET', KEYS[i], 'lease') or '0')
    if tonumber(ARGV[1]) > old then redis.call('HSET', KEYS[i], 'lease', ARGV[1]) end
    local entry = {'0'}
    for _, a in ipairs(redis.call('LRANGE', KEYS[i + 1], 0, -1)) do table.insert(entry, a) end
    redis.call('DEL', KEYS[i + 1])
    table.insert(out, entry)
  end
end
return out
";

fn unavailable(e: &redis::RedisError) -> TaskStoreError {
    TaskStoreError::Unavailable(format!("Redis: {e}"))
}

/// The [`TaskStore`] in Redis; cheap to clone (clones share the connection).
#[derive(Debug, Clone)]
pub struct RedisTaskStore {
    redis: RedisConnection,
}

impl RedisTaskStore {
    /// Task records on `redis`.
    pub fn new(redis: RedisConnection) -> Self {
        Self { redis }
    }

    /// The wakeups of `instance`: one each time another instance cancels one of its tasks or
    /// queues `tasks/update` answers for one, pushed over the connection's pub/sub (for
    /// [`McpServer::with_task_store_woken`](codomyrmex_mcp::McpServer::with_task_store_woken)).
    /// Wakeups that come while the sync is busy are merged into one. Call it once per
    /// instance: a second call replaces the first's subscription.
    pub async fn wakeups(
        &self,
        instance: &str,
    ) -> Result<codomyrmex_mcp::runtime::TaskWakeups, TaskStoreError> {
        let hub = self
            .redis
            .hub()
            .await
            .map_err(|e| TaskStoreError::Unavailable(e.to_string()))?;
        let notify = std::sync::Arc::new(tokio::sync::Notify::new());
        let poke = notify.clone();
        let handler: crate::pubsub::Handler = std::sync::Arc::new(move |_id: Vec<u8>| {
            // Stores a permit when nobody waits: a wakeup during a renewal is not lost.
            poke.notify_one();
        });
        hub.handle(format!("{}:t:wake:{instance}", self.redis.prefix), handler)
            .await
            .map_err(|e| TaskStoreError::Unavailable(e.to_string()))?;
        let wakeups = futures_util::stream::unfold(notify, |n| async move {
            n.notified().await;
            Some(((), n))
        });
        Ok(Box::pin(wakeups))
    }

    fn key(&self, id: &str) -> String {
        format!("{}:t:{id}", self.redis.prefix)
    }

    fn queue(&self, id: &str) -> String {
        format!("{}:t:{id}:q", self.redis.prefix)
    }

    fn session(&self, session: &str) -> String {
        format!("{}:t:s:{session}", self.redis.prefix)
    }

    /// A record from a script's `{rec, lease}`.
    fn decode(found: Option<(Vec<u8>, u64)>) -> Result<Option<TaskRecord>, TaskStoreError> {
        found
            .map(|(rec, lease)| {
                let mut record = TaskRecord::decode(&rec)?;
                record.lease_until = lease;
                Ok(record)
            })
            .transpose()
    }

    async fn finish(
        &self,
        record: &TaskRecord,
        now: u64,
        lapsed_only: bool,
    ) -> Result<Option<TaskRecord>, TaskStoreError> {
        let found: Option<(Vec<u8>, u64)> = Script::new(FINISH)
            .key(self.key(&record.id))
            .key(self.queue(&record.id))
            .arg(record.encode()?)
            .arg(now)
            .arg(if lapsed_only { "1" } else { "0" })
            .arg(record.updated_at)
            .arg(&self.redis.prefix)
            .arg(&record.id)
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(|e| unavailable(&e))?;
        Self::decode(found)
    }

    async fn read(&self, id: &str, now: u64) -> Result<Option<TaskRecord>, TaskStoreError> {
        let found: Option<(Vec<u8>, u64)> = Script::new(READ)
            .key(self.key(id))
            .key(self.queue(id))
            .arg(now)
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(|e| unavailable(&e))?;
        let Some(record) = Self::decode(found)? else {
            return Ok(None);
        };
        if !record.lease_lapsed(now) {
            return Ok(Some(record));
        }
        let failed = record.owner_stopped(now);
        self.finish(&failed, now, true).await
    }
}

impl TaskStore for RedisTaskStore {
    fn put(&self, record: TaskRecord) -> TaskStoreFuture<'_, bool> {
        Box::pin(async move {
            let ttl_left = record
                .expires_at
                .saturating_sub(record.updated_at)
                .saturating_add(SLACK_MS);
            let session = record.session.as_deref().map(|s| self.session(s));
            let written: i64 = Script::new(PUT)
                .key(self.key(&record.id))
                .key(self.queue(&record.id))
                .key(session.clone().unwrap_or_else(|| self.key(&record.id)))
                .arg(record.encode()?)
                .arg(if record.status.is_terminal() {
                    "1"
                } else {
                    "0"
                })
                .arg(record.lease_until)
                .arg(record.expires_at)
                .arg(ttl_left)
                .arg(&record.id)
                .arg(record.created_at)
                .arg(if session.is_some() { "1" } else { "0" })
                .arg(record.updated_at)
                .arg(&record.owner)
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(written == 1)
        })
    }

    fn get<'a>(&'a self, id: &'a str, now: u64) -> TaskStoreFuture<'a, Option<TaskRecord>> {
        Box::pin(self.read(id, now))
    }

    fn cancel<'a>(&'a self, id: &'a str, now: u64) -> TaskStoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            match self.read(id, now).await? {
                Some(r) if !r.status.is_terminal() => {
                    let cancelled = r.cancelled(now);
                    self.finish(&cancelled, now, false).await
                }
                other => Ok(other),
            }
        })
    }

    fn deliver<'a>(
        &'a self,
        id: &'a str,
        responses: Map<String, Value>,
    ) -> TaskStoreFuture<'a, bool> {
        Box::pin(async move {
            let answers = serde_json::to_vec(&responses)
                .map_err(|e| TaskStoreError::Corrupt(e.to_string()))?;
            let queued: i64 = Script::new(DELIVER)
                .key(self.key(id))
                .key(self.queue(id))
                .arg(answers)
                .arg(&self.redis.prefix)
                .arg(id)
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(queued == 1)
        })
    }

    fn renew<'a>(&'a self, ids: &'a [String], lease_until: u64) -> TaskStoreFuture<'a, Renewal> {
        Box::pin(async move {
            let mut renewal = Renewal::default();
            if ids.is_empty() {
                return Ok(renewal);
            }
            let renew = Script::new(RENEW);
            let mut script = renew.prepare_invoke();
            for id in ids {
                script.key(self.key(id)).key(self.queue(id));
            }
            let out: Vec<Vec<Vec<u8>>> = script
                .arg(lease_until)
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            for (id, entry) in ids.iter().zip(out) {
                let mut fields = entry.into_iter();
                if fields.next().as_deref() == Some(b"1".as_slice()) {
                    renewal.stop.push(id.clone());
                    continue;
                }
                for answers in fields {
                    match serde_json::from_slice::<Map<String, Value>>(&answers) {
                        Ok(map) => renewal.responses.push((id.clone(), map)),
                        Err(e) => tracing::warn!(error = %e, "an unreadable queued answer"),
                    }
                }
            }
            Ok(renewal)
        })
    }

    fn list<'a>(&'a self, session: &'a str, now: u64) -> TaskStoreFuture<'a, Vec<TaskRecord>> {
        Box::pin(async move {
            let key = self.session(session);
            let ids: Vec<String> = redis::cmd("ZRANGE")
                .arg(&key)
                .arg(0)
                .arg(-1)
                .query_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            let mut records = Vec::with_capacity(ids.len());
            for id in ids {
                match self.read(&id, now).await? {
                    Some(r) if r.session.as_deref() == Some(session) => records.push(r),
                    Some(_) => {}
                    None => {
                        let _: Result<i64, _> = redis::cmd("ZREM")
                            .arg(&key)
                            .arg(&id)
                            .query_async(&mut self.redis.conn())
                            .await;
                    }
                }
            }
            records.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
            Ok(records)
        })
    }

    fn changed<'a>(&'a self, id: &'a str, seen: u64) -> TaskStoreFuture<'a, ()> {
        Box::pin(async move {
            let deadline = tokio::time::Instant::now() + CHANGE_WAIT;
            loop {
                let (upd, fin): (Option<u64>, Option<String>) = redis::cmd("HMGET")
                    .arg(self.key(id))
                    .arg("upd")
                    .arg("fin")
                    .query_async(&mut self.redis.conn())
                    .await
                    .map_err(|e| unavailable(&e))?;
                if upd != Some(seen) || fin.as_deref() == Some("1") {
                    return Ok(());
                }
                if tokio::time::Instant::now() >= deadline {
                    return Ok(());
                }
                tokio::time::sleep(CHANGE_POLL).await;
            }
        })
    }
}
