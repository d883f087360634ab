//! Tasks: tool calls that run on after their request is answered, and that the client polls.
//!
//! Two wire shapes share one [`TaskStore`]:
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

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::Poll;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_channel::oneshot;
use futures_util::FutureExt as _;
use serde_json::{Map, Value, json};

use crate::platform::{Platform, TimeSource};
use crate::sync::{CancellationToken, Generation};

use super::mrtr::RoundTrip;
use super::policy::{ExecutionPolicy, Failure, Ticket};
use super::session::{Session, SessionRequester};
use super::{Engine, Handled, Prepared, RequestScope, decode_cursor, encode_cursor, error};
use crate::McpErrorDetail;
use crate::context::{
    ClientRequestError, ClientRequester, InputMode, InputRequest, MessageSink, TaskInput,
};
use crate::registry::{BoxFuture, RegisteredTool, TaskSupport, ToolOutput};
use crate::wire::{Era, ErrorCode, ErrorObject, OutgoingMessage, ProtocolVersion, RequestId};

/// The extension identifier (2026-07-28).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key tying a 2025-11-25 message to its task.
pub const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The most answers a task remembers (for tools that ask the same key again).
const MAX_ANSWERS: usize = 1024;
/// The most messages a 2025-11-25 task holds for a client that is not reading `tasks/result`.
const MAX_RELAYED: usize = 64;

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

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    pub(crate) const fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

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
}

/// Who may see a task.
enum Owner {
    /// 2026-07-28: the principal that created it (no sessions in that era).
    Modern { principal: Option<String> },
    /// 2025-11-25: the session and principal that created it.
    Legacy {
        session: Weak<Session>,
        principal: Option<String>,
    },
}

impl Owner {
    fn of(era: Era, session: &Arc<Session>) -> Self {
        let principal = session.principal().map(|p| p.subject);
        match era {
            Era::Modern => Self::Modern { principal },
            Era::Legacy => Self::Legacy {
                session: Arc::downgrade(session),
                principal,
            },
        }
    }

