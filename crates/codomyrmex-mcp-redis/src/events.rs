//! [`RedisEventStore`]: SSE history in Redis, with the same bounds as the in-memory replay
//! logs.
//!
//! Layout under the prefix `P`, for session `S` and stream `N`:
//! - `P:ev:owner:S`: the principal that owns the session's history (`n` for none, `p:NAME`);
//!   `P:ev:nstream:S`: the last stream number handed out (stream 0 is the standalone one);
//! - `P:ev:meta:S:N`: a hash: `seq` (the last sequence number), `count` and `bytes`
//!   retained, `evicted` (the highest sequence number evicted) and `closed`;
//! - `P:ev:data:S:N`: a hash from sequence number to the event's bytes;
//! - the eviction order: sorted sets of `S|N|SEQ|LEN` members by a global append counter
//!   (`P:ev:gseq`), per stream (`P:ev:szs:S:N`), per session (`P:ev:sess:S`) and for the whole
//!   store (`P:ev:all`), with byte totals per session (`P:ev:sbytes:S`) and overall
//!   (`P:ev:total`).
//!
//! Appending is one script that stores the event and then evicts the oldest events while a
//! stream, its session or the store is over its bounds, so the bounds hold across instances.
//! It then refreshes the expiry of the session's keys (`ttl` after the last event) and
//! publishes the sequence number on `P:ev:ch:S:N`, where `wait_after` listens (through the
//! connection's one pub/sub connection). Keys that expire leave their members in
//! `P:ev:all` and their bytes in `P:ev:total` until the store's bound evicts them: the bound
//! then counts some bytes Redis already freed, so it only errs towards evicting early.

use codomyrmex_mcp::store::{
    EventId, EventStore, Replay, ReplayScope, StoreError, StoreFuture, StoredEvent,
};
use redis::Script;

use crate::{RedisConnection, unavailable};

/// The bounds of a [`RedisEventStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct EventBounds {
    /// Events kept per stream.
    pub events: usize,
    /// The largest event kept; a larger one is refused ([`StoreError::TooLarge`]).
    pub event_bytes: usize,
    /// Bytes kept per stream.
    pub stream_bytes: usize,
    /// Bytes kept per session, over all its streams.
    pub session_bytes: usize,
    /// Bytes kept by the whole store.
    pub total_bytes: usize,
    /// How long a session's history outlives its last event (Redis expires the keys).
    pub ttl: std::time::Duration,
}

impl Default for EventBounds {
    /// The HTTP transport's defaults: 1024 events and 17 MiB per stream, 17 MiB per event,
    /// 34 MiB per session, 256 MiB in all; kept 10 minutes (the session idle timeout) after
    /// the last event.
    fn default() -> Self {
        Self {
            events: 1024,
            event_bytes: 17 << 20,
            stream_bytes: 17 << 20,
            session_bytes: 34 << 20,
            total_bytes: 256 << 20,
            ttl: std::time::Duration::from_secs(600),
        }
    }
}

impl EventBounds {
    /// Bounds with these values.
    pub fn new(
        events: usize,
        event_bytes: usize,
        stream_bytes: usize,
        session_bytes: usize,
        total_bytes: usize,
    ) -> Self {
        Self {
            events,
            event_bytes,
            stream_bytes,
            session_bytes,
            total_bytes,
            ttl: Self::default().ttl,
        }
    }

    /// History kept `ttl` after a session's last event instead.
    pub fn with_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.ttl = ttl;
        self
    }

    fn ttl_ms(&self) -> u64 {
        u64::try_from(self.ttl.as_millis())
            .unwrap_or(u64::MAX)
            .max(1)
    }
}

/// The eviction of one `S|N|SEQ|LEN` member, shared by the scripts that evict.
const EVICT: &str = r"
local function evict(p, m)
  local s, n, seq, len = string.match(m, '^(.*)|([^|]*)|([^|]*)|([^|]*)$')
  redis.call('HDEL', p .. ':ev:data:' .. s .. ':' .. n, seq)
  local meta = p .. ':ev:meta:' .. s .. ':' .. n
  if redis.call('EXISTS', meta) == 1 then
    redis.call('HINCRBY', meta, 'bytes', -tonumber(len))
    redis.call('HINCRBY', meta, 'count', -1)
    if tonumber(seq) > tonumber(redis.call('HGET', meta, 'evicted') or '0') then
      redis.call('HSET', meta, 'evicted', seq)
    end
  end
  redis.call('ZREM', p .. ':ev:szs:' .. s .. ':' .. n, m)
  redis.call('ZREM', p .. ':ev:sess:' .. s, m)
  redis.call('ZREM', p .. ':ev:all', m)
  redis.call('DECRBY', p .. ':ev:sbytes:' .. s, len)
  redis.call('DECRBY', p .. ':ev:total', len)
