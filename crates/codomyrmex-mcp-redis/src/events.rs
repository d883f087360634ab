//! [`RedisEventStore`]: SSE history in Redis, with the same bounds as the in-memory replay
//! logs.
//!
//! Layout under the prefix `P`, for session `S` and stream `N`:
//! - `P:ev:owner:S`: the principal that owns the session's history (`n` for none, `p:NAME`);
//!   `P:ev:nstream:S`: the last stream number handed out (stream 0 is the standalone one);
//! - `P:ev:meta:S:N`: a hash: `seq` (the last sequence number), `count` and `bytes`
//!   retained, `evicted` (the highest sequence number evicted) and `closed`; for a stream
//!   opened with [`EventStore::open_stream_by`], `writer` (the writing instance's bus name)
//!   and `epitaph` (what its readers get if that instance goes away before it answered);
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
//! connection's one pub/sub connection).
//!
//! A stream's writer lives while it listens on its bus channel (`P:bus:i:NAME`, the
//! [`RedisBus`](crate::RedisBus)'s definition: a process that dies loses its subscriptions at
//! once). A reader that waited a whole step (5 s by default) with no event looks (one round trip, in the
//! script that also checks for events); when the writer does not listen at two looks a step
//! apart (a live instance whose pub/sub connection dropped subscribes again within its
//! reconnect backoff, 100 ms when Redis is reachable), the script ends the stream: it appends
//! the epitaph, unless the last event is already a response, and closes it. A slow writer
//! (a long tool call) listens all along and is never ended; the looks cost nothing per event.
//!
//! Keys that expire leave their members in
//! `P:ev:all` and their bytes in `P:ev:total` until the store's bound evicts them: the bound
//! then counts some bytes Redis already freed, so it only errs towards evicting early.

use codomyrmex_mcp::store::{
    EventId, EventStore, Replay, ReplayScope, StoreError, StoreFuture, StoredEvent, StreamWriter,
};
use redis::Script;

use crate::bus::LISTENS;
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
local function oldest(set)
  local o = redis.call('ZRANGE', set, 0, 0)
  return o[1]
end
-- Appends `data` to stream `n` of session `s` (known, open), evicts what the bounds `b`
-- (events, stream bytes, session bytes, total bytes, ttl) no longer allow, and publishes it.
local function append(p, s, n, data, b)
  local meta = p .. ':ev:meta:' .. s .. ':' .. n
  local seq = redis.call('HINCRBY', meta, 'seq', 1)
  local len = string.len(data)
  redis.call('HSET', p .. ':ev:data:' .. s .. ':' .. n, seq, data)
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
  while tonumber(redis.call('HGET', meta, 'count')) > tonumber(b[1])
      or tonumber(redis.call('HGET', meta, 'bytes')) > tonumber(b[2]) do
    local o = oldest(szs)
    if not o then break end
    evict(p, o)
  end
  while tonumber(redis.call('GET', p .. ':ev:sbytes:' .. s) or '0') > tonumber(b[3]) do
    local o = oldest(sess)
    if not o then break end
    evict(p, o)
  end
  while tonumber(redis.call('GET', p .. ':ev:total') or '0') > tonumber(b[4]) do
    local o = oldest(all)
    if not o then break end
    evict(p, o)
  end
  keep(b[5], meta, p .. ':ev:data:' .. s .. ':' .. n, szs, sess, p .. ':ev:owner:' .. s,
    p .. ':ev:nstream:' .. s, p .. ':ev:sbytes:' .. s, p .. ':ev:meta:' .. s .. ':0')
  redis.call('PUBLISH', p .. ':ev:ch:' .. s .. ':' .. n, seq)
  return seq
end
";

/// `open_stream`. ARGV: prefix, session, owner, ttl, and for `open_stream_by` the writer and
/// its epitaph. Returns the stream, or -1 (another owner).
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
if ARGV[5] then
  redis.call('HSET', p .. ':ev:meta:' .. s .. ':' .. n, 'writer', ARGV[5], 'epitaph', ARGV[6])
end
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
return append(p, s, n, ARGV[5], {ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]})
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

/// `wait_after`'s check, once subscribed. ARGV: prefix, session, owner, stream, after, look
/// (`1`: look whether the writer listens), end (`1`: end the stream if it does not), then
/// the bounds as for `APPEND` (events, stream bytes, session bytes, total bytes, ttl).
/// Returns 1 (an event follows, or the stream is closed, or was just ended), 0 (wait: no
/// writer recorded), 2 (wait: the writer listens, or was not looked at), 3 (wait: the
/// writer does not listen) or -1 (another owner).
const READY: &str = r"
local p, s, n = ARGV[1], ARGV[2], ARGV[4]
local owner = redis.call('GET', p .. ':ev:owner:' .. s)
if owner and owner ~= ARGV[3] then return -1 end
local meta = p .. ':ev:meta:' .. s .. ':' .. n
local f = redis.call('HMGET', meta, 'seq', 'closed', 'writer')
if not f[1] then return 0 end
if f[2] == '1' or tonumber(f[1]) > tonumber(ARGV[5]) then return 1 end
if not f[3] then return 0 end
if ARGV[6] ~= '1' or listens(p, f[3]) then return 2 end
if ARGV[7] ~= '1' then return 3 end
-- The writer is gone: its readers get the epitaph, unless it answered before it went.
local last = redis.call('HGET', p .. ':ev:data:' .. s .. ':' .. n, f[1])
local ok, m = false, nil
if last then ok, m = pcall(cjson.decode, last) end
local answered = ok and type(m) == 'table' and m.method == nil
  and (m.result ~= nil or m.error ~= nil)
