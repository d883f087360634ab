//! Redis implementations of the core's store traits (`codomyrmex_mcp::store`, `task_store`,
//! `change_bus`; each trait's one contract suite runs against them), so that several server
//! instances share one service's state:
//!
//! - [`RedisSessionStore`]: 2025-11-25 session records ([`SessionStore`]), with the table's
//!   cap, least-recently-used eviction of idle sessions, sliding expiry and compare-and-set;
//! - [`RedisEventStore`]: SSE history for `Last-Event-ID` ([`EventStore`]), bounded in events
//!   and bytes per stream, per session and for the whole store, oldest first, expiring, and
//!   scoped to the session and principal that own each stream; each append is announced on
//!   the stream's pub/sub channel, so a reader on any instance follows it;
//! - [`RedisBus`]: routing of client answers and cancellations to the instance whose call
//!   waits ([`MessageBus`]), through pub/sub with the owners of pending requests recorded
//!   with a TTL;
//! - [`RedisTaskStore`]: task records ([`TaskStore`]), so that `tasks/*` work from any
//!   instance, with the owners' leases, and cancels and `tasks/update` answers queued for them;
//! - [`RedisChangeBus`]: list changes and resource updates between instances (`ChangeBus`,
//!   over pub/sub).
//!
//! A process has one pub/sub connection per [`RedisConnection`] (the bus, the change feeds
//! and the SSE readers share it) and, through [`RedisBus::join`], one instance name, which
//! `serve` also gives its task leases and its change bridge.
//!
//! Every operation that reads and writes is one Lua script, so it is atomic across instances.
//! Both stores share one [`ConnectionManager`], which reconnects by itself after Redis goes
//! away; while it is away, operations fail with [`StoreError::Unavailable`] (the HTTP
//! transport answers `503` with `Retry-After`). Keys live under a prefix (default
//! `codomyrmex-mcp`), so several services can share one Redis. Standalone Redis (or one
//! primary): the scripts build key names from their arguments, which Redis Cluster does not
//! allow across slots.
//!
//! Where to start: [`RedisConnection::connect`], then one store per trait built on it, given
//! to the library's `HttpConfig` (`with_session_store`, `with_event_store`, ...) and to
//! `McpServer::with_task_store`. The binary does all of it for `serve --store redis://...`
//! (its `serve.rs`); the guide's chapter "Several instances on Redis behind a load balancer"
//! (`docs/deployment.md` in the repository) says how to run it, and why each store exists.
//!
//! What this crate is not: it holds no live state (running calls, open responses). Those stay
//! with the instance that runs them; the records are what another instance needs.
//!
//! [`SessionStore`]: codomyrmex_mcp::store::SessionStore
//! [`EventStore`]: codomyrmex_mcp::store::EventStore
//! [`MessageBus`]: codomyrmex_mcp::store::MessageBus
//! [`TaskStore`]: codomyrmex_mcp::task_store::TaskStore
//! [`StoreError::Unavailable`]: codomyrmex_mcp::store::StoreError::Unavailable

#![warn(missing_docs)]

mod bus;
mod changes;
mod events;
mod pubsub;
mod session;
mod tasks;

pub use bus::RedisBus;
pub use changes::RedisChangeBus;
pub use events::{EventBounds, RedisEventStore};
pub use session::RedisSessionStore;
pub use tasks::RedisTaskStore;

use codomyrmex_mcp::store::StoreError;
use codomyrmex_mcp::util::redact_url as redact;
use redis::aio::{ConnectionLike, ConnectionManager};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The key prefix used unless another is given.
pub const DEFAULT_PREFIX: &str = "codomyrmex-mcp";

/// A connection to one Redis, shared by the stores built from it.
#[derive(Clone)]
pub struct RedisConnection {
    manager: ConnectionManager,
    client: redis::Client,
    /// The pub/sub connection, made when first needed (a waiting SSE reader, the bus).
    hub: std::sync::Arc<tokio::sync::OnceCell<pubsub::Hub>>,
    /// The change channel's fan-out to every change feed ([`RedisChangeBus`]), made when
    /// first subscribed.
    changes: Arc<tokio::sync::OnceCell<tokio::sync::broadcast::Sender<Vec<u8>>>>,
    prefix: String,
    trips: Arc<AtomicU64>,
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
            hub: std::sync::Arc::default(),
            changes: Arc::default(),
            prefix: DEFAULT_PREFIX.to_owned(),
            trips: Arc::new(AtomicU64::new(0)),
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

    /// Round trips to Redis so far through this connection and its clones (every store built
    /// on it): a command, a pipeline or a script call counts one; a script's first call on a
    /// Redis that does not know it yet three (`EVALSHA`, `SCRIPT LOAD`, `EVALSHA`).
    pub fn round_trips(&self) -> u64 {
        self.trips.load(Ordering::Relaxed)
    }

    fn conn(&self) -> Counted {
        Counted {
            inner: self.manager.clone(),
            trips: self.trips.clone(),
        }
    }

    /// The shared pub/sub connection, connected on first use.
    async fn hub(&self) -> Result<&pubsub::Hub, StoreError> {
        self.hub
            .get_or_try_init(|| pubsub::Hub::connect(self.client.clone()))
            .await
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

/// The connection every store call goes through: it counts round trips
/// ([`RedisConnection::round_trips`]) and passes each one to the connection manager.
struct Counted {
    inner: ConnectionManager,
    trips: Arc<AtomicU64>,
}

impl ConnectionLike for Counted {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        self.trips.fetch_add(1, Ordering::Relaxed);
        self.inner.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        self.trips.fetch_add(1, Ordering::Relaxed);
        self.inner.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

/// A Redis failure as the stores report it.
fn unavailable(e: &redis::RedisError) -> StoreError {
    StoreError::Unavailable(format!("Redis: {e}"))
}