    fn admits(&self, era: Era, session: &Arc<Session>) -> bool {
        let principal = session.principal().map(|p| p.subject);
        match self {
            Self::Modern { principal: p } => era == Era::Modern && *p == principal,
            Self::Legacy {
                session: s,
                principal: p,
            } => {
                era == Era::Legacy
                    && std::ptr::eq(s.as_ptr(), Arc::as_ptr(session))
                    && *p == principal
            }
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
            Some(Outcome::Result { is_error: true, .. }) if legacy => Status::Failed,
            Some(Outcome::Result { .. }) => Status::Completed,
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
    relay: Arc<Relay>,
    next_waiter: AtomicU64,
    /// The encoded size of the kept result, counted against `max_retained_bytes`.
    size: AtomicUsize,
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
    fn new(id: String, seq: u64, ttl: Duration, owner: Owner, time: Arc<dyn TimeSource>) -> Self {
        let legacy = matches!(owner, Owner::Legacy { .. });
        let now = time.wall();
        Self {
            id,
            seq,
            created: now,
            ttl,
            deadline: time.now() + ttl,
            owner,
            time,
            legacy,
            cancel: CancellationToken::new(),
            state: Mutex::new(TaskState {
                updated: Some(now),
                ..TaskState::default()
            }),
            changed: Generation::new(),
            relay: Arc::new(Relay::default()),
            next_waiter: AtomicU64::new(0),
            size: AtomicUsize::new(0),
        }
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
        let st = lock(&self.state);
        let status = st.status(self.legacy);
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut obj = Map::new();
        obj.insert("taskId".into(), json!(self.id));
        obj.insert("status".into(), json!(status.as_str()));
        if let Some(m) = &st.status_message {
            obj.insert("statusMessage".into(), json!(m));
        }
        obj.insert("createdAt".into(), json!(iso8601(self.created)));
        let updated = st.updated.unwrap_or(self.created);
        obj.insert("lastUpdatedAt".into(), json!(iso8601(updated)));
        if self.legacy {
            obj.insert("ttl".into(), json!(ms(self.ttl)));
            obj.insert("pollInterval".into(), json!(ms(config.poll_interval)));
            return obj;
        }
        obj.insert("ttlMs".into(), json!(ms(self.ttl)));
        obj.insert("pollIntervalMs".into(), json!(ms(config.poll_interval)));
        if detailed {
            match (&st.outcome, status) {
                (None, Status::InputRequired) => {
                    obj.insert("inputRequests".into(), Value::Object(st.pending.clone()));
                }
                (Some(Outcome::Result { value, .. }), _) => {
                    obj.insert("result".into(), value.clone());
                }
                (Some(Outcome::Error(e)), _) => {
                    obj.insert(
                        "error".into(),
                        serde_json::to_value(e).unwrap_or_else(|_| json!({})),
                    );
                }
                _ => {}
            }
        }
        obj
    }

    /// 2025-11-25 `tasks/result` of a finished task: what the call would have returned.
    fn final_result(&self) -> Option<Result<Value, ErrorObject>> {
        let st = lock(&self.state);
        Some(match st.outcome.as_ref()? {
            Outcome::Result { value, .. } => {
                let mut value = value.clone();
                if let Value::Object(obj) = &mut value {
                    let meta = obj
                        .entry("_meta")
                        .or_insert_with(|| Value::Object(Map::new()));
                    if let Value::Object(meta) = meta {
                        meta.insert(META_RELATED_TASK.into(), json!({"taskId": self.id}));
                    }
                }
                Ok(value)
            }
            Outcome::Error(e) => Err(e.clone()),
            Outcome::Cancelled => Err(ErrorObject::invalid_params(format!(
                "Task {} was cancelled; it has no result",
                self.id
            ))),
        })
    }
}

/// How often a 2025-11-25 task checks that its session is still there.
const SESSION_CHECK: Duration = Duration::from_secs(2);

/// Resolves when a 2025-11-25 task's session is gone; never for a 2026-07-28 task.
async fn orphaned(owner: &Owner, platform: &Platform) {
    match owner {
        Owner::Legacy { session, .. } => loop {
            platform
                .runtime
                .sleep_until(platform.time.now() + SESSION_CHECK)
                .await;
            if session.strong_count() == 0 {
                return;
            }
        },
        Owner::Modern { .. } => std::future::pending().await,
    }
}

/// A 2025-11-25 task's server-to-client requests, through its session while that lasts (a task
/// does not keep its session alive).
struct WeakRequester(Weak<Session>);

impl ClientRequester for WeakRequester {
    fn request(
        &self,
        method: &'static str,
        params: Value,
        sink: Arc<dyn MessageSink>,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, Result<Value, ClientRequestError>> {
        match self.0.upgrade() {
            Some(session) => SessionRequester(session).request(method, params, sink, cancel),
            None => Box::pin(async { Err(ClientRequestError::Unavailable) }),
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

/// Where a 2025-11-25 task's messages go: the stream of the `tasks/result` call reading it, or
/// a small buffer until one attaches.
#[derive(Default)]
struct Relay {
    attached: Mutex<Option<Arc<dyn MessageSink>>>,
    buffer: Mutex<VecDeque<OutgoingMessage>>,
}

impl MessageSink for Relay {
    fn send(&self, message: OutgoingMessage) -> bool {
        let attached = lock(&self.attached).clone();
        if let Some(sink) = attached
            && sink.send(message.clone())
        {
            return true;
        }
        let mut buffer = lock(&self.buffer);
        if buffer.len() >= MAX_RELAYED {
            // Advisory notifications give way; requests are never dropped for them.
            let Some(i) = buffer
                .iter()
                .position(|m| matches!(m, OutgoingMessage::Notification { .. }))
            else {
                return false;
            };
            buffer.remove(i);
        }
        buffer.push_back(message);
        true
    }
}

impl Relay {
    /// Sends to `sink` from now on, starting with what was buffered.
    fn attach(self: &Arc<Self>, sink: Arc<dyn MessageSink>) -> RelayGuard {
        *lock(&self.attached) = Some(sink.clone());
        let buffered: Vec<OutgoingMessage> = lock(&self.buffer).drain(..).collect();
        for m in buffered {
            if !sink.send(m) {
                break;
            }
        }
        RelayGuard {
            relay: self.clone(),
            sink,
        }
    }
}

struct RelayGuard {
    relay: Arc<Relay>,
    sink: Arc<dyn MessageSink>,
}

impl Drop for RelayGuard {
    fn drop(&mut self) {
        let mut attached = lock(&self.relay.attached);
        if attached
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, &self.sink))
        {
            *attached = None;
        }
    }
}

/// The task store: bounded, with TTL expiry.
pub(crate) struct TaskStore {
    config: TaskConfig,
    inner: Arc<Mutex<StoreInner>>,
    /// The clock of expiry and timestamps, the entropy of task ids.
    platform: Platform,
}

impl std::fmt::Debug for TaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskStore")
            .field("config", &self.config)
            .field("tasks", &lock(&self.inner).tasks.len())
            .finish()
    }
}

#[derive(Default)]
struct StoreInner {
    tasks: HashMap<String, Arc<TaskEntry>>,
    reserved: usize,
    next_seq: u64,
    /// Bytes of finished results kept.
    retained: usize,
}

impl StoreInner {
    /// Removes a task, stopping its work.
    fn take(&mut self, id: &str) -> Option<Arc<TaskEntry>> {
        let entry = self.tasks.remove(id)?;
        entry.cancel.cancel();
        self.retained = self
            .retained
            .saturating_sub(entry.size.load(Ordering::Relaxed));
        Some(entry)
    }

    fn purge_expired(&mut self, now: Instant) {
        let expired: Vec<String> = self
            .tasks
            .values()
            .filter(|t| t.expired(now))
            .map(|t| t.id.clone())
            .collect();
        for id in expired {
            self.take(&id);
        }
    }

    /// The oldest finished task other than `except`.
    fn oldest_finished(&self, except: Option<&str>) -> Option<String> {
        self.tasks
            .values()
            .filter(|t| Some(t.id.as_str()) != except && t.status().is_terminal())
            .min_by_key(|t| t.seq)
            .map(|t| t.id.clone())
    }
}

/// A slot in the store, held while a call may still become a task.
pub(crate) struct Reservation {
    inner: Arc<Mutex<StoreInner>>,
    seq: u64,
    armed: bool,
}

impl Reservation {
    /// Puts `entry` in the store: from now on `tasks/get` finds it.
    fn commit(mut self, entry: Arc<TaskEntry>) {
        let mut inner = lock(&self.inner);
        inner.reserved = inner.reserved.saturating_sub(1);
        inner.tasks.insert(entry.id.clone(), entry);
        self.armed = false;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if self.armed {
            let mut inner = lock(&self.inner);
            inner.reserved = inner.reserved.saturating_sub(1);
        }
    }
}

impl TaskStore {
    pub(crate) fn new(config: TaskConfig, platform: Platform) -> Self {
        Self {
            config,
            inner: Arc::new(Mutex::new(StoreInner::default())),
            platform,
        }
    }

    /// 128 random bits, as 32 hex digits. `None` without entropy.
    fn random_id(&self) -> Option<String> {
        let mut bytes = [0u8; 16];
        self.platform.entropy.fill(&mut bytes).ok()?;
        Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    pub(crate) fn config(&self) -> &TaskConfig {
        &self.config
    }

    /// A slot for a new task, making room by dropping the oldest finished task if needed.
    /// `None` when every slot holds a running task.
    pub(crate) fn reserve(&self) -> Option<Reservation> {
        let mut inner = lock(&self.inner);
        inner.purge_expired(self.platform.time.now());
        if inner.tasks.len() + inner.reserved >= self.config.max_tasks.max(1) {
            let oldest = inner.oldest_finished(None)?;
            inner.take(&oldest);
            if inner.tasks.len() + inner.reserved >= self.config.max_tasks.max(1) {
                return None;
            }
        }
        inner.reserved += 1;
        inner.next_seq += 1;
        Some(Reservation {
            inner: self.inner.clone(),
            seq: inner.next_seq,
            armed: true,
        })
    }

    /// A live task by id.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<TaskEntry>> {
        let mut inner = lock(&self.inner);
        let entry = inner.tasks.get(id)?.clone();
        if entry.expired(self.platform.time.now()) {
            inner.take(id);
            return None;
        }
        Some(entry)
    }

    fn remove(&self, entry: &Arc<TaskEntry>) {
        let mut inner = lock(&self.inner);
        if inner
            .tasks
            .get(&entry.id)
            .is_some_and(|t| Arc::ptr_eq(t, entry))
        {
            inner.take(&entry.id);
        }
    }

    /// Counts a finished task's result of `bytes` against `max_retained_bytes`, dropping the
    /// oldest other finished tasks while over it.
    fn retain(&self, entry: &Arc<TaskEntry>, bytes: usize) {
        let mut inner = lock(&self.inner);
        if !inner
            .tasks
            .get(&entry.id)
            .is_some_and(|t| Arc::ptr_eq(t, entry))
        {
            return;
        }
        entry.size.store(bytes, Ordering::Relaxed);
        inner.retained = inner.retained.saturating_add(bytes);
        while inner.retained > self.config.max_retained_bytes {
            let Some(oldest) = inner.oldest_finished(Some(&entry.id)) else {
                break;
            };
            inner.take(&oldest);
        }
    }

    /// The 2025-11-25 tasks of `session`, oldest first.
    fn list(&self, session: &Arc<Session>) -> Vec<Arc<TaskEntry>> {
        let mut inner = lock(&self.inner);
        inner.purge_expired(self.platform.time.now());
        let mut tasks: Vec<Arc<TaskEntry>> = inner
            .tasks
            .values()
            .filter(|t| t.owner.admits(Era::Legacy, session))
            .cloned()
            .collect();
        tasks.sort_by_key(|t| t.seq);
        tasks
    }

    /// The number of tasks held.
    pub(crate) fn len(&self) -> usize {
        lock(&self.inner).tasks.len()
    }
}

/// The length of `value`'s compact JSON encoding, counted without allocating it.
fn encoded_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
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

/// What a tool running in (or towards) a task uses for input: [`InputMode::Task`].
pub(crate) struct TaskLink {
    entry: Arc<TaskEntry>,
    /// 2026-07-28, before the call became a task: its multi round-trip round.
    round: Option<Arc<RoundTrip>>,
    /// 2025-11-25: server-to-client requests.
    requester: Option<Arc<dyn ClientRequester>>,
    /// 2026-07-28: whether input parks the task (it is, or is about to be, a task).
    parks: AtomicBool,
    max_pending: usize,
}

impl TaskLink {
    /// [`ToolContext::start_task`](crate::ToolContext::start_task).
    pub(crate) fn start(&self) -> bool {
        self.parks.store(true, Ordering::Release);
        true
    }

    /// Whether input parks the task (2026-07-28 once it is a task).
    pub(crate) fn parks(&self) -> bool {
        self.requester.is_none() && self.parks.load(Ordering::Acquire)
    }

    pub(crate) fn task_id(&self) -> &str {
        &self.entry.id
    }

    /// The multi round-trip round of the call before it became a task.
    pub(crate) fn round(&self) -> Option<&Arc<RoundTrip>> {
        self.round.as_ref()
    }

    /// An answer the client gave during the multi round-trip phase.
    fn answered(&self, key: &str) -> Option<Value> {
        self.round.as_ref()?.responses.get(key).cloned()
    }

    /// [`ToolContext::input`](crate::ToolContext::input) of a task.
    async fn task_input(
        &self,
        key: &str,
        request: &InputRequest,
        declared: bool,
        sink: &Arc<dyn MessageSink>,
        cancel: &CancellationToken,
    ) -> Result<Value, ClientRequestError> {
        let capability = request.capability();
        if let Some(requester) = &self.requester {
            // 2025-11-25: a server-to-client request tagged with the task, while the task
            // reports `input_required`.
            if !declared {
                return Err(ClientRequestError::MissingCapability(capability));
            }
            let mut params = request.params();
            if let Value::Object(p) = &mut params {
                p.insert(
                    "_meta".into(),
                    json!({ META_RELATED_TASK: {"taskId": self.entry.id} }),
                );
            }
            let _outstanding = self.entry.outstanding();
            return requester
                .request(request.method(), params, sink.clone(), cancel.clone())
                .await;
        }
        if !self.parks() {
            // Not a task (yet): an ordinary multi round-trip round.
            let Some(round) = &self.round else {
                return Err(ClientRequestError::Unavailable);
            };
            if !declared {
                round.note_missing(capability);
                return Err(ClientRequestError::MissingCapability(capability));
            }
            if let Some(answer) = round.responses.get(key) {
                return Ok(answer.clone());
            }
            round.request(key, envelope(request));
            return Err(ClientRequestError::InputRequired);
        }
        if !declared {
            return Err(ClientRequestError::MissingCapability(capability));
        }
        if let Some(answer) = self.answered(key) {
            return Ok(answer);
        }
        match self
            .entry
            .register(key, envelope(request), self.max_pending)?
        {
            Asked::Answered(v) => Ok(v),
            Asked::Waiting(w) => w.wait(cancel).await,
        }
    }

    /// [`ToolContext::input_all`](crate::ToolContext::input_all) of a parked task: every
    /// request is pending at once, and the task waits for all answers.
    async fn task_input_all(
        &self,
        requests: Vec<(String, InputRequest)>,
        capabilities: &Value,
        cancel: &CancellationToken,
    ) -> Result<Vec<Value>, ClientRequestError> {
        if let Some((_, r)) = requests
            .iter()
            .find(|(_, r)| capabilities.get(r.capability()).is_none())
        {
            return Err(ClientRequestError::MissingCapability(r.capability()));
        }
        let mut asked = Vec::with_capacity(requests.len());
        for (key, request) in &requests {
            asked.push(match self.answered(key) {
                Some(v) => Asked::Answered(v),
                None => self
                    .entry
                    .register(key, envelope(request), self.max_pending)?,
            });
        }
        let mut answers = Vec::with_capacity(asked.len());
        for a in asked {
            answers.push(match a {
                Asked::Answered(v) => v,
                Asked::Waiting(w) => w.wait(cancel).await?,
            });
        }
        Ok(answers)
    }
}

impl TaskInput for TaskLink {
    fn start(&self) -> bool {
        TaskLink::start(self)
    }
    fn parks(&self) -> bool {
        TaskLink::parks(self)
    }
    fn task_id(&self) -> &str {
        TaskLink::task_id(self)
    }
    fn round(&self) -> Option<&Arc<RoundTrip>> {
        TaskLink::round(self)
    }
    fn input<'a>(
        &'a self,
        key: &'a str,
        request: &'a InputRequest,
        declared: bool,
        sink: &'a Arc<dyn MessageSink>,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Value, ClientRequestError>> {
        Box::pin(self.task_input(key, request, declared, sink, cancel))
    }
    fn input_all<'a>(
        &'a self,
        requests: Vec<(String, InputRequest)>,
        capabilities: &'a Value,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Value>, ClientRequestError>> {
        Box::pin(self.task_input_all(requests, capabilities, cancel))
    }
}

/// An input request as `inputRequests` carries it.
fn envelope(request: &InputRequest) -> Value {
    json!({"method": request.method(), "params": request.params()})
}

