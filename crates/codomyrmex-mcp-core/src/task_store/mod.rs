//! The task seam: [`TaskStore`], where the serializable records of tasks live, so that
//! `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update` and `tasks/list` work from
//! any server instance sharing the store.
//!
//! A [`TaskRecord`] is what another instance needs to answer for a task: its id, owner
//! instance, era and who may see it, status and status message, TTL and expiry, poll
//! interval, pending input requests, the final result or error once there is one, and the
//! owner's lease. What it is not: the live part of a task (the running future, its
//! cancellation token, the tool waiting for input) stays on the instance that runs the work,
//! in the engine; no live object crosses this trait.
//!
//! The rules every implementation keeps ([`contract`] checks them):
//! - **A terminal record is final.** Once a record is `completed`, `failed` or `cancelled`,
//!   [`put`](TaskStore::put) does not change it: a cancel from another instance, or a lapsed
//!   lease, wins over an owner that writes later.
//! - **Leases.** The owner renews the lease of its running tasks
//!   ([`renew`](TaskStore::renew)). A running record whose lease has lapsed at `now` is
//!   turned `failed` ("the instance running this task stopped") by whichever read sees it
//!   first, and written back, so every instance sees the same.
//! - **Cancel and input across instances.** [`cancel`](TaskStore::cancel) makes a running
//!   record `cancelled` at once; [`deliver`](TaskStore::deliver) queues `tasks/update`
//!   answers. The owner learns of both at its next renewal ([`Renewal`]): it polls, so no
//!   subscription is needed, and a cancel reaches the work within one renewal interval.
//! - **Expiry.** A record is gone once `expires_at` has passed.
//!
//! Time comes in as `now`, wall-clock milliseconds since the Unix epoch; no implementation
//! reads a clock. Methods return boxed `Send` futures, so the trait is dyn-compatible and
//! needs no runtime: the engine awaits them inside the `Pending` futures the driver runs, and
//! the driver's task sync (`codomyrmex_mcp::runtime`) writes and renews records.
//!
//! [`MemoryTaskStore`] is the in-memory implementation, and the engine's default: without a
//! shared store, an engine keeps its tasks' records in one of its own.

mod memory;

pub mod contract;

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use memory::MemoryTaskStore;

/// The schema version of [`TaskRecord`]; a store refuses records of another.
pub const TASK_RECORD_SCHEMA: u32 = 1;

/// The status message of a task whose owner stopped renewing its lease.
pub const OWNER_STOPPED: &str = "the instance running this task stopped";

/// What a task store method returns: a boxed future, `Send`, borrowing the store.
pub type TaskStoreFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, TaskStoreError>> + Send + 'a>>;

/// Why a task store operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// The backing store cannot be reached.
    #[error("the task store is unavailable: {0}")]
    Unavailable(String),
    /// A stored record does not decode (another version, or corrupt).
    #[error("a stored task record is unreadable: {0}")]
    Corrupt(String),
}

/// The era whose wire shape a task has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum TaskEra {
    /// 2026-07-28, the `io.modelcontextprotocol/tasks` extension.
    Modern,
    /// 2025-11-25, the experimental tasks.
    Legacy,
}

/// A task's status, as both eras spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for input from the client.
    InputRequired,
    /// Finished with a result.
    Completed,
    /// Ended with an error (or, in 2025-11-25, a tool error result).
    Failed,
    /// Cancelled.
    Cancelled,
}

impl TaskStatus {
    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the task has ended.
    pub const fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
#[non_exhaustive]
pub enum TaskOutcome {
    /// The request's result (for a tool, possibly with `isError: true`), as the client gets it.
    Result {
        /// The result object.
        value: Value,
        /// Whether the tool reported an error.
        is_error: bool,
    },
    /// A JSON-RPC error object (`code`, `message`, `data`).
    Error {
        /// The error object.
        error: Value,
    },
    /// Cancelled: there is no result.
    Cancelled,
}

/// A task as a store keeps it. Times are wall-clock milliseconds since the Unix epoch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// [`TASK_RECORD_SCHEMA`] when written.
    pub schema: u32,
    /// The task id (128 random bits as hex).
    pub id: String,
    /// The instance running the work.
    pub owner: String,
    /// The era of the task's wire shape.
    pub era: TaskEra,
    /// The principal that created it; only it may see the task.
    pub principal: Option<String>,
    /// 2025-11-25: the session the task belongs to (its `Mcp-Session-Id`); `tasks/list` lists
    /// by it. `None` for 2026-07-28 tasks.
    pub session: Option<String>,
    /// The order of creation on the owner, for listing.
    pub seq: u64,
    /// The status.
    pub status: TaskStatus,
    /// The status message, if any.
    pub status_message: Option<String>,
    /// When the task was created.
    pub created_at: u64,
    /// When it last changed.
    pub updated_at: u64,
    /// Its time to live from creation, in milliseconds.
    pub ttl: u64,
    /// When it is removed (`created_at + ttl`).
    pub expires_at: u64,
    /// The polling interval suggested to clients, in milliseconds.
    pub poll_interval: u64,
    /// 2026-07-28: the input requests waiting for `tasks/update`, by key.
    pub input_requests: Map<String, Value>,
    /// How it ended, once it has.
    pub outcome: Option<TaskOutcome>,
    /// Until when the owner vouches for a running task.
    pub lease_until: u64,
}