end
local function new_stream(p, s, n)
  redis.call('HSET', p .. ':ev:meta:' .. s .. ':' .. n, 'seq', 0, 'count', 0, 'bytes', 0, 'evicted', 0, 'closed', 0)
end
local function keep(ttl, ...)
  for _, k in ipairs({...}) do redis.call('PEXPIRE', k, ttl) end
end
";

/// `open_stream`. ARGV: prefix, session, owner, ttl. Returns the stream, or -1 (another
/// owner).
const OPEN: &str = r"
local p, s = ARGV[1], ARGV[2]
local key = p .. ':ev:owner:' .. s
local owner = redis.call('GET', key)
if owner and owner ~= ARGV[3] then return -1 end
if not owner then
  redis.call('SET', key, ARGV[3])
end
if redis.call('EXISTS', p .. ':ev:meta:' .. s .. ':0') == 0 then
  new_stream(p, s, 0)
end
local n = redis.call('INCR', p .. ':ev:nstream:' .. s)
new_stream(p, s, n)
keep(ARGV[4], key, p .. ':ev:nstream:' .. s, p .. ':ev:meta:' .. s .. ':0', p .. ':ev:meta:' .. s .. ':' .. n)
return n
";

/// `append`. ARGV: prefix, session, owner, stream, data, events, stream bytes, session bytes,
/// total bytes, ttl. Returns the sequence number, -1 (unknown stream) or -2 (closed). Every
/// key of the stream and the session's own keys expire `ttl` ms after the last append, and
/// the sequence number is published on the stream's channel (`P:ev:ch:S:N`).
const APPEND: &str = r"
local p, s, n = ARGV[1], ARGV[2], ARGV[4]
if redis.call('GET', p .. ':ev:owner:' .. s) ~= ARGV[3] then return -1 end
local meta = p .. ':ev:meta:' .. s .. ':' .. n
if redis.call('EXISTS', meta) == 0 then return -1 end
if redis.call('HGET', meta, 'closed') == '1' then return -2 end
local seq = redis.call('HINCRBY', meta, 'seq', 1)
local len = string.len(ARGV[5])
redis.call('HSET', p .. ':ev:data:' .. s .. ':' .. n, seq, ARGV[5])
redis.call('HINCRBY', meta, 'bytes', len)
redis.call('HINCRBY', meta, 'count', 1)
local g = redis.call('INCR', p .. ':ev:gseq')
local m = s .. '|' .. n .. '|' .. seq .. '|' .. len
local szs = p .. ':ev:szs:' .. s .. ':' .. n
local sess = p .. ':ev:sess:' .. s
local all = p .. ':ev:all'
redis.call('ZADD', szs, g, m)
redis.call('ZADD', sess, g, m)
redis.call('ZADD', all, g, m)
redis.call('INCRBY', p .. ':ev:sbytes:' .. s, len)
redis.call('INCRBY', p .. ':ev:total', len)
local function oldest(set)
  local o = redis.call('ZRANGE', set, 0, 0)
  return o[1]
end
while tonumber(redis.call('HGET', meta, 'count')) > tonumber(ARGV[6])
    or tonumber(redis.call('HGET', meta, 'bytes')) > tonumber(ARGV[7]) do
  local o = oldest(szs)
  if not o then break end
  evict(p, o)
end
while tonumber(redis.call('GET', p .. ':ev:sbytes:' .. s) or '0') > tonumber(ARGV[8]) do
  local o = oldest(sess)
  if not o then break end
  evict(p, o)
end
while tonumber(redis.call('GET', p .. ':ev:total') or '0') > tonumber(ARGV[9]) do
  local o = oldest(all)
  if not o then break end
  evict(p, o)
end
keep(ARGV[10], meta, p .. ':ev:data:' .. s .. ':' .. n, szs, sess, p .. ':ev:owner:' .. s,
  p .. ':ev:nstream:' .. s, p .. ':ev:sbytes:' .. s, p .. ':ev:meta:' .. s .. ':0')
redis.call('PUBLISH', p .. ':ev:ch:' .. s .. ':' .. n, seq)
return seq
";