/// A call that may become a task, decided before the tool runs.
pub(super) struct TaskPlan {
    reservation: Reservation,
    ttl: Duration,
}

/// Polls `f` once.
fn poll_once<F: Future + Unpin>(f: &mut F) -> impl Future<Output = Poll<F::Output>> + '_ {
    std::future::poll_fn(move |cx| Poll::Ready(Pin::new(&mut *f).poll(cx)))
}

impl Engine {
    /// Decides whether a `tools/call` may become a task, or the error it deserves (`-32021`
    /// for a required-task tool without the extension on 2026-07-28; `-32601` on 2025-11-25
    /// for a forbidden-task tool called as a task, or a required-task tool called without).
    /// Removes the 2025-11-25 `task` parameter, which 2026-07-28 ignores.
    pub(super) fn task_plan(
        &self,
        tool: &RegisteredTool,
        name: &str,
        scope: &RequestScope,
        params: &mut Map<String, Value>,
    ) -> Result<Option<TaskPlan>, ErrorObject> {
        let requested = params.remove("task").filter(|t| !t.is_null());
        let support = tool.settings.task_support;
        let store = &self.shared.tasks;
        // Only the refusals name the tool.
        let shown = || name.chars().take(128).collect::<String>();
        match scope.era {
            Era::Modern => {
                if support == TaskSupport::Forbidden {
                    return Ok(None);
                }
                if !declares_extension(&scope.client_capabilities) {
                    if support == TaskSupport::Required {
                        return Err(missing_extension(&format!(
                            "Tool {} runs only as a task: declare the {TASKS_EXTENSION} extension",
                            shown()
                        )));
                    }
                    return Ok(None);
                }
                // A full store: the call runs synchronously.
                Ok(store.reserve().map(|reservation| TaskPlan {
                    reservation,
                    ttl: store.config.ttl,
                }))
            }
            // Earlier revisions have no tasks and ignore the parameter.
            Era::Legacy if scope.version != ProtocolVersion::V2025_11_25 => Ok(None),
            Era::Legacy => match (requested, support) {
                (None, TaskSupport::Required) => Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!(
                        "Tool {} must be called as a task (the task parameter)",
                        shown()
                    ),
                )),
                (None, _) => Ok(None),
                (Some(_), TaskSupport::Forbidden) => Err(ErrorObject::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("Tool {} does not support task-augmented calls", shown()),
                )),
                (Some(Value::Object(task)), _) => {
                    let ttl = match task.get("ttl") {
                        None | Some(Value::Null) => store.config.ttl,
                        Some(t) => {
                            let ms = t.as_u64().ok_or_else(|| {
                                ErrorObject::invalid_params(
                                    "tools/call: task.ttl must be a non-negative integer",
                                )
                            })?;
                            Duration::from_millis(ms)
                                .max(Duration::from_secs(1))
                                .min(store.config.ttl)
                        }
                    };
                    let reservation = store
                        .reserve()
                        .ok_or_else(|| ErrorObject::internal("Too many tasks; try again later"))?;
                    Ok(Some(TaskPlan { reservation, ttl }))
                }
                (Some(_), _) => Err(ErrorObject::invalid_params(
                    "tools/call: task must be an object",
                )),
            },
        }
    }

    /// Runs a `tools/call` that may become a task (see the module docs).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn call_tool_as_task(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        tool: Arc<RegisteredTool>,
        name: String,
        arguments: Map<String, Value>,
        prepared: Prepared,
        scope: RequestScope,
        plan: TaskPlan,
        ticket: Ticket,
    ) -> Handled {
        let Some(task_id) = self.shared.tasks.random_id() else {
            return error(&id, ErrorObject::internal("Could not create a task"));
        };
        let legacy = scope.era == Era::Legacy;
        let entry = Arc::new(TaskEntry::new(
            task_id,
            plan.reservation.seq,
            plan.ttl,
            Owner::of(scope.era, session),
            self.shared.platform.time.clone(),
        ));
        let Prepared {
            guard,
            context,
            round,
            cancel: request_cancel,
        } = prepared;
        let link = Arc::new(TaskLink {
            entry: entry.clone(),
            round: round.clone(),
            requester: legacy.then(|| {
                Arc::new(WeakRequester(Arc::downgrade(session))) as Arc<dyn ClientRequester>
            }),
            parks: AtomicBool::new(false),
            max_pending: self.shared.tasks.config.max_pending_inputs,
        });
        let sink = legacy.then(|| entry.relay.clone() as Arc<dyn MessageSink>);
        let context = context.rebind(entry.cancel.clone(), sink, InputMode::Task(link.clone()));
        let mut run = self.task_runner(tool.clone(), name.clone(), arguments, context, ticket);
        let engine = self.clone();
        let session = session.clone();
        Handled::Pending(Box::pin(async move {
            let _guard = guard;
            let config = &engine.shared.tasks.config;
            if legacy {
                plan.reservation.commit(entry.clone());
                let task = entry.json(config, false);
                engine.drive_task(run, entry, tool, name, scope);
                return Some(OutgoingMessage::Response {
                    id,
                    result: json!({"task": task}),
                });
            }
            // The tool runs inline until it first waits: a call that finishes at once is
            // answered as usual.
            let first = futures_util::select_biased! {
                () = request_cancel.cancelled().fuse() => {
                    entry.cancel.cancel();
                    return None;
                }
                p = poll_once(&mut run).fuse() => p,
            };
            let output = match first {
                Poll::Ready(output) => output,
                Poll::Pending => {
                    link.start();
                    plan.reservation.commit(entry.clone());
                    let mut task = entry.json(config, false);
                    task.insert("resultType".into(), json!("task"));
                    engine.drive_task(run, entry, tool, name, scope.clone());
                    return Some(OutgoingMessage::Response {
                        id,
                        result: engine.finish_result(Value::Object(task), &scope),
                    });
                }
            };
            drop(plan);
            let output = output.unwrap_or_else(|| {
                ToolOutput::failure(McpErrorDetail::new(
                    "InternalError",
                    format!("Tool {name} failed with an internal error"),
                ))
            });
            let result = match engine.round_outcome(&session, "tools/call", &name, round.as_deref())
            {
                Some(Err(e)) => {
                    return Some(OutgoingMessage::Error {
                        id: Some(id),
                        error: e,
                    });
                }
                Some(Ok(input_required)) => input_required,
                None => {
                    let result = engine.call_tool_result(&tool, output, &scope);
                    engine.cap_tool_result(&tool, &name, result, &scope)
                }
            };
            Some(OutgoingMessage::Response {
                id,
                result: engine.finish_result(result, &scope),
            })
        }))
    }

    /// The tool's run under the execution policy (admitted as `ticket`): its own timeout if
    /// it has one, and panics reported as `None`. The task's time to live bounds the rest.
    fn task_runner(
        &self,
        tool: Arc<RegisteredTool>,
        name: String,
        arguments: Map<String, Value>,
        context: crate::ToolContext,
        ticket: Ticket,
    ) -> BoxFuture<'static, Option<ToolOutput>> {
        let engine = self.clone();
        Box::pin(async move {
            let timeout = tool
                .settings
                .timeout
                .or_else(|| engine.shared.config.tool_timeouts.get(&name).copied());
            // A child token: a timeout stops this run without marking the task cancelled.
            let cancel = context.cancellation_token().child_token();
            let run = tool.try_invoke(arguments, context);
            match ExecutionPolicy::run(
                engine.shared.platform.runtime.as_ref(),
                engine.shared.platform.time.as_ref(),
                ticket,
                timeout,
                &cancel,
                run,
            )
            .await
            {
                Some(Ok(output)) => output,
                Some(Err(Failure::TimedOut(t))) => {
                    Some(ToolOutput::failure(super::invoke::timeout_error(&name, t)))
                }
                Some(Err(Failure::Panicked)) | None => None,
            }
        })
    }

    /// Runs a task's tool in the background until it ends, is cancelled or outlives its TTL,
    /// records the outcome, and removes the task when its TTL elapses.
    fn drive_task(
        &self,
        run: BoxFuture<'static, Option<ToolOutput>>,
        entry: Arc<TaskEntry>,
        tool: Arc<RegisteredTool>,
        name: String,
        scope: RequestScope,
    ) {
        let engine = self.clone();
        let runtime = engine.shared.platform.runtime.clone();
        runtime.spawn(Box::pin(async move {
            let deadline = entry.deadline;
            let platform = &engine.shared.platform;
            // Dropping `run` when another branch wins stops the tool.
            let finished = futures_util::select_biased! {
                () = entry.cancel.cancelled().fuse() => None,
                () = platform.runtime.sleep_until(deadline).fuse() => None,
                () = orphaned(&entry.owner, platform).fuse() => {
                    // Its session is gone, and nobody else may see it: stop and forget it.
                    entry.cancel.cancel();
                    entry.finish(Outcome::Cancelled, Some("The session ended.".into()));
                    engine.shared.tasks.remove(&entry);
                    return;
                }
                output = run.fuse() => Some(output),
            };
            match finished {
                Some(Some(output)) => {
                    let result = engine.call_tool_result(&tool, output, &scope);
                    let result = engine.cap_tool_result(&tool, &name, result, &scope);
                    let is_error = result.get("isError") == Some(&Value::Bool(true));
                    let message = is_error.then(|| failure_message(&result));
                    let value = engine.finish_result(result, &scope);
                    let bytes = encoded_len(&value);
                    if entry.finish(Outcome::Result { value, is_error }, message) {
                        engine.shared.tasks.retain(&entry, bytes);
                    }
                }
                Some(None) => {
                    entry.finish(
                        Outcome::Error(ErrorObject::internal(format!(
                            "Tool {name} failed with an internal error"
                        ))),
                        Some("The tool failed with an internal error".into()),
                    );
                }
                None if entry.cancel.is_cancelled() => {
                    entry.finish(Outcome::Cancelled, Some("The task was cancelled.".into()));
                }
                None => {
                    entry.cancel.cancel();
                    entry.finish(
                        Outcome::Error(ErrorObject::internal(
                            "The task did not finish within its time to live",
                        )),
                        Some("The task expired before it finished".into()),
                    );
                }
            }
            platform.runtime.sleep_until(deadline).await;
            entry.cancel.cancel();
            engine.shared.tasks.remove(&entry);
        }));
    }

    /// Finds the task a `tasks/*` request names, if the requester may see it.
    fn find_task(
        &self,
        session: &Arc<Session>,
        era: Era,
        params: &Map<String, Value>,
    ) -> Result<Arc<TaskEntry>, ErrorObject> {
        let Some(task_id) = params.get("taskId").and_then(Value::as_str) else {
            return Err(ErrorObject::invalid_params("taskId must be a string"));
        };
        self.shared
            .tasks
            .get(task_id)
            .filter(|t| t.owner.admits(era, session))
            .ok_or_else(|| ErrorObject::invalid_params("Failed to retrieve task: Task not found"))
    }

    /// `tasks/*` requests of both eras.
    pub(super) fn handle_tasks(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        method: &str,
        params: &Map<String, Value>,
        scope: &RequestScope,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        // A server with no task-supporting tool (and no task left) offers no tasks methods.
        let served = self.shared.registry.supports_tasks() || self.shared.tasks.len() > 0;
        let result = match scope.era {
            _ if !served => Err(ErrorObject::method_not_found(method)),
            Era::Modern => self.modern_tasks(session, method, params, scope),
            Era::Legacy if scope.version != ProtocolVersion::V2025_11_25 => {
                Err(ErrorObject::method_not_found(method))
            }
            Era::Legacy if method == "tasks/result" => {
                return self.task_result(session, id, params, sink);
            }
            Era::Legacy => self.legacy_tasks(session, method, params),
        };
        match result {
            Ok(result) => Handled::Reply(OutgoingMessage::Response {
                id,
                result: self.finish_result(result, scope),
            }),
            Err(e) => error(&id, e),
        }
    }

    /// 2026-07-28: `tasks/get`, `tasks/update` and `tasks/cancel`, for clients that declare the
    /// extension. `tasks/result` and `tasks/list` do not exist there.
    fn modern_tasks(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: &Map<String, Value>,
        scope: &RequestScope,
    ) -> Result<Value, ErrorObject> {
        if !matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel") {
            return Err(ErrorObject::method_not_found(method));
        }
        if !declares_extension(&scope.client_capabilities) {
            return Err(missing_extension(&format!(
                "{method} needs the {TASKS_EXTENSION} extension"
            )));
        }
        let entry = self.find_task(session, Era::Modern, params)?;
        match method {
            "tasks/get" => Ok(Value::Object(entry.json(&self.shared.tasks.config, true))),
            "tasks/update" => {
                let responses = match params.get("inputResponses") {
                    Some(Value::Object(r)) => r,
                    _ => {
                        return Err(ErrorObject::invalid_params(
                            "tasks/update: inputResponses must be an object",
                        ));
                    }
                };
                if let Some((key, _)) = responses.iter().find(|(_, v)| !v.is_object()) {
                    let key: String = key.chars().take(64).collect();
                    return Err(ErrorObject::invalid_params(format!(
                        "inputResponses[{key:?}] must be the result object of its request"
                    )));
                }
                entry.update(responses);
                Ok(json!({}))
            }
            // Idempotent: cancelling a finished task is acknowledged too.
            _ => {
                let _ = entry.cancel();
                Ok(json!({}))
            }
        }
    }

    /// 2025-11-25: `tasks/get`, `tasks/list` and `tasks/cancel` (`tasks/result` blocks, so it
    /// is [`task_result`](Self::task_result)).
    fn legacy_tasks(
        &self,
        session: &Arc<Session>,
        method: &str,
        params: &Map<String, Value>,
    ) -> Result<Value, ErrorObject> {
        let config = &self.shared.tasks.config;
        match method {
            "tasks/get" => {
                let entry = self.find_task(session, Era::Legacy, params)?;
                Ok(Value::Object(entry.json(config, false)))
            }
            "tasks/cancel" => {
                let entry = self.find_task(session, Era::Legacy, params)?;
                entry.cancel().map_err(|status| {
                    ErrorObject::invalid_params(format!(
                        "Cannot cancel task: already in terminal status '{}'",
                        status.as_str()
                    ))
                })?;
                Ok(Value::Object(entry.json(config, false)))
            }
            "tasks/list" => {
                let after = match params.get("cursor") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(c)) => Some(
                        decode_cursor(c)
                            .and_then(|c| c.parse::<u64>().ok())
                            .ok_or_else(|| ErrorObject::invalid_params("Invalid cursor"))?,
                    ),
                    Some(_) => return Err(ErrorObject::invalid_params("Invalid cursor")),
                };
                let size = self.shared.config.page_size.max(1);
                let mut tasks = self
                    .shared
                    .tasks
                    .list(session)
                    .into_iter()
                    .filter(|t| after.is_none_or(|a| t.seq > a));
                let page: Vec<Arc<TaskEntry>> = tasks.by_ref().take(size).collect();
                let mut obj = Map::new();
                obj.insert(
                    "tasks".into(),
                    Value::Array(
                        page.iter()
                            .map(|t| Value::Object(t.json(config, false)))
                            .collect(),
                    ),
                );
                if tasks.next().is_some()
                    && let Some(last) = page.last()
                {
                    obj.insert(
                        "nextCursor".into(),
                        json!(encode_cursor(&last.seq.to_string())),
                    );
                }
                Ok(Value::Object(obj))
            }
            _ => Err(ErrorObject::method_not_found(method)),
        }
    }

    /// 2025-11-25 `tasks/result`: waits for the task to end, relaying its server-to-client
    /// requests meanwhile, and answers what the call itself would have.
    fn task_result(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: &Map<String, Value>,
        sink: &Arc<dyn MessageSink>,
    ) -> Handled {
        let entry = match self.find_task(session, Era::Legacy, params) {
            Ok(e) => e,
            Err(e) => return error(&id, e),
        };
        let guard = match session.begin_request(id.clone()) {
            Ok(guard) => guard,
            Err(refused) => return error(&id, refused.error()),
        };
        let sink = sink.clone();
        Handled::Pending(Box::pin(async move {
            let cancel = guard.token();
            let _guard = guard;
            let _relay = entry.relay.attach(sink);
            let mut changes = entry.changed.subscribe();
            let outcome = loop {
                if let Some(outcome) = entry.final_result() {
                    break outcome;
                }
                futures_util::select_biased! {
                    () = cancel.cancelled().fuse() => return None,
                    changed = changes.changed().fuse() => {
                        if changed.is_err() {
                            break Err(ErrorObject::internal("The task is gone"));
                        }
                    }
                }
            };
            Some(match outcome {
                Ok(result) => OutgoingMessage::Response { id, result },
                Err(error) => OutgoingMessage::Error {
                    id: Some(id),
                    error,
                },
            })
        }))
    }

    /// The tasks capability of `version`, added to `capabilities` when a tool supports tasks:
    /// `extensions["io.modelcontextprotocol/tasks"]` on 2026-07-28, `tasks` on 2025-11-25.
    pub(super) fn with_task_capabilities(
        &self,
        capabilities: Value,
        version: ProtocolVersion,
    ) -> Value {
        let Value::Object(mut caps) = capabilities else {
            return capabilities;
        };
        if !self.shared.registry.supports_tasks() {
            return Value::Object(caps);
        }
        match version {
            ProtocolVersion::V2026_07_28 => {
                let extensions = caps
                    .entry("extensions")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(e) = extensions {
                    e.insert(TASKS_EXTENSION.into(), json!({}));
                }
            }
            ProtocolVersion::V2025_11_25 => {
                caps.insert(
                    "tasks".into(),
                    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
                );
            }
            _ => {}
        }
        Value::Object(caps)
    }

    /// Adds `execution.taskSupport` to a 2025-11-25 `tools/list` page.
    pub(super) fn with_task_support(&self, tools: Vec<Value>, scope: &RequestScope) -> Vec<Value> {
        if scope.version != ProtocolVersion::V2025_11_25 {
            return tools;
        }
        tools
            .into_iter()
            .map(|mut t| {
                let support = t
                    .get("name")
                    .and_then(Value::as_str)
                    .and_then(|n| self.shared.registry.lookup(n))
                    .map(|tool| tool.settings.task_support)
                    .unwrap_or_default();
                if support != TaskSupport::Forbidden
                    && let Value::Object(obj) = &mut t
                {
                    obj.insert("execution".into(), json!({"taskSupport": support.as_str()}));
                }
                t
            })
            .collect()
    }

    /// This engine with task limits `config`. Call it while setting up, before serving.
    pub fn with_task_config(&self, config: TaskConfig) -> Self {
        self.rebuild().task_config(config).build()
    }

    /// The task limits.
    pub fn task_config(&self) -> &TaskConfig {
        self.shared.tasks.config()
    }
}

