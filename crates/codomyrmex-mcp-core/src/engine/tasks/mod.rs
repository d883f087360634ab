//! Tasks: tool calls that run on after their request is answered, and that the client polls.
//!
//! Two wire shapes share one live [`TaskStore`] table (the records of its tasks live behind
//! the [`crate::task_store::TaskStore`] trait, in memory by default):
//!
//! - **2026-07-28**, the `io.modelcontextprotocol/tasks` extension (SEP-2663). A client opts in
//!   per request by declaring the extension in `_meta` client capabilities; the *server* decides
//!   whether a call becomes a task. It answers `tools/call` with a flat `CreateTaskResult`
//!   (`resultType: "task"`), and the client polls `tasks/get` (a `DetailedTask` that inlines
//!   the result, the error or the pending `inputRequests`), answers input with `tasks/update`
//!   and stops work with `tasks/cancel` (both acknowledge with an empty result).
//! - **2025-11-25**, the experimental tasks. The client asks for a task with the `task`
//!   parameter of `tools/call` on tools whose `execution.taskSupport` allows it, and gets
//!   `{task}`; it polls `tasks/get`, fetches the outcome with the blocking `tasks/result`, lists
//!   its tasks with `tasks/list` and cancels with `tasks/cancel`. Input goes out as
//!   server-to-client requests tagged with `io.modelcontextprotocol/related-task`.
//!
//! A modern call that may become a task runs inline first, with multi round-trip input: if it
//! finishes without waiting, the client gets an ordinary result (or an
//! `InputRequiredResult`). The moment the tool first waits, or calls
//! [`ToolContext::start_task`](crate::ToolContext::start_task), the call becomes a task: the
//! client gets `CreateTaskResult` and the tool runs on in the background, where
//! [`ToolContext::input`](crate::ToolContext::input) parks the task in `input_required` until
//! `tasks/update` delivers the answers.
//!
//! The store is bounded: at most [`TaskConfig::max_tasks`] tasks, each removed (and cancelled
//! if still running) when its TTL from creation elapses. Task ids are 128 random bits. Tasks
//! are bound to the authenticated principal, and 2025-11-25 tasks also to their session.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_channel::oneshot;
use futures_util::FutureExt as _;
use serde_json::{Map, Value, json};

use crate::platform::TimeSource;
use crate::sync::{CancellationToken, Generation};

use super::session::Session;
use crate::context::ClientRequestError;
use crate::outbound::Outbound;
use crate::wire::{Era, ErrorCode, ErrorObject, OutgoingMessage};

mod dirty;
mod methods;
mod runner;
mod shared;
#[cfg(test)]
mod shared_tests;
mod store;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod timer_tests;

pub(in crate::engine) use runner::{TaskEnd, TaskJob};
pub(crate) use shared::SharedTasks;
pub(in crate::engine) use shared::StoreRead;
pub use shared::TaskSync;
pub(crate) use store::TaskStore;
use store::*;

/// The engine's side of tasks, the `tasks/*` family: its live table and records
/// ([`TaskStore`], shared by an engine's rebuilds) and what the family reads besides (the
/// registry, whose tools say whether they run as tasks; the clock; the per-tool timeouts and
/// the page size of the configuration). Made once per engine. Its methods are the family:
/// the `tasks/*` methods and the tasks capability (`methods.rs`), and a `tools/call` that is
/// or may become a task, from its plan to its recorded outcome (`runner.rs`). What else of the
/// engine a method needs comes in as an argument: the results' shaping ([`Results`]), and
/// where a handed-out wait's or invocation's outcome goes back ([`JobHost`]).
///
/// [`Results`]: super::results::Results
/// [`JobHost`]: crate::invocation::JobHost
pub(in crate::engine) struct Tasks {
    store: Arc<TaskStore>,
    registry: Arc<crate::registry::McpToolRegistry>,
    time: Arc<dyn TimeSource>,
    tool_timeouts: HashMap<String, Duration>,
    page_size: usize,
}

impl Tasks {
    /// The family over `store`, for an engine serving `registry` under `config` on `time`.
    pub(in crate::engine) fn new(
        store: Arc<TaskStore>,
        registry: Arc<crate::registry::McpToolRegistry>,
        time: Arc<dyn TimeSource>,
        config: &crate::config::McpServerConfig,
    ) -> Self {
        Self {
            store,
            registry,
            time,
            tool_timeouts: config.tool_timeouts.clone(),
            page_size: config.page_size,
        }
    }

    /// The live table and its records, which an engine rebuilt from this one shares.
    pub(in crate::engine) fn store(&self) -> &Arc<TaskStore> {
        &self.store
    }
}