/// `replay_after`. ARGV: prefix, session, owner, stream, after. Returns {closed, last seq,
/// seq, data, seq, data, ...}, or {-1} (unknown stream) or {-3} (evicted, or a stream that
/// was handed out and has expired).
const REPLAY: &str = r"
local p, s, n = ARGV[1], ARGV[2], ARGV[4]
if redis.call('GET', p .. ':ev:owner:' .. s) ~= ARGV[3] then return {-1} end
local meta = p .. ':ev:meta:' .. s .. ':' .. n
local f = redis.call('HMGET', meta, 'seq', 'evicted', 'closed')
if not f[1] then
  if tonumber(n) <= tonumber(redis.call('GET', p .. ':ev:nstream:' .. s) or '0') then return {-3} end
  return {-1}
end
local after = tonumber(ARGV[5])
if tonumber(f[2]) > after then return {-3} end
local out = {tonumber(f[3]), tonumber(f[1])}
local data = p .. ':ev:data:' .. s .. ':' .. n
for i = after + 1, tonumber(f[1]) do
  local d = redis.call('HGET', data, i)
  if d then
    table.insert(out, i)
    table.insert(out, d)
  end
end
return out
";

/// `close_stream`. ARGV: prefix, session, owner, stream. Returns 1, or -1 (unknown stream).
const CLOSE: &str = r"
local p, s, n = ARGV[1], ARGV[2], ARGV[4]
if redis.call('GET', p .. ':ev:owner:' .. s) ~= ARGV[3] then return -1 end
local meta = p .. ':ev:meta:' .. s .. ':' .. n
if redis.call('EXISTS', meta) == 0 then return -1 end
redis.call('HSET', meta, 'closed', 1)
redis.call('PUBLISH', p .. ':ev:ch:' .. s .. ':' .. n, 'closed')
return 1
";

/// `wait_after`'s check, once subscribed. ARGV: prefix, session, owner, stream, after.
/// Returns 1 (an event follows, or the stream is closed), 0 (wait) or -1 (another owner).
const READY: &str = r"
local p, s, n = ARGV[1], ARGV[2], ARGV[4]
local owner = redis.call('GET', p .. ':ev:owner:' .. s)
if owner and owner ~= ARGV[3] then return -1 end
local f = redis.call('HMGET', p .. ':ev:meta:' .. s .. ':' .. n, 'seq', 'closed')
if not f[1] then return 0 end
if f[2] == '1' or tonumber(f[1]) > tonumber(ARGV[5]) then return 1 end
return 0
";

/// The longest a reader waits for a stream's next event before reading the store again: a
/// bound on what a lost notification costs (the pub/sub connection dropped, say).
const WAIT_BOUND: std::time::Duration = std::time::Duration::from_secs(5);

/// `drop_session`. ARGV: prefix, session.
const DROP: &str = r"
local p, s = ARGV[1], ARGV[2]
local sess = p .. ':ev:sess:' .. s
for _, m in ipairs(redis.call('ZRANGE', sess, 0, -1)) do
  local len = string.match(m, '|([^|]*)$')
  redis.call('ZREM', p .. ':ev:all', m)
  redis.call('DECRBY', p .. ':ev:total', len)
end
local last = tonumber(redis.call('GET', p .. ':ev:nstream:' .. s) or '0')
for n = 0, last do
  redis.call('DEL', p .. ':ev:meta:' .. s .. ':' .. n, p .. ':ev:data:' .. s .. ':' .. n, p .. ':ev:szs:' .. s .. ':' .. n)
end
redis.call('DEL', sess, p .. ':ev:owner:' .. s, p .. ':ev:nstream:' .. s, p .. ':ev:sbytes:' .. s)
return 1
";

/// The [`EventStore`] in Redis; cheap to clone (clones share the connection).
#[derive(Debug, Clone)]
pub struct RedisEventStore {
    redis: RedisConnection,
    bounds: EventBounds,
}

impl RedisEventStore {
    /// SSE history on `redis` under `bounds`. Instances that share a prefix must use the same
    /// bounds.
    pub fn new(redis: RedisConnection, bounds: EventBounds) -> Self {
        Self { redis, bounds }
    }

    fn script(body: &str) -> Script {
        Script::new(&format!("{EVICT}\n{body}"))
    }
}

/// How an owner is written: `n` without authentication, `p:NAME` for a principal.
fn owner(scope: ReplayScope<'_>) -> String {
    scope
        .principal
        .map_or_else(|| "n".to_owned(), |p| format!("p:{p}"))
}

