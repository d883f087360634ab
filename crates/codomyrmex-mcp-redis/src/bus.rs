//! [`RedisBus`]: the [`MessageBus`] through Redis pub/sub.
//!
//! Layout under the prefix `P`:
//! - `P:bus:next`: a counter; each instance takes its name from it when it joins;
//! - `P:bus:c:S:KEY`: the claim of request `KEY` of session `S`: the owning instance's name,
//!   with a Redis expiry (the claim's TTL);
//! - channels `P:bus:i:NAME` (what is routed to one instance) and `P:bus:all` (broadcasts);
//!   a payload is the session id, a newline, and the JSON-RPC message.
//!
//! Routing is one script (read the claim, publish to its owner), so it costs one round trip;
//! a claim and a release one each. A claim whose owner has no subscriber (the instance
//! died) routes nowhere: the sender gets [`StoreError::OwnerGone`]. That is what an
//! instance's life is, for every script of this crate ([`LISTENS`]): a subscriber on its
//! channel. A process that dies loses its connections, and Redis its subscriptions, at once.

use std::sync::Arc;

use codomyrmex_mcp::store::{BusHandler, BusMessage, MessageBus, Routed, StoreError, StoreFuture};
use redis::Script;

use crate::{RedisConnection, unavailable};

/// Whether instance `name` listens (has a subscriber on `P:bus:i:NAME`), as a Lua function
/// for the scripts that need to know (the event store's readers, [`RedisBus::listens`]).
pub(crate) const LISTENS: &str = r"
local function listens(p, name)
  local r = redis.call('PUBSUB', 'NUMSUB', p .. ':bus:i:' .. name)
  return tonumber(r[2]) > 0
end
";

/// `listens`. ARGV: prefix, name. Returns 1 or 0.
const LISTENS_NOW: &str = r"
if listens(ARGV[1], ARGV[2]) then return 1 end
return 0
";

/// `claim`. KEYS: the claim. ARGV: name, ttl. Returns 1, or 0 (another instance's).
const CLAIM: &str = r"
local v = redis.call('GET', KEYS[1])
if v and v ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
";

/// `release`. KEYS: the claim. ARGV: name.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 1
";

/// `route`. KEYS: the claim. ARGV: prefix, payload. Returns how many subscribers got it: 0
/// when there is no claim, -1 when its owner no longer listens (it died).
const ROUTE: &str = r"
local owner = redis.call('GET', KEYS[1])
if not owner then return 0 end
local got = redis.call('PUBLISH', ARGV[1] .. ':bus:i:' .. owner, ARGV[2])
if got == 0 then return -1 end
return got
";

/// The [`MessageBus`] in Redis; cheap to clone.
#[derive(Debug, Clone)]
pub struct RedisBus {
    redis: RedisConnection,
    name: String,
}

impl RedisBus {
    /// Joins the bus of the instances sharing `redis` (and its prefix), under a fresh name.
    pub async fn join(redis: RedisConnection) -> Result<Self, StoreError> {
        let n: u64 = redis::cmd("INCR")
            .arg(format!("{}:bus:next", redis.prefix))
            .query_async(&mut redis.conn())
            .await
            .map_err(|e| unavailable(&e))?;
        Ok(Self {
            redis,
            name: format!("i{n}"),
        })
    }

    fn claim_key(&self, session: &str, key: &str) -> String {
        format!("{}:bus:c:{session}:{key}", self.redis.prefix)
    }

    fn payload(session: &str, message: &BusMessage) -> Vec<u8> {
        let message = message.to_bytes();
        let mut out = Vec::with_capacity(session.len() + 1 + message.len());
        out.extend_from_slice(session.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&message);
        out
    }
}

/// A payload as [`Routed`]; `None` when it is not one.
fn routed(payload: &[u8]) -> Option<Routed> {
    let at = payload.iter().position(|b| *b == b'\n')?;
    let session = std::str::from_utf8(&payload[..at]).ok()?.to_owned();
    Some(Routed {
        session,
        message: BusMessage::from_bytes(&payload[at + 1..])?,
    })
}

impl MessageBus for RedisBus {
    fn instance(&self) -> &str {
        &self.name
    }

    fn subscribe<'a>(&'a self, handler: Arc<dyn BusHandler>) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let hub = self.redis.hub().await?;
            let deliver: crate::pubsub::Handler = Arc::new(move |payload: Vec<u8>| {
                if let Some(r) = routed(&payload) {
                    handler.deliver(r);
                }
            });
            let prefix = &self.redis.prefix;
            hub.handle(format!("{prefix}:bus:i:{}", self.name), deliver.clone())
                .await?;
            hub.handle(format!("{prefix}:bus:all"), deliver).await
        })
    }

    fn claim<'a>(
        &'a self,
        session: &'a str,
        key: &'a str,
        _now: u64,
        ttl_ms: u64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let ok: i64 = Script::new(CLAIM)
                .key(self.claim_key(session, key))
                .arg(&self.name)
                .arg(ttl_ms.max(1))
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            if ok == 1 {
                Ok(())
            } else {
                Err(StoreError::Exists)
            }
        })
    }

    fn release<'a>(&'a self, session: &'a str, key: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = Script::new(RELEASE)
                .key(self.claim_key(session, key))
                .arg(&self.name)
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(())
        })
    }

    fn route<'a>(
        &'a self,
        session: &'a str,
        key: &'a str,
        message: BusMessage,
        _now: u64,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let got: i64 = Script::new(ROUTE)
                .key(self.claim_key(session, key))
                .arg(&self.redis.prefix)
                .arg(Self::payload(session, &message))
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            if got < 0 {
                // Also while the owner's pub/sub connection is reconnecting: either way the
                // message is not delivered (pub/sub keeps nothing).
                return Err(StoreError::OwnerGone);
            }
            Ok(got > 0)
        })
    }

    fn listens<'a>(&'a self, name: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let got: i64 = Script::new(&format!("{LISTENS}\n{LISTENS_NOW}"))
                .arg(&self.redis.prefix)
                .arg(name)
                .invoke_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(got == 1)
        })
    }

    fn epoch(&self) -> Option<u64> {
        // Before the first subscription nothing was heard, so nothing can have been missed.
        self.redis
            .hub
            .get()
            .map_or(Some(0), crate::pubsub::Hub::epoch)
    }

    fn broadcast<'a>(&'a self, session: &'a str, message: BusMessage) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let _: i64 = redis::cmd("PUBLISH")
                .arg(format!("{}:bus:all", self.redis.prefix))
                .arg(Self::payload(session, &message))
                .query_async(&mut self.redis.conn())
                .await
                .map_err(|e| unavailable(&e))?;
            Ok(())
        })
    }
}