impl TaskRecord {
    /// A fresh running record.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: impl Into<String>,
        owner: impl Into<String>,
        era: TaskEra,
        now: u64,
        ttl: u64,
        poll_interval: u64,
        lease_until: u64,
    ) -> Self {
        Self {
            schema: TASK_RECORD_SCHEMA,
            id: id.into(),
            owner: owner.into(),
            era,
            principal: None,
            session: None,
            seq: 0,
            status: TaskStatus::Working,
            status_message: None,
            created_at: now,
            updated_at: now,
            ttl,
            expires_at: now.saturating_add(ttl),
            poll_interval,
            input_requests: Map::new(),
            outcome: None,
            lease_until,
        }
    }

    /// Whether the record is gone at `now`.
    pub fn is_expired(&self, now: u64) -> bool {
        now >= self.expires_at
    }

    /// Whether a running record's lease has lapsed at `now`.
    pub fn lease_lapsed(&self, now: u64) -> bool {
        !self.status.is_terminal() && now >= self.lease_until
    }

    /// This record as failed because its owner stopped, at `now`.
    pub fn owner_stopped(mut self, now: u64) -> Self {
        self.status = TaskStatus::Failed;
        self.status_message = Some(OWNER_STOPPED.into());
        self.input_requests.clear();
        self.outcome = Some(TaskOutcome::Error {
            error: serde_json::json!({
                "code": -32603,
                "message": format!("Task {} failed: {OWNER_STOPPED}", self.id),
            }),
        });
        self.updated_at = self.updated_at.max(now);
        self
    }

    /// This record as cancelled by request, at `now`.
    pub fn cancelled(mut self, now: u64) -> Self {
        self.status = TaskStatus::Cancelled;
        self.status_message = Some("The task was cancelled by request.".into());
        self.input_requests.clear();
        self.outcome = Some(TaskOutcome::Cancelled);
        self.updated_at = self.updated_at.max(now);
        self
    }

    /// The record as JSON, for a store that keeps bytes.
    pub fn encode(&self) -> Result<Vec<u8>, TaskStoreError> {
        serde_json::to_vec(self).map_err(|e| TaskStoreError::Corrupt(e.to_string()))
    }

    /// A record from [`encode`](Self::encode)'s bytes; refuses another schema version.
    pub fn decode(bytes: &[u8]) -> Result<Self, TaskStoreError> {
        let record: Self =
            serde_json::from_slice(bytes).map_err(|e| TaskStoreError::Corrupt(e.to_string()))?;
        if record.schema != TASK_RECORD_SCHEMA {
            return Err(TaskStoreError::Corrupt(format!(
                "task record schema {} (this build reads {TASK_RECORD_SCHEMA})",
                record.schema
            )));
        }
        Ok(record)
    }
}

/// What an owner learns when it renews its leases.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Renewal {
    /// Tasks whose work must stop: cancelled by request, failed (a lapsed lease), expired or
    /// gone from the store.
    pub stop: Vec<String>,
    /// `tasks/update` answers delivered through the store, per task, oldest first.
    pub responses: Vec<(String, Map<String, Value>)>,
}

/// Where task records live. See the module docs for the rules.
pub trait TaskStore: Send + Sync + std::fmt::Debug {
    /// Writes `record` (create or update), unless the stored one is terminal: then it stays,
    /// and `false` comes back. Queued answers and the lease of a stored record are kept when
    /// the written one's lease is older.
    fn put(&self, record: TaskRecord) -> TaskStoreFuture<'_, bool>;

    /// The record `id` at `now`: `None` when missing or expired; a running record whose lease
    /// lapsed comes back (and is stored) [`owner_stopped`](TaskRecord::owner_stopped).
    fn get<'a>(&'a self, id: &'a str, now: u64) -> TaskStoreFuture<'a, Option<TaskRecord>>;

    /// `tasks/cancel`: a running record becomes [`cancelled`](TaskRecord::cancelled); a
    /// terminal one stays. The record after; `None` when missing.
    fn cancel<'a>(&'a self, id: &'a str, now: u64) -> TaskStoreFuture<'a, Option<TaskRecord>>;

    /// `tasks/update`: queues `responses` for the owner of the running task `id` (a bounded
    /// queue: the oldest answers give way). `false` when the task is missing or terminal.
    fn deliver<'a>(
        &'a self,
        id: &'a str,
        responses: Map<String, Value>,
    ) -> TaskStoreFuture<'a, bool>;

    /// The owner renews the lease of its running tasks `ids` to `lease_until`, and hears which
    /// must stop and which answers arrived (taken from the queue).
    fn renew<'a>(&'a self, ids: &'a [String], lease_until: u64) -> TaskStoreFuture<'a, Renewal>;

    /// The unexpired records of 2025-11-25 session `session`, by `seq` then id (leases applied
    /// as in [`get`](Self::get)).
    fn list<'a>(&'a self, session: &'a str, now: u64) -> TaskStoreFuture<'a, Vec<TaskRecord>>;

    /// Resolves when record `id` may have changed since its `updated_at` was `seen`, or after
    /// a bound the implementation chooses (the caller reads again either way).
    fn changed<'a>(&'a self, id: &'a str, seen: u64) -> TaskStoreFuture<'a, ()>;
}
