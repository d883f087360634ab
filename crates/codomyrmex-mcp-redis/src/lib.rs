//! Redis implementations of `codomyrmex-mcp`'s store traits, so that several server
//! instances share one service's state:
//!
//! - [`RedisSessionStore`]: 2025-11-25 session records ([`SessionStore`]), with the table's
//!   cap, least-recently-used eviction of idle sessions, sliding expiry and compare-and-set;
//! - [`RedisEventStore`]: SSE history for `Last-Event-ID` ([`EventStore`]), bounded in events
//!   and bytes per stream, per session and for the whole store, oldest first, and scoped to the
//!   session and principal that own each stream;
//! - [`RedisTaskStore`]: task records ([`TaskStore`]), so that `tasks/*` work from any
//!   instance, with the owners' leases, and cancels and `tasks/update` answers queued for them;
//! - [`RedisChangeBus`]: list changes and resource updates between instances (`ChangeBus`,
//!   over pub/sub).
//!
//! Every operation that reads and writes is one Lua script, so it is atomic across instances.
//! Both stores share one [`ConnectionManager`], which reconnects by itself after Redis goes
//! away; while it is away, operations fail with [`StoreError::Unavailable`] (the HTTP
//! transport answers `503` with `Retry-After`). Keys live under a prefix (default
//! `codomyrmex-mcp`), so several services can share one Redis. Standalone Redis (or one
//! primary): the scripts build key names from their arguments, which Redis Cluster does not
//! allow across slots.
//!
//! What this crate is not: it holds no live state (running calls, open responses). Those stay
//! with the instance that runs them; the records are what another instance needs.
//!
//! [`SessionStore`]: codomyrmex_mcp::store::SessionStore
//! [`EventStore`]: codomyrmex_mcp::store::EventStore
//! [`TaskStore`]: codomyrmex_mcp::task_store::TaskStore
//! [`StoreError::Unavailable`]: codomyrmex_mcp::store::StoreError::Unavailable

#![warn(missing_docs)]

mod changes;
mod events;
mod session;
mod tasks;

pub use changes::RedisChangeBus;
pub use events::{EventBounds, RedisEventStore};
pub use session::RedisSessionStore;
pub use tasks::RedisTaskStore;

use codomyrmex_mcp::store::{StoreError, redact_url as redact};
use redis::aio::ConnectionManager;

/// The key prefix used unless another is given.
pub const DEFAULT_PREFIX: &str = "codomyrmex-mcp";

/// A connection to one Redis, shared by the stores built from it.
#[derive(Clone)]
pub struct RedisConnection {
    manager: ConnectionManager,
    /// For connections of their own (pub/sub).
    client: redis::Client,
    prefix: String,
}

impl std::fmt::Debug for RedisConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConnection")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl RedisConnection {
    /// Connects to `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`), with keys under
    /// [`DEFAULT_PREFIX`]. Fails when the URL is invalid or Redis cannot be reached now.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let client = redis::Client::open(url).map_err(|e| {
            StoreError::Unavailable(format!("invalid Redis URL {}: {e}", redact(url)))
        })?;
        let manager = client
            .get_connection_manager()
            .await
            .map_err(|e| StoreError::Unavailable(format!("Redis at {}: {e}", redact(url))))?;
        Ok(Self {
            manager,
            client,
            prefix: DEFAULT_PREFIX.to_owned(),
        })
    }

    /// Keys under `prefix` instead (instances of one service must use the same).
    pub fn with_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    fn conn(&self) -> ConnectionManager {
        self.manager.clone()
    }

    /// A 32-byte secret every instance sharing this Redis and prefix agrees on, such as the
    /// `requestState` sealing key: the first instance to ask stores `fresh` (random bytes it
    /// drew) under `name`, and every later one gets those bytes. The secret lives in Redis
    /// without expiry; delete `PREFIX:secret:NAME` to rotate it (every instance must restart).
    pub async fn shared_secret(&self, name: &str, fresh: [u8; 32]) -> Result<[u8; 32], StoreError> {
        let key = format!("{}:secret:{name}", self.prefix);
        let stored: Vec<u8> = redis::cmd("SET")
            .arg(&key)
            .arg(fresh.as_slice())
            .arg("NX")
            .arg("GET")
            .query_async::<Option<Vec<u8>>>(&mut self.conn())
            .await
            .map_err(|e| unavailable(&e))?
            .unwrap_or_else(|| fresh.to_vec());
        stored.try_into().map_err(|_| {
            StoreError::Corrupt(format!(
                "{key} does not hold 32 bytes; delete it to make a new one"
            ))
        })
    }
}

/// A Redis failure as the stores report it.
fn unavailable(e: &redis::RedisError) -> StoreError {
    StoreError::Unavailable(format!("Redis: {e}"))
}