/// The extension identifier (2026-07-28).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key tying a 2025-11-25 message to its task.
pub const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The most answers a task remembers (for tools that ask the same key again).
const MAX_ANSWERS: usize = 1024;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Limits of the task store.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskConfig {
    /// The most tasks kept at once, running or finished. When the store is full the oldest
    /// finished task makes room; when every task is still running, a 2026-07-28 call runs
    /// synchronously instead and a 2025-11-25 task request is refused (`-32603`).
    pub max_tasks: usize,
    /// How long a task is kept from its creation (`ttlMs`); a task still running then is
    /// cancelled. Also the longest a 2025-11-25 client may ask for with `task.ttl`. Tasks are
    /// not bound by the server's `tool_timeout`, only by a tool's own timeout setting.
    pub ttl: Duration,
    /// The polling interval suggested to clients (`pollIntervalMs`).
    pub poll_interval: Duration,
    /// The most input requests one task may have outstanding at once.
    pub max_pending_inputs: usize,
    /// The most bytes of finished results (as encoded JSON) kept at once; beyond it the oldest
    /// finished tasks are dropped early.
    pub max_retained_bytes: usize,
}

impl Default for TaskConfig {
    fn default() -> Self {
        Self {
            max_tasks: 1024,
            ttl: Duration::from_secs(30 * 60),
            poll_interval: Duration::from_millis(500),
            max_pending_inputs: 64,
            max_retained_bytes: 64 * 1024 * 1024,
        }
    }
}

/// A task's status: the records' own type.
pub(crate) use crate::task_store::TaskStatus as Status;

/// How a task ended.
#[derive(Debug, Clone)]
enum Outcome {
    /// The request's result (for a tool, possibly with `isError: true`).
    Result {
        value: Value,
        is_error: bool,
    },
    /// A JSON-RPC error (a protocol-level failure).
    Error(ErrorObject),
    Cancelled,
    /// A result whose one copy is the record in the engine's default in-memory store: once
    /// that terminal record is written (which is final), the entry lets go of its own copy.
    Kept {
        is_error: bool,
    },
}

/// Who may see a task.
enum Owner {
    /// 2026-07-28: the principal that created it (no sessions in that era).
    Modern { principal: Option<String> },
    /// 2025-11-25: the session and principal that created it.
    Legacy {
        session: Weak<Session>,
        /// The session's serial: the id a job names it by.
        serial: u64,
        principal: Option<String>,
        /// The session's key (`Mcp-Session-Id`), by which other instances recognise it.
        key: Option<String>,
    },
}

impl Owner {
    fn of(era: Era, session: &Arc<Session>) -> Self {
        let principal = session.principal().map(|p| p.subject);
        match era {
            Era::Modern => Self::Modern { principal },
            Era::Legacy => Self::Legacy {
                session: Arc::downgrade(session),
                serial: session.serial(),
                principal,
                key: session.key().map(str::to_owned),
            },
        }
    }

    /// A 2025-11-25 owner named by `key` in its records (see `TaskStore::session_key`).
    fn keyed(mut self, session_key: Option<String>) -> Self {
        if let Self::Legacy { key, .. } = &mut self {
            *key = session_key;
        }
        self
    }

    fn admits(&self, era: Era, session: &Session) -> bool {
        let principal = session.principal().map(|p| p.subject);
        self.admits_id(era, session.serial(), &principal)
    }

    /// [`admits`](Self::admits), for a session named by its serial and principal (a job's
    /// ids).
    fn admits_id(&self, era: Era, serial: u64, principal: &Option<String>) -> bool {
        match self {
            Self::Modern { principal: p } => era == Era::Modern && p == principal,
            Self::Legacy {
                serial: s,
                principal: p,
                ..
            } => era == Era::Legacy && *s == serial && p == principal,
        }
    }
}

#[derive(Default)]
struct TaskState {
    outcome: Option<Outcome>,
    /// Input requests waiting for `tasks/update`, by key (`{method, params}`).
    pending: Map<String, Value>,
    /// The tool futures waiting on each pending key, by waiter token.
    waiters: HashMap<String, Vec<(u64, oneshot::Sender<Value>)>>,
    /// Answers delivered so far, by key.
    answers: Map<String, Value>,
    /// 2025-11-25: server-to-client requests awaiting the client's answer.
    outstanding: usize,
    status_message: Option<String>,
    updated: Option<SystemTime>,
}