if not answered then
  append(p, s, n, redis.call('HGET', meta, 'epitaph') or '', {ARGV[8], ARGV[9], ARGV[10], ARGV[11], ARGV[12]})
end
redis.call('HSET', meta, 'closed', 1)
redis.call('PUBLISH', p .. ':ev:ch:' .. s .. ':' .. n, 'closed')
return 1
";

/// The longest a reader waits for a stream's next event before reading the store again: a
/// bound on what a lost notification costs (the pub/sub connection dropped, say), and the
/// step at which it looks whether the stream's writer still listens.
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
    /// How long a reader waits for an event before it reads the store again and looks at
    /// the stream's writer.
    wait_step: std::time::Duration,
}

impl RedisEventStore {
    /// SSE history on `redis` under `bounds`. Instances that share a prefix must use the same
    /// bounds.
    pub fn new(redis: RedisConnection, bounds: EventBounds) -> Self {
        Self {
            redis,
            bounds,
            wait_step: WAIT_BOUND,
        }
    }

    /// Readers wait `step` (default 5 s) for an event before they read the store again and
    /// look whether the stream's writer still listens: a stream whose writer is gone ends
    /// two steps after its last look at a live writer. Shorter costs a round trip more often
    /// per waiting reader.
    pub fn with_wait_step(mut self, step: std::time::Duration) -> Self {
        self.wait_step = step.max(std::time::Duration::from_millis(1));
        self
    }

    fn script(body: &str) -> Script {
        Script::new(&format!("{LISTENS}\n{EVICT}\n{body}"))
    }

    async fn open(
        &self,
        scope: ReplayScope<'_>,
        writer: Option<StreamWriter<'_>>,
    ) -> Result<u64, StoreError> {
        let open = Self::script(OPEN);
        let mut script = open.prepare_invoke();
        script
            .arg(&self.redis.prefix)
            .arg(scope.session)
            .arg(owner(scope))
            .arg(self.bounds.ttl_ms());
        // An epitaph over the event bound (a huge request id) is not kept: such a stream
        // has no writer on record, as without a bus.
        if let Some(w) = writer.filter(|w| w.epitaph.len() <= self.bounds.event_bytes) {
            script.arg(w.instance).arg(w.epitaph);
        }
        let n: i64 = script
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(|e| unavailable(&e))?;
        u64::try_from(n).map_err(|_| StoreError::UnknownStream)
    }

    /// `READY` for `after`: looking at the writer with `look`, ending the stream with `end`.
    async fn ready(
        &self,
        after: EventId,
        scope: ReplayScope<'_>,
        look: bool,
        end: bool,
    ) -> Result<i64, StoreError> {
        let b = self.bounds;
        Self::script(READY)
            .arg(&self.redis.prefix)
            .arg(scope.session)
            .arg(owner(scope))
            .arg(after.stream)
            .arg(after.seq)
            .arg(u8::from(look))
            .arg(u8::from(end))
            .arg(b.events)
            .arg(b.stream_bytes)
            .arg(b.session_bytes)
            .arg(b.total_bytes)
            .arg(b.ttl_ms())
            .invoke_async(&mut self.redis.conn())
            .await
            .map_err(|e| unavailable(&e))
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
        Box::pin(self.open(scope, None))
    }

    fn open_stream_by<'a>(
        &'a self,
        scope: ReplayScope<'a>,
        writer: StreamWriter<'a>,
    ) -> StoreFuture<'a, u64> {
        Box::pin(self.open(scope, Some(writer)))
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
            let mut ready = self.ready(after, scope, false, false).await?;
            // The writer did not listen at the last look: one more, a step later, ends it.
            let mut gone = false;
            loop {
                match ready {
                    -1 => return Err(StoreError::UnknownStream),
                    1 => return Ok(()),
                    _ => {}
                }
                if tokio::time::timeout(self.wait_step, notified.as_mut())
                    .await
                    .is_ok()
                {
                    return Ok(());
                }
                if ready == 0 {
                    // No writer to look at: the caller reads the store again.
                    return Ok(());
                }
                let end = gone;
                ready = self.ready(after, scope, true, end).await?;
                gone = ready == 3;
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