impl EventStore for RedisEventStore {
    fn open_stream<'a>(&'a self, scope: ReplayScope<'a>) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let n: i64 = Self::script(OPEN)
                .arg(&self.redis.prefix)
                .arg(scope.session)
                .arg(owner(scope))
                .arg(self.bounds.ttl_ms())
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            u64::try_from(n).map_err(|_| StoreError::UnknownStream)
        })
    }

    fn append<'a>(
        &'a self,
        scope: ReplayScope<'a>,
        stream: u64,
        data: Vec<u8>,
    ) -> StoreFuture<'a, EventId> {
        Box::pin(async move {
            if data.len() > self.bounds.event_bytes {
                return Err(StoreError::TooLarge {
                    limit: self.bounds.event_bytes,
                });
            }
            let b = self.bounds;
            let seq: i64 = Self::script(APPEND)
                .arg(&self.redis.prefix)
                .arg(scope.session)
                .arg(owner(scope))
                .arg(stream)
                .arg(data)
                .arg(b.events)
                .arg(b.stream_bytes)
                .arg(b.session_bytes)
                .arg(b.total_bytes)
                .arg(b.ttl_ms())
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            match seq {
                -2 => Err(StoreError::Closed),
                n => u64::try_from(n)
                    .map(|seq| EventId { stream, seq })
                    .map_err(|_| StoreError::UnknownStream),
            }
        })
    }

    fn replay_after<'a>(
        &'a self,
        after: EventId,
        scope: ReplayScope<'a>,
    ) -> StoreFuture<'a, Replay> {
        Box::pin(async move {
            let reply: Vec<redis::Value> = Self::script(REPLAY)
                .arg(&self.redis.prefix)
                .arg(scope.session)
                .arg(owner(scope))
                .arg(after.stream)
                .arg(after.seq)
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            parse_replay(after.stream, &reply)
        })
    }

    fn wait_after<'a>(&'a self, after: EventId, scope: ReplayScope<'a>) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let channel = format!(
                "{}:ev:ch:{}:{}",
                self.redis.prefix, scope.session, after.stream
            );
            let watch = self.redis.hub().await?.watch(channel).await?;
            // Subscribed and listening before the check: nothing published after it is missed.
            let notified = watch.notify().notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let ready: i64 = Self::script(READY)
                .arg(&self.redis.prefix)
                .arg(scope.session)
                .arg(owner(scope))
                .arg(after.stream)
                .arg(after.seq)
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            match ready {
                -1 => Err(StoreError::UnknownStream),
                1 => Ok(()),
                _ => {
                    let _ = tokio::time::timeout(WAIT_BOUND, notified).await;
                    Ok(())
                }
            }
        })
    }

    fn close_stream<'a>(&'a self, scope: ReplayScope<'a>, stream: u64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let done: i64 = Self::script(CLOSE)
                .arg(&self.redis.prefix)
                .arg(scope.session)
                .arg(owner(scope))
                .arg(stream)
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            if done == 1 {
                Ok(())
            } else {
                Err(StoreError::UnknownStream)
            }
        })
    }

    fn drop_session<'a>(&'a self, session: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = Self::script(DROP)
                .arg(&self.redis.prefix)
                .arg(session)
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(())
        })
    }
}

/// `REPLAY`'s reply.
fn parse_replay(stream: u64, reply: &[redis::Value]) -> Result<Replay, StoreError> {
    let corrupt = || StoreError::Corrupt("unexpected reply to the replay script".into());
    let (first, rest) = reply.split_first().ok_or_else(corrupt)?;
    let closed = match first {
        redis::Value::Int(-1) => return Err(StoreError::UnknownStream),
        redis::Value::Int(-3) => return Err(StoreError::Evicted),
        redis::Value::Int(c) => *c == 1,
        _ => return Err(corrupt()),
    };
    let (last, rest) = rest.split_first().ok_or_else(corrupt)?;
    let redis::Value::Int(last) = last else {
        return Err(corrupt());
    };
    let last_seq = u64::try_from(*last).map_err(|_| corrupt())?;
    let mut events = Vec::with_capacity(rest.len() / 2);
    for pair in rest.chunks(2) {
        let [redis::Value::Int(seq), redis::Value::BulkString(data)] = pair else {
            return Err(corrupt());
        };
        let seq = u64::try_from(*seq).map_err(|_| corrupt())?;
        events.push(StoredEvent {
            id: EventId { stream, seq },
            data: data.clone(),
        });
    }
    Ok(Replay {
        stream,
        events,
        closed,
        last_seq,
    })
}