impl TaskState {
    fn status(&self, legacy: bool) -> Status {
        match &self.outcome {
            Some(Outcome::Cancelled) => Status::Cancelled,
            Some(Outcome::Error(_)) => Status::Failed,
            // 2025-11-25: a tool result with `isError` fails the task; 2026-07-28 reserves
            // `failed` for protocol errors.
            Some(Outcome::Result { is_error: true, .. } | Outcome::Kept { is_error: true })
                if legacy =>
            {
                Status::Failed
            }
            Some(Outcome::Result { .. } | Outcome::Kept { .. }) => Status::Completed,
            None if !self.pending.is_empty() || self.outstanding > 0 => Status::InputRequired,
            None => Status::Working,
        }
    }
}

/// One task.
pub(crate) struct TaskEntry {
    id: String,
    seq: u64,
    created: SystemTime,
    ttl: Duration,
    deadline: Instant,
    owner: Owner,
    /// The clock of `lastUpdatedAt`.
    time: Arc<dyn TimeSource>,
    legacy: bool,
    cancel: CancellationToken,
    state: Mutex<TaskState>,
    changed: Generation,
    /// 2025-11-25: what the task sends its client (its server-to-client requests and
    /// notifications), queued until a `tasks/result` stream attaches: a relayed
    /// [`Outbound`], under the queue's one bound and rules.
    relay: Outbound,
    next_waiter: AtomicU64,
    /// The encoded size of the kept result, counted against `max_retained_bytes`.
    size: AtomicUsize,
    /// Where changes go: written to the default in-memory store, or noted for the driver to
    /// write to a shared one. `None` for an entry outside any store (unit tests).
    dirty: Option<Arc<shared::Dirty>>,
}

impl std::fmt::Debug for TaskEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskEntry")
            .field("id", &self.id)
            .field("status", &self.status())
            .finish_non_exhaustive()
    }
}

/// What [`TaskEntry::register`] found for an input key.
enum Asked {
    Answered(Value),
    Waiting(Waiter),
}

/// A tool waiting for one input; withdraws the request if dropped unanswered.
struct Waiter {
    entry: Arc<TaskEntry>,
    key: String,
    token: u64,
    rx: Option<oneshot::Receiver<Value>>,
}

impl Waiter {
    async fn wait(mut self, cancel: &CancellationToken) -> Result<Value, ClientRequestError> {
        let Some(rx) = self.rx.take() else {
            return Err(ClientRequestError::Cancelled);
        };
        futures_util::select_biased! {
            () = cancel.cancelled().fuse() => Err(ClientRequestError::Cancelled),
            r = rx.fuse() => r.map_err(|_| ClientRequestError::Cancelled),
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        let mut st = lock(&self.entry.state);
        let Some(list) = st.waiters.get_mut(&self.key) else {
            return;
        };
        list.retain(|(t, _)| *t != self.token);
        if list.is_empty() {
            st.waiters.remove(&self.key);
            if st.pending.remove(&self.key).is_some() {
                drop(st);
                self.entry.touch();
            }
        }
    }
}

impl TaskEntry {
    /// A task created at `now`; `time` is the clock of its later changes (`lastUpdatedAt`).
    fn new(
        id: String,
        seq: u64,
        ttl: Duration,
        owner: Owner,
        now: crate::platform::Timestamp,
        time: Arc<dyn TimeSource>,
    ) -> Self {
        let legacy = matches!(owner, Owner::Legacy { .. });
        Self {
            id,
            seq,
            created: now.wall,
            ttl,
            deadline: now.mono + ttl,
            owner,
            time,
            legacy,
            cancel: CancellationToken::new(),
            state: Mutex::new(TaskState {
                updated: Some(now.wall),
                ..TaskState::default()
            }),
            changed: Generation::new(),
            relay: Outbound::relayed(),
            next_waiter: AtomicU64::new(0),
            size: AtomicUsize::new(0),
            dirty: None,
        }
    }

    /// Sends every change to `dirty` (the live store's), from now on.
    fn tracked(mut self, dirty: Option<Arc<shared::Dirty>>) -> Self {
        self.dirty = dirty;
        self
    }

    #[cfg(test)]
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    pub(crate) fn status(&self) -> Status {
        lock(&self.state).status(self.legacy)
    }

    fn expired(&self, now: Instant) -> bool {
        now >= self.deadline
    }

    /// Records a change: `lastUpdatedAt` and the change signal.
    fn touch(&self) {
        lock(&self.state).updated = Some(self.time.wall());
        // The record first: a reader woken by the signal reads it.
        if let Some(dirty) = &self.dirty {
            dirty.changed(self, false);
        }
        self.changed.bump();
    }