/// A short diagnostic for a failed 2025-11-25 task: the first text of the tool's error.
fn failure_message(result: &Value) -> String {
    let text = result
        .get("content")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find_map(|b| b.get("text").and_then(Value::as_str)))
        .unwrap_or("the tool reported an error");
    let short: String = text.chars().take(256).collect();
    format!("Tool execution failed: {short}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::McpServerConfig;
    use crate::context::ToolContext;
    use crate::registry::{McpToolRegistry, ToolDefinition, ToolRegistration, ToolSettings};
    use crate::wire::{ContentBlock, IncomingMessage};

    // ----- the store and its entries -----

    fn modern_owner() -> Owner {
        Owner::Modern { principal: None }
    }

    fn time() -> Arc<dyn TimeSource> {
        Arc::new(crate::platform::testing::TokioTime)
    }

    fn store(config: TaskConfig) -> TaskStore {
        TaskStore::new(config, crate::platform::testing::platform())
    }

    fn random_id() -> Option<String> {
        store(TaskConfig::default()).random_id()
    }

    fn entry(ttl: Duration, owner: Owner) -> Arc<TaskEntry> {
        Arc::new(TaskEntry::new(random_id().unwrap(), 1, ttl, owner, time()))
    }

    fn ask(e: &Arc<TaskEntry>, key: &str, max: usize) -> Result<Asked, ClientRequestError> {
        e.register(
            key,
            json!({"method": "elicitation/create", "params": {}}),
            max,
        )
    }

    #[test]
    fn task_ids_are_128_random_bits() {
        let ids: std::collections::HashSet<String> =
            (0..1000).map(|_| random_id().unwrap()).collect();
        assert_eq!(ids.len(), 1000);
        for id in ids {
            assert_eq!(id.len(), 32);
            assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        }
    }

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(iso8601(leap), "2000-02-29T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        assert_eq!(iso8601(t), "2023-11-14T22:13:20.123Z");
        let t = UNIX_EPOCH + Duration::from_secs(4_102_444_799);
        assert_eq!(iso8601(t), "2099-12-31T23:59:59.000Z");
    }

    #[tokio::test(start_paused = true)]
    async fn status_follows_the_lifecycle() {
        let e = entry(Duration::from_secs(60), modern_owner());
        assert_eq!(e.status(), Status::Working);
        let Ok(Asked::Waiting(w)) = ask(&e, "k", 8) else {
            panic!("a waiter expected")
        };
        assert_eq!(e.status(), Status::InputRequired);
        assert_eq!(
            e.update(&Map::from_iter([("k".into(), json!({"action": "accept"}))])),
            1
        );
        assert_eq!(e.status(), Status::Working);
        assert_eq!(
            w.wait(&CancellationToken::new()).await.unwrap(),
            json!({"action": "accept"})
        );
        let value = json!({"content": [], "isError": true});
        assert!(e.finish(
            Outcome::Result {
                value,
                is_error: true
            },
            None
        ));
        // 2026-07-28 reserves `failed` for protocol errors: a tool error completes.
        assert_eq!(e.status(), Status::Completed);
        let e = entry(Duration::from_secs(60), modern_owner());
        e.finish(Outcome::Error(ErrorObject::internal("x")), None);
        assert_eq!(e.status(), Status::Failed);
    }

    #[test]
    fn a_tool_error_fails_a_2025_11_25_task() {
        let session = Arc::new(Session::new(1));
        let e = entry(Duration::from_secs(60), Owner::of(Era::Legacy, &session));
        let value = json!({"content": [], "isError": true});
        e.finish(
            Outcome::Result {
                value,
                is_error: true,
            },
            Some("m".into()),
        );
        assert_eq!(e.status(), Status::Failed);
    }

    #[test]
    fn a_terminal_status_never_changes() {
        let e = entry(Duration::from_secs(60), modern_owner());
        assert!(e.finish(
            Outcome::Result {
                value: json!({}),
                is_error: false
            },
            None
        ));
        assert!(!e.finish(Outcome::Error(ErrorObject::internal("late")), None));
        assert!(!e.finish(Outcome::Cancelled, None));
        assert_eq!(e.cancel(), Err(Status::Completed));
        assert_eq!(e.status(), Status::Completed);
        assert!(!e.cancel.is_cancelled());
        assert!(matches!(
            ask(&e, "k", 8),
            Err(ClientRequestError::Cancelled)
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn cancelling_stops_the_work_and_wakes_waiters() {
        let e = entry(Duration::from_secs(60), modern_owner());
        let Ok(Asked::Waiting(w)) = ask(&e, "k", 8) else {
            panic!("a waiter expected")
        };
        assert_eq!(e.cancel(), Ok(()));
        assert!(e.cancel.is_cancelled());
        assert_eq!(e.status(), Status::Cancelled);
        assert!(lock(&e.state).pending.is_empty());
        assert_eq!(
            w.wait(&CancellationToken::new()).await,
            Err(ClientRequestError::Cancelled)
        );
        assert_eq!(e.cancel(), Err(Status::Cancelled));
    }

    #[tokio::test(start_paused = true)]
    async fn partial_updates_keep_the_task_waiting_for_the_rest() {
        let e = entry(Duration::from_secs(60), modern_owner());
        let (Ok(Asked::Waiting(a)), Ok(Asked::Waiting(b))) = (ask(&e, "a", 8), ask(&e, "b", 8))
        else {
            panic!("two waiters expected")
        };
        let unknown = Map::from_iter([("zzz".into(), json!({"ignored": true}))]);
        assert_eq!(e.update(&unknown), 0, "unknown keys are ignored");
        assert_eq!(
            e.update(&Map::from_iter([("a".into(), json!({"n": 1}))])),
            1
        );
        assert_eq!(e.status(), Status::InputRequired);
        let pending = e.json(&TaskConfig::default(), true)["inputRequests"].clone();
        assert!(
            pending.get("a").is_none() && pending.get("b").is_some(),
            "{pending}"
        );
        let cancel = CancellationToken::new();
        assert_eq!(a.wait(&cancel).await.unwrap(), json!({"n": 1}));
        assert_eq!(
            e.update(&Map::from_iter([("a".into(), json!({"n": 9}))])),
            0,
            "an answered key is not pending any more"
        );
        e.update(&Map::from_iter([("b".into(), json!({"n": 2}))]));
        assert_eq!(b.wait(&cancel).await.unwrap(), json!({"n": 2}));
        assert_eq!(e.status(), Status::Working);
        // A key asked again gets the answer it already has.
        assert!(matches!(ask(&e, "a", 8), Ok(Asked::Answered(v)) if v == json!({"n": 1})));
    }

    #[test]
    fn a_dropped_waiter_withdraws_its_request_and_inputs_are_bounded() {
        let e = entry(Duration::from_secs(60), modern_owner());
        let w1 = ask(&e, "a", 2);
        let w2 = ask(&e, "a", 2);
        let _w3 = ask(&e, "b", 2).unwrap();
        assert!(matches!(
            ask(&e, "c", 2),
            Err(ClientRequestError::Unavailable)
        ));
        drop(w1);
        assert!(
            lock(&e.state).pending.contains_key("a"),
            "another waiter remains"
        );
        drop(w2);
        assert!(!lock(&e.state).pending.contains_key("a"));
        assert!(matches!(ask(&e, "c", 2), Ok(Asked::Waiting(_))));
    }

    #[test]
    fn the_store_is_bounded_and_makes_room_from_finished_tasks() {
        let store = store(TaskConfig {
            max_tasks: 2,
            ..TaskConfig::default()
        });
        let first = entry(Duration::from_secs(60), modern_owner());
        let second = entry(Duration::from_secs(60), modern_owner());
        store.reserve().unwrap().commit(first.clone());
        let r = store.reserve().unwrap();
        assert!(store.reserve().is_none(), "a reservation holds its slot");
        r.commit(second.clone());
        assert!(store.reserve().is_none(), "every task is running");
        first.finish(Outcome::Cancelled, None);
        let r = store.reserve().unwrap();
        assert!(
            store.get(&first.id).is_none(),
            "the oldest finished task made room"
        );
        assert!(store.get(&second.id).is_some());
        drop(r);
        assert_eq!(store.len(), 1);
        assert!(
            store.reserve().is_some(),
            "a dropped reservation frees its slot"
        );
    }

    #[test]
    fn finished_results_are_kept_within_a_byte_budget() {
        let store = store(TaskConfig {
            max_retained_bytes: 100,
            ..TaskConfig::default()
        });
        let done = |bytes| {
            let r = store.reserve().unwrap();
            let id = random_id().unwrap();
            let e = Arc::new(TaskEntry::new(
                id,
                r.seq,
                Duration::from_secs(60),
                modern_owner(),
                time(),
            ));
            r.commit(e.clone());
            e.finish(Outcome::Cancelled, None);
            store.retain(&e, bytes);
            e
        };
        let a = done(40);
        let b = done(40);
        assert!(store.get(&a.id).is_some() && store.get(&b.id).is_some());
        let c = done(40);
        assert!(store.get(&a.id).is_none(), "the oldest made room");
        assert!(store.get(&b.id).is_some() && store.get(&c.id).is_some());
        let big = done(500);
        assert!(store.get(&big.id).is_some(), "the newest result is kept");
        assert_eq!(store.len(), 1);
        store.remove(&big);
        assert_eq!(lock(&store.inner).retained, 0);
        assert_eq!(
            encoded_len(&json!({"a": [1, "x"]})),
            r#"{"a":[1,"x"]}"#.len()
        );
    }

    #[test]
    fn a_full_relay_drops_notifications_before_requests() {
        let relay = Relay::default();
        let note = || OutgoingMessage::Notification {
            method: "notifications/progress",
            params: json!({}),
        };
        let req = |n: i64| OutgoingMessage::Request {
            id: RequestId::from(n),
            method: "elicitation/create",
            params: json!({}),
        };
        for _ in 0..MAX_RELAYED {
            assert!(relay.send(note()));
        }
        assert!(relay.send(req(1)), "a request displaces a notification");
        for n in 2..=MAX_RELAYED {
            assert!(relay.send(req(i64::try_from(n).unwrap())));
        }
        assert!(!relay.send(req(0)), "a buffer of requests is full");
        let capture = Arc::new(Capture::default());
        let guard = Arc::new(relay).attach(capture.clone());
        assert_eq!(lock(&capture.0).len(), MAX_RELAYED);
        assert!(guard.relay.send(note()), "an attached relay forwards");
        drop(guard);
    }

    #[tokio::test(start_paused = true)]
    async fn expired_tasks_are_removed_and_cancelled() {
        let store = store(TaskConfig::default());
        let e = entry(Duration::from_millis(300), modern_owner());
        store.reserve().unwrap().commit(e.clone());
        assert!(store.get(&e.id).is_some(), "not before its TTL");
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(store.get(&e.id).is_none());
        assert!(e.cancel.is_cancelled());
        assert_eq!(store.len(), 0);
    }

    #[test]
    fn tasks_are_bound_to_their_principal_and_session() {
        let s1 = Arc::new(Session::new(1));
        let s2 = Arc::new(Session::new(1));
        let alice = Arc::new(Session::new(1)).with_principal(Some(crate::context::Principal {
            subject: "alice".into(),
            scopes: vec![],
        }));
        let modern = Owner::of(Era::Modern, &s1);
        assert!(modern.admits(Era::Modern, &s2), "no sessions on 2026-07-28");
        assert!(!modern.admits(Era::Modern, &alice));
        assert!(!modern.admits(Era::Legacy, &s1));
        let legacy = Owner::of(Era::Legacy, &s1);
        assert!(legacy.admits(Era::Legacy, &s1));
        assert!(!legacy.admits(Era::Legacy, &s2));
        assert!(!legacy.admits(Era::Modern, &s1));
        assert!(Owner::of(Era::Modern, &alice).admits(Era::Modern, &alice));
    }

    #[test]
    fn wire_shapes_of_both_eras() {
        let config = TaskConfig::default();
        let e = entry(Duration::from_secs(60), modern_owner());
        let created = e.json(&config, false);
        assert_eq!(created["ttlMs"], json!(60_000));
        assert_eq!(created["pollIntervalMs"], json!(500));
        for absent in [
            "ttl",
            "pollInterval",
            "requestState",
            "result",
            "error",
            "task",
        ] {
            assert!(!created.contains_key(absent), "{absent}");
        }
        assert!(created["createdAt"].as_str().unwrap().ends_with('Z'));
        let value = json!({"content": [{"type": "text", "text": "ok"}]});
        e.finish(
            Outcome::Result {
                value: value.clone(),
                is_error: false,
            },
            None,
        );
        let got = e.json(&config, true);
        assert_eq!(got["result"], value);
        assert!(
            got["result"].get("_meta").is_none(),
            "no related-task on inlined results"
        );
        let failed = entry(Duration::from_secs(60), modern_owner());
        failed.finish(Outcome::Error(ErrorObject::internal("boom")), None);
        let got = failed.json(&config, true);
        assert_eq!(got["error"]["code"], -32603);
        assert!(!got.contains_key("result"));

        let session = Arc::new(Session::new(1));
        let legacy = entry(Duration::from_secs(60), Owner::of(Era::Legacy, &session));
        legacy.finish(
            Outcome::Result {
                value,
                is_error: false,
            },
            None,
        );
        let task = legacy.json(&config, true);
        assert_eq!(task["ttl"], json!(60_000));
        assert_eq!(task["pollInterval"], json!(500));
        assert!(!task.contains_key("ttlMs") && !task.contains_key("result"));
        let result = legacy.final_result().unwrap().unwrap();
        assert_eq!(
            result["_meta"][META_RELATED_TASK]["taskId"],
            json!(legacy.id())
        );
    }

    // ----- the engine -----

    fn settings(task_support: TaskSupport) -> ToolSettings {
        ToolSettings {
            task_support,
            ..ToolSettings::default()
        }
    }

    fn add<M>(
        r: &McpToolRegistry,
        name: &str,
        support: TaskSupport,
        handler: impl crate::registry::IntoToolHandler<M>,
    ) {
        let definition = ToolDefinition::new(name, json!({"type": "object"}));
        r.register_tool(
            ToolRegistration::new(definition, handler).with_settings(settings(support)),
        )
        .unwrap();
    }

    fn explode() -> ToolOutput {
        panic!("kaboom-secret")
    }

    fn text(t: impl Into<String>) -> ToolOutput {
        ToolOutput::content(vec![ContentBlock::text(t)])
    }

    fn form() -> InputRequest {
        InputRequest::form("Name?", json!({"type": "object"}))
    }

    fn name_of(answer: &Value) -> String {
        answer["content"]["name"].as_str().unwrap_or("?").to_owned()
    }

    fn task_registry() -> Arc<McpToolRegistry> {
        let r = McpToolRegistry::new();
        add(
            &r,
            "echo",
            TaskSupport::Forbidden,
            |_: Map<String, Value>| text("echo"),
        );
        add(
            &r,
            "instant",
            TaskSupport::Optional,
            |_: Map<String, Value>| text("instant"),
        );
        add(
            &r,
            "slow",
            TaskSupport::Optional,
            |a: Map<String, Value>| async move {
                let ms = a.get("ms").and_then(Value::as_u64).unwrap_or(100);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                text(format!("slept {ms}"))
            },
        );
        add(
            &r,
            "required",
            TaskSupport::Required,
            |_: Map<String, Value>| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                ToolOutput::failure(McpErrorDetail::new("JobFailed", "always"))
            },
        );
        add(
            &r,
            "boom",
            TaskSupport::Optional,
            |_: Map<String, Value>| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                explode()
            },
        );
        add(
            &r,
            "ask",
            TaskSupport::Optional,
            |_: Map<String, Value>, cx: ToolContext| async move {
                cx.start_task();
                match cx.input("confirm", form()).await {
                    Ok(answer) => text(format!("confirmed by {}", name_of(&answer))),
                    Err(e) => ToolOutput::failure(e.into()),
                }
            },
        );
        add(
            &r,
            "two",
            TaskSupport::Optional,
            |_: Map<String, Value>, cx: ToolContext| async move {
                cx.start_task();
                let asked = vec![("a".to_owned(), form()), ("b".to_owned(), form())];
                match cx.input_all(asked).await {
                    Ok(v) => text(format!("{} and {}", name_of(&v[0]), name_of(&v[1]))),
                    Err(e) => ToolOutput::failure(e.into()),
                }
            },
        );
        add(
            &r,
            "mrtr_then_task",
            TaskSupport::Required,
            |_: Map<String, Value>, cx: ToolContext| async move {
                let answer = match cx.input("user_name", form()).await {
                    Ok(a) => a,
                    Err(e) => return ToolOutput::failure(e.into()),
                };
                tokio::time::sleep(Duration::from_millis(20)).await;
                text(format!("Hello, {}!", name_of(&answer)))
            },
        );
        Arc::new(r)
    }

    struct Client {
        engine: Engine,
        session: Arc<Session>,
        sink: Arc<dyn MessageSink>,
        next: std::sync::atomic::AtomicI64,
    }

    #[derive(Default)]
    struct Capture(Mutex<Vec<OutgoingMessage>>);

    impl MessageSink for Capture {
        fn send(&self, message: OutgoingMessage) -> bool {
            lock(&self.0).push(message);
            true
        }
    }

    fn engine(config: TaskConfig) -> Engine {
        let cfg = McpServerConfig::default().with_rate_limit(None);
        Engine::new(cfg, task_registry()).with_task_config(config)
    }

    impl Client {
        fn new(engine: &Engine) -> Self {
            Self {
                engine: engine.clone(),
                session: engine.new_session(),
                sink: Arc::new(crate::context::NullSink),
                next: std::sync::atomic::AtomicI64::new(1),
            }
        }

        async fn request(&self, method: &str, params: Value) -> Result<Value, ErrorObject> {
            let id = RequestId::from(self.next.fetch_add(1, Ordering::Relaxed));
            let message = IncomingMessage::Request {
                id,
                method: method.into(),
                params: params.as_object().cloned(),
            };
            match self
                .engine
                .handle(&self.session, message, &self.sink)
                .into_message()
                .await
            {
                Some(OutgoingMessage::Response { result, .. }) => Ok(result),
                Some(OutgoingMessage::Error { error, .. }) => Err(error),
                other => panic!("unexpected answer {other:?}"),
            }
        }

        /// A modern request; `ext` declares the tasks extension.
        async fn modern(
            &self,
            method: &str,
            mut params: Value,
            ext: bool,
        ) -> Result<Value, ErrorObject> {
            let mut caps = json!({"elicitation": {}});
            if ext {
                caps["extensions"] = json!({TASKS_EXTENSION: {}});
            }
            params["_meta"] = json!({
                super::super::META_PROTOCOL_VERSION: "2026-07-28",
                super::super::META_CLIENT_CAPABILITIES: caps,
            });
            self.request(method, params).await
        }

        async fn call(&self, tool: &str, args: Value) -> Value {
            self.modern("tools/call", json!({"name": tool, "arguments": args}), true)
                .await
                .unwrap()
        }

        async fn get(&self, task_id: &Value) -> Value {
            self.modern("tasks/get", json!({"taskId": task_id}), true)
                .await
                .unwrap()
        }

        async fn until(&self, task_id: &Value, done: impl Fn(&Value) -> bool) -> Value {
            for _ in 0..500 {
                let task = self.get(task_id).await;
                if done(&task) {
                    return task;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            panic!("task {task_id} did not get there")
        }

        async fn terminal(&self, task_id: &Value) -> Value {
            self.until(task_id, |t| {
                matches!(
                    t["status"].as_str(),
                    Some("completed" | "failed" | "cancelled")
                )
            })
            .await
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_supporting_call_becomes_a_task_and_completes() {
        let c = Client::new(&engine(TaskConfig::default()));
        let created = c.call("slow", json!({"ms": 50})).await;
        assert_eq!(created["resultType"], "task", "{created}");
        assert_eq!(created["status"], "working");
        for absent in [
            "task",
            "result",
            "error",
            "inputRequests",
            "requestState",
            "ttl",
            "content",
        ] {
            assert!(created.get(absent).is_none(), "{absent}: {created}");
        }
        assert!(created["ttlMs"].as_u64().unwrap() > 0);
        let id = &created["taskId"];
        // Durable at once.
        let now = c.get(id).await;
        assert_eq!(now["taskId"], *id);
        assert_eq!(now["resultType"], "complete");
        let done = c.terminal(id).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(done["result"]["content"][0]["text"], "slept 50");
        assert!(done.get("error").is_none());
        // A sync-only tool stays sync, with or without a legacy `task` hint.
        let sync = c
            .modern(
                "tools/call",
                json!({"name": "echo", "task": {"ttl": 1000}}),
                true,
            )
            .await
            .unwrap();
        assert_eq!(sync["resultType"], "complete");
        assert_eq!(sync["content"][0]["text"], "echo");
        // A tool that finishes without waiting answers at once.
        let instant = c.call("instant", json!({})).await;
        assert_eq!(instant["resultType"], "complete");
        assert!(instant.get("taskId").is_none());
        assert_eq!(c.session.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn without_the_extension_calls_are_synchronous_and_tasks_methods_refused() {
        let c = Client::new(&engine(TaskConfig::default()));
        let sync = c
            .modern(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 5}}),
                false,
            )
            .await
            .unwrap();
        assert_eq!(sync["resultType"], "complete");
        assert_eq!(sync["content"][0]["text"], "slept 5");
        for (method, params) in [
            ("tasks/get", json!({"taskId": "x"})),
            ("tasks/update", json!({"taskId": "x", "inputResponses": {}})),
            ("tasks/cancel", json!({"taskId": "x"})),
        ] {
            let e = c.modern(method, params, false).await.unwrap_err();
            assert_eq!(e.code, -32021, "{method}");
            assert_eq!(
                e.data.unwrap()["requiredCapabilities"]["extensions"][TASKS_EXTENSION],
                json!({})
            );
        }
        let e = c
            .modern("tools/call", json!({"name": "required"}), false)
            .await
            .unwrap_err();
        assert_eq!(e.code, -32021);
        assert!(e.data.unwrap()["requiredCapabilities"]["extensions"][TASKS_EXTENSION].is_object());
        // The per-request declaration is what counts.
        let created = c.call("required", json!({})).await;
        assert_eq!(created["resultType"], "task");
    }

    #[tokio::test(start_paused = true)]
    async fn tool_errors_complete_and_protocol_errors_fail() {
        let c = Client::new(&engine(TaskConfig::default()));
        let created = c.call("required", json!({})).await;
        let done = c.terminal(&created["taskId"]).await;
        assert_eq!(done["status"], "completed");
        assert_eq!(done["result"]["isError"], true);
        let created = c.call("boom", json!({})).await;
        let done = c.terminal(&created["taskId"]).await;
        assert_eq!(done["status"], "failed", "{done}");
        assert_eq!(done["error"]["code"], -32603);
        assert!(done["error"]["message"].is_string());
        assert!(done.get("result").is_none());
        assert!(
            !done["error"]["message"]
                .as_str()
                .unwrap()
                .contains("kaboom"),
            "no panic text leaks"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn cancel_acknowledges_and_settles_cancelled() {
        let c = Client::new(&engine(TaskConfig::default()));
        let created = c.call("slow", json!({"ms": 60_000})).await;
        let id = &created["taskId"];
        let ack = c
            .modern("tasks/cancel", json!({"taskId": id}), true)
            .await
            .unwrap();
        assert_eq!(ack["resultType"], "complete");
        for field in ["taskId", "status", "result", "error", "inputRequests"] {
            assert!(ack.get(field).is_none(), "{field}: {ack}");
        }
        assert_eq!(c.get(id).await["status"], "cancelled");
        let again = c.modern("tasks/cancel", json!({"taskId": id}), true).await;
        assert_eq!(again.unwrap()["resultType"], "complete", "idempotent");
        for method in ["tasks/get", "tasks/cancel"] {
            let e = c
                .modern(method, json!({"taskId": "nope"}), true)
                .await
                .unwrap_err();
            assert_eq!(e.code, -32602, "{method}");
        }
        let e = c.modern("tasks/get", json!({}), true).await.unwrap_err();
        assert_eq!(e.code, -32602);
    }

    #[tokio::test(start_paused = true)]
    async fn removed_and_unknown_tasks_methods_are_not_found() {
        let c = Client::new(&engine(TaskConfig::default()));
        for method in ["tasks/result", "tasks/list", "tasks/nope"] {
            let e = c
                .modern(method, json!({"taskId": "x"}), true)
                .await
                .unwrap_err();
            assert_eq!(e.code, -32601, "{method}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn input_parks_the_task_until_tasks_update() {
        let c = Client::new(&engine(TaskConfig::default()));
        let created = c.call("ask", json!({})).await;
        assert_eq!(created["resultType"], "task", "{created}");
        assert!(created.get("inputRequests").is_none());
        let id = &created["taskId"];
        let parked = c.until(id, |t| t["status"] == "input_required").await;
        assert_eq!(
            parked["inputRequests"]["confirm"]["method"],
            "elicitation/create"
        );
        let ack = c
            .modern(
                "tasks/update",
                json!({"taskId": id, "inputResponses": {"confirm": {"action": "accept", "content": {"name": "Ada"}}}}),
                true,
            )
            .await
            .unwrap();
        assert_eq!(ack["resultType"], "complete");
        assert!(ack.get("status").is_none());
        let done = c.terminal(id).await;
        assert_eq!(done["result"]["content"][0]["text"], "confirmed by Ada");
        let e = c
            .modern(
                "tasks/update",
                json!({"taskId": id, "inputResponses": {"k": 1}}),
                true,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, -32602, "answers are objects");
    }

    #[tokio::test(start_paused = true)]
    async fn several_inputs_are_pending_at_once_and_answered_one_by_one() {
        let c = Client::new(&engine(TaskConfig::default()));
        let created = c.call("two", json!({})).await;
        let id = &created["taskId"];
        let parked = c
            .until(id, |t| {
                t["inputRequests"].as_object().is_some_and(|m| m.len() == 2)
            })
            .await;
        assert_eq!(parked["status"], "input_required");
        let answer = |name: &str| json!({"action": "accept", "content": {"name": name}});
        c.modern(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"a": answer("x")}}),
            true,
        )
        .await
        .unwrap();
        let half = c.get(id).await;
        assert_eq!(half["status"], "input_required");
        let keys: Vec<&String> = half["inputRequests"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b"]);
        c.modern(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"b": answer("y")}}),
            true,
        )
        .await
        .unwrap();
        let done = c.terminal(id).await;
        assert_eq!(done["result"]["content"][0]["text"], "x and y");
    }

    #[tokio::test(start_paused = true)]
    async fn multi_round_trip_input_comes_before_the_task() {
        let c = Client::new(&engine(TaskConfig::default()));
        let r1 = c.call("mrtr_then_task", json!({})).await;
        assert_eq!(r1["resultType"], "input_required", "{r1}");
        assert!(r1.get("taskId").is_none());
        assert!(r1["inputRequests"]["user_name"].is_object());
        let r2 = c
            .modern(
                "tools/call",
                json!({
                    "name": "mrtr_then_task",
                    "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
                    "requestState": r1["requestState"],
                }),
                true,
            )
            .await
            .unwrap();
        assert_eq!(r2["resultType"], "task", "{r2}");
        assert!(r2.get("requestState").is_none() && r2.get("inputRequests").is_none());
        let done = c.terminal(&r2["taskId"]).await;
        assert_eq!(done["result"]["content"][0]["text"], "Hello, Alice!");
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_store_runs_calls_synchronously() {
        let c = Client::new(&engine(TaskConfig {
            max_tasks: 1,
            ..TaskConfig::default()
        }));
        let first = c.call("slow", json!({"ms": 60_000})).await;
        assert_eq!(first["resultType"], "task");
        let second = c.call("slow", json!({"ms": 5})).await;
        assert_eq!(second["resultType"], "complete", "{second}");
        assert_eq!(c.engine.shared.tasks.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn tasks_end_and_disappear_when_their_ttl_elapses() {
        let c = Client::new(&engine(TaskConfig {
            ttl: Duration::from_millis(400),
            ..TaskConfig::default()
        }));
        let created = c.call("slow", json!({"ms": 3_600_000})).await;
        assert_eq!(created["ttlMs"], 400);
        let id = created["taskId"].clone();
        assert_eq!(c.get(&id).await["status"], "working");
        tokio::time::sleep(Duration::from_millis(600)).await;
        let e = c
            .modern("tasks/get", json!({"taskId": id}), true)
            .await
            .unwrap_err();
        assert_eq!(e.code, -32602);
        assert_eq!(c.engine.shared.tasks.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn discover_advertises_the_extension_when_a_tool_supports_tasks() {
        let c = Client::new(&engine(TaskConfig::default()));
        let d = c.modern("server/discover", json!({}), false).await.unwrap();
        assert_eq!(d["capabilities"]["extensions"][TASKS_EXTENSION], json!({}));
        assert!(d["capabilities"].get("tasks").is_none());
        let plain = Engine::new(McpServerConfig::default(), Arc::new(McpToolRegistry::new()));
        let d = Client::new(&plain)
            .modern("server/discover", json!({}), false)
            .await
            .unwrap();
        assert!(d["capabilities"].get("extensions").is_none(), "{d}");
        let e = Client::new(&plain)
            .modern("tasks/get", json!({"taskId": "x"}), true)
            .await
            .unwrap_err();
        assert_eq!(e.code, -32601, "no task tools, no tasks methods");
        // No `execution` on the 2026-07-28 tools/list.
        let list = c.modern("tools/list", json!({}), true).await.unwrap();
        assert!(
            list["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("execution").is_none())
        );
    }

    // ----- 2025-11-25 -----

    async fn legacy(engine: &Engine, capabilities: Value) -> Client {
        let c = Client::new(engine);
        let r = c
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": capabilities}),
            )
            .await
            .unwrap();
        assert_eq!(
            r["capabilities"]["tasks"],
            json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
        );
        assert!(r["capabilities"].get("extensions").is_none());
        c
    }

    async fn legacy_terminal(c: &Client, id: &Value) -> Value {
        for _ in 0..500 {
            let t = c.request("tasks/get", json!({"taskId": id})).await.unwrap();
            if Status::Working.as_str() != t["status"] && t["status"] != "input_required" {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no terminal status")
    }

    #[tokio::test(start_paused = true)]
    async fn experimental_2025_11_25_tasks() {
        let e = engine(TaskConfig::default());
        let c = legacy(&e, json!({})).await;
        let list = c.request("tools/list", json!({})).await.unwrap();
        let support = |name: &str| {
            list["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == name)
                .map(|t| t["execution"]["taskSupport"].clone())
                .unwrap()
        };
        assert_eq!(support("slow"), "optional");
        assert_eq!(support("required"), "required");
        assert_eq!(
            support("echo"),
            Value::Null,
            "forbidden is the default, left out"
        );
        let created = c
            .request(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 30}, "task": {"ttl": 60_000}}),
            )
            .await
            .unwrap();
        let task = &created["task"];
        assert_eq!(task["status"], "working", "{created}");
        assert_eq!(task["ttl"], 60_000);
        assert!(task["pollInterval"].is_u64() && task.get("ttlMs").is_none());
        assert!(created.get("resultType").is_none());
        let id = &task["taskId"];
        let got = c.request("tasks/get", json!({"taskId": id})).await.unwrap();
        assert_eq!(got["taskId"], *id);
        let result = c
            .request("tasks/result", json!({"taskId": id}))
            .await
            .unwrap();
        assert_eq!(result["content"][0]["text"], "slept 30");
        assert_eq!(result["_meta"][META_RELATED_TASK]["taskId"], *id);
        assert_eq!(
            c.request("tasks/get", json!({"taskId": id})).await.unwrap()["status"],
            "completed"
        );
        let listed = c.request("tasks/list", json!({})).await.unwrap();
        assert_eq!(listed["tasks"][0]["taskId"], *id);
        let e2 = c
            .request("tasks/cancel", json!({"taskId": id}))
            .await
            .unwrap_err();
        assert_eq!(e2.code, -32602, "a terminal task cannot be cancelled");
        // Tool-level negotiation.
        let e2 = c
            .request("tools/call", json!({"name": "required"}))
            .await
            .unwrap_err();
        assert_eq!(e2.code, -32601);
        let e2 = c
            .request("tools/call", json!({"name": "echo", "task": {}}))
            .await
            .unwrap_err();
        assert_eq!(e2.code, -32601);
        // A running task is cancelled at once and reports it.
        let long = c
            .request(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 60_000}, "task": {}}),
            )
            .await
            .unwrap();
        let long_id = &long["task"]["taskId"];
        let cancelled = c
            .request("tasks/cancel", json!({"taskId": long_id}))
            .await
            .unwrap();
        assert_eq!(cancelled["status"], "cancelled");
        assert_eq!(
            c.request("tasks/result", json!({"taskId": long_id}))
                .await
                .unwrap_err()
                .code,
            -32602
        );
        // tasks/update is a 2026-07-28 method.
        assert_eq!(
            c.request("tasks/update", json!({"taskId": id, "inputResponses": {}}))
                .await
                .unwrap_err()
                .code,
            -32601
        );
        // Another session sees none of these tasks.
        let other = legacy(&e, json!({})).await;
        assert_eq!(
            other
                .request("tasks/get", json!({"taskId": id}))
                .await
                .unwrap_err()
                .code,
            -32602
        );
        assert_eq!(
            other.request("tasks/list", json!({})).await.unwrap()["tasks"],
            json!([])
        );
    }

    #[tokio::test(start_paused = true)]
    async fn experimental_tasks_list_pages() {
        let cfg = McpServerConfig::default()
            .with_rate_limit(None)
            .with_page_size(2);
        let e = Engine::new(cfg, task_registry());
        let c = legacy(&e, json!({})).await;
        let mut ids = Vec::new();
        for _ in 0..3 {
            let r = c
                .request("tools/call", json!({"name": "instant", "task": {}}))
                .await
                .unwrap();
            ids.push(r["task"]["taskId"].clone());
        }
        let p1 = c.request("tasks/list", json!({})).await.unwrap();
        assert_eq!(p1["tasks"].as_array().unwrap().len(), 2);
        let p2 = c
            .request("tasks/list", json!({"cursor": p1["nextCursor"]}))
            .await
            .unwrap();
        assert_eq!(p2["tasks"][0]["taskId"], ids[2]);
        assert!(p2.get("nextCursor").is_none());
        let e2 = c
            .request("tasks/list", json!({"cursor": "zz"}))
            .await
            .unwrap_err();
        assert_eq!(e2.code, -32602);
    }

    #[tokio::test(start_paused = true)]
    async fn experimental_tool_errors_fail_the_task() {
        let e = engine(TaskConfig::default());
        let c = legacy(&e, json!({})).await;
        let created = c
            .request("tools/call", json!({"name": "required", "task": {}}))
            .await
            .unwrap();
        let id = &created["task"]["taskId"];
        let done = legacy_terminal(&c, id).await;
        assert_eq!(done["status"], "failed");
        assert!(done["statusMessage"].as_str().unwrap().contains("always"));
        let result = c
            .request("tasks/result", json!({"taskId": id}))
            .await
            .unwrap();
        assert_eq!(result["isError"], true);
        let created = c
            .request("tools/call", json!({"name": "boom", "task": {}}))
            .await
            .unwrap();
        let e2 = c
            .request("tasks/result", json!({"taskId": created["task"]["taskId"]}))
            .await
            .unwrap_err();
        assert_eq!(e2.code, -32603);
    }

    #[tokio::test(start_paused = true)]
    async fn experimental_task_input_is_a_related_task_request() {
        let e = engine(TaskConfig::default());
        let c = legacy(&e, json!({"elicitation": {}})).await;
        let created = c
            .request("tools/call", json!({"name": "ask", "task": {}}))
            .await
            .unwrap();
        let id = created["task"]["taskId"].clone();
        // The request waits for a tasks/result reader.
        for _ in 0..500 {
            let t = c.request("tasks/get", json!({"taskId": id})).await.unwrap();
            if t["status"] == "input_required" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let capture = Arc::new(Capture::default());
        let sink: Arc<dyn MessageSink> = capture.clone();
        let message = IncomingMessage::Request {
            id: RequestId::from(900),
            method: "tasks/result".into(),
            params: json!({"taskId": id}).as_object().cloned(),
        };
        let Handled::Pending(result) = e.handle(&c.session, message, &sink) else {
            panic!("tasks/result waits")
        };
        let result = tokio::spawn(result);
        let request = loop {
            if let Some(m) = lock(&capture.0).first().cloned() {
                break m;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        let OutgoingMessage::Request {
            id: rid,
            method,
            params,
        } = request
        else {
            panic!("a server-to-client request expected: {request:?}")
        };
        assert_eq!(method, "elicitation/create");
        assert_eq!(params["_meta"][META_RELATED_TASK]["taskId"], id);
        e.handle(
            &c.session,
            IncomingMessage::Response {
                id: rid,
                result: json!({"action": "accept", "content": {"name": "Grace"}}),
            },
            &sink,
        );
        let Some(OutgoingMessage::Response { result, .. }) = result.await.unwrap() else {
            panic!("a result expected")
        };
        assert_eq!(result["content"][0]["text"], "confirmed by Grace");
        assert_eq!(result["_meta"][META_RELATED_TASK]["taskId"], id);
    }

    #[tokio::test(start_paused = true)]
    async fn an_experimental_task_ends_with_its_session() {
        let e = engine(TaskConfig::default());
        let c = legacy(&e, json!({})).await;
        let created = c
            .request(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 600_000}, "task": {}}),
            )
            .await
            .unwrap();
        let id = created["task"]["taskId"].as_str().unwrap().to_owned();
        let entry = e.shared.tasks.get(&id).unwrap();
        drop(c);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while e.shared.tasks.get(&id).is_some() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the task outlived its session"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(entry.cancel.is_cancelled());
        assert_eq!(entry.status(), Status::Cancelled);
    }

    #[tokio::test(start_paused = true)]
    async fn earlier_revisions_have_no_tasks() {
        let e = engine(TaskConfig::default());
        let c = Client::new(&e);
        let r = c
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
            )
            .await
            .unwrap();
        assert!(r["capabilities"].get("tasks").is_none());
        let list = c.request("tools/list", json!({})).await.unwrap();
        assert!(
            list["tools"]
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t.get("execution").is_none())
        );
        // The parameter is ignored and required-task tools run.
        let r = c
            .request(
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 1}, "task": {}}),
            )
            .await
            .unwrap();
        assert_eq!(r["content"][0]["text"], "slept 1");
        assert_eq!(
            c.request("tasks/get", json!({"taskId": "x"}))
                .await
                .unwrap_err()
                .code,
            -32601
        );
    }
}