    /// Ends the task with `outcome`, unless it already ended. Returns whether it did.
    fn finish(&self, outcome: Outcome, message: Option<String>) -> bool {
        {
            let mut st = lock(&self.state);
            if st.outcome.is_some() {
                return false;
            }
            st.outcome = Some(outcome);
            st.status_message = message;
            st.pending.clear();
            // Dropping the senders wakes every waiting input with `Cancelled`.
            st.waiters.clear();
        }
        self.touch();
        true
    }

    /// `tasks/cancel`: moves a running task to `cancelled` and stops its work. The status it
    /// already had when terminal.
    fn cancel(&self) -> Result<(), Status> {
        let status = self.status();
        if status.is_terminal() {
            return Err(status);
        }
        self.finish(
            Outcome::Cancelled,
            Some("The task was cancelled by request.".into()),
        );
        self.cancel.cancel();
        Ok(())
    }

    /// Asks for input `key`: its answer if delivered already, otherwise a waiter.
    fn register(
        self: &Arc<Self>,
        key: &str,
        request: Value,
        max_pending: usize,
    ) -> Result<Asked, ClientRequestError> {
        let token = self.next_waiter.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut st = lock(&self.state);
            if st.outcome.is_some() {
                return Err(ClientRequestError::Cancelled);
            }
            if let Some(answer) = st.answers.get(key) {
                return Ok(Asked::Answered(answer.clone()));
            }
            if !st.pending.contains_key(key) {
                if st.pending.len() >= max_pending {
                    return Err(ClientRequestError::Unavailable);
                }
                st.pending.insert(key.to_owned(), request);
            }
            st.waiters
                .entry(key.to_owned())
                .or_default()
                .push((token, tx));
        }
        self.touch();
        Ok(Asked::Waiting(Waiter {
            entry: self.clone(),
            key: key.to_owned(),
            token,
            rx: Some(rx),
        }))
    }

    /// `tasks/update`: delivers the answers to pending keys; others are ignored. Returns how
    /// many were delivered.
    fn update(&self, responses: &Map<String, Value>) -> usize {
        let mut delivered = 0;
        {
            let mut st = lock(&self.state);
            for (key, answer) in responses {
                if st.pending.remove(key).is_none() {
                    continue;
                }
                delivered += 1;
                if st.answers.len() < MAX_ANSWERS {
                    st.answers.insert(key.clone(), answer.clone());
                }
                for (_, tx) in st.waiters.remove(key).unwrap_or_default() {
                    let _ = tx.send(answer.clone());
                }
            }
        }
        if delivered > 0 {
            self.touch();
        }
        delivered
    }

    /// 2025-11-25: a server-to-client request is out; the task is `input_required` until the
    /// returned guard drops.
    fn outstanding(self: &Arc<Self>) -> Outstanding {
        lock(&self.state).outstanding += 1;
        self.touch();
        Outstanding(self.clone())
    }

    /// The task object: `Task` of the era, and for a 2026-07-28 `tasks/get` (`detailed`) the
    /// inlined `inputRequests`, `result` or `error`.
    fn json(&self, config: &TaskConfig, detailed: bool) -> Map<String, Value> {
        shared::render(&self.record("", config.poll_interval, 0), detailed)
    }

    /// 2025-11-25 `tasks/result` of a finished task: what the call would have returned.
    #[cfg(test)]
    fn final_result(&self) -> Option<Result<Value, ErrorObject>> {
        // No outcome yet: no result (and no record to make).
        lock(&self.state).outcome.as_ref()?;
        shared::final_of(&self.record("", Duration::ZERO, 0))
    }
}

/// How often a 2025-11-25 task checks that its session is still there.
/// How often the store looks for 2025-11-25 tasks whose session is gone.
const SESSION_CHECK: Duration = Duration::from_secs(2);

impl Owner {
    /// Whether the task belonged to a session that is gone (2025-11-25 tasks only).
    fn is_orphaned(&self) -> bool {
        match self {
            Self::Legacy { session, .. } => session.strong_count() == 0,
            Self::Modern { .. } => false,
        }
    }
}

/// Marks a 2025-11-25 server-to-client request as answered when dropped.
struct Outstanding(Arc<TaskEntry>);

impl Drop for Outstanding {
    fn drop(&mut self) {
        {
            let mut st = lock(&self.0.state);
            st.outstanding = st.outstanding.saturating_sub(1);
        }
        self.0.touch();
    }
}

/// An RFC 3339 UTC timestamp with milliseconds.
fn iso8601(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Civil date from days since the epoch (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Whether the request's client capabilities declare the tasks extension.
fn declares_extension(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some_and(|v| !v.is_null())
}

/// `-32021`: the request needs the tasks extension.
fn missing_extension(message: &str) -> ErrorObject {
    ErrorObject::new(ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY, message).with_data(json!({
        "requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}
    }))
}
