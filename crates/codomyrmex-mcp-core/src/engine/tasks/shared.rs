//! Tasks through the [`TaskStore`]: a live task as a [`TaskRecord`], records as the wire shapes
//! of both eras (the `tasks/*` methods that read them are `methods.rs`'s), and [`TaskSync`], the driver's handle for
//! writing and renewing this instance's records in a shared store.
//!
//! One path: every `tasks/*` reads its task's record through the store, the engine's own
//! in-memory one by default (written at every change of a live task) or a shared one, so a
//! task looks the same from its owner and from any other instance. The live part (the running
//! future, its cancellation token, a tool waiting for input, a 2025-11-25 relay) stays on the
//! owner; what acts on the work goes to it directly when this instance runs the task, and
//! otherwise through the store, reaching the owner at its next lease renewal
//! ([`TaskSync::apply`]). What this is not: the live table and its caps (`store.rs`).
//!
//! No I/O here: the store's futures are awaited inside [`Wait`]s (bounded by the lease: a
//! store that answers later than that answers with stale records) and by the driver.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use super::store::TaskStore as LiveTasks;
use super::*;
use crate::engine::jobs::Continuation;
use crate::engine::session::InFlight;
use crate::engine::{Handled, RequestScope};
use crate::invocation::{Failure, JobHost, Wait};
use crate::sync::Changes;
use crate::task_store::{
    Renewal, TaskEra, TaskOutcome, TaskRecord, TaskStatus, TaskStore, TaskStoreError,
};
use crate::wire::{Era, ErrorObject, OutgoingMessage, RequestId};

/// A task store shared with other instances, as the engine is configured with it.
#[derive(Clone)]
pub(crate) struct SharedTasks {
    pub(crate) store: Arc<dyn TaskStore>,
    pub(crate) instance: String,
    pub(crate) lease: Duration,
}

pub(super) use super::dirty::Dirty;

pub(super) fn wall_ms(t: SystemTime) -> u64 {
    u64::try_from(t.duration_since(UNIX_EPOCH).unwrap_or_default().as_millis()).unwrap_or(u64::MAX)
}

/// A duration in whole milliseconds, at least 1 (as both eras' `ttl` and poll interval are).
pub(super) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

pub(super) fn from_ms(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

impl TaskEntry {
    /// This task as a record owned by `instance`, leased until `lease_until`.
    pub(super) fn record(
        &self,
        instance: &str,
        poll_interval: Duration,
        lease_until: u64,
    ) -> TaskRecord {
        let st = lock(&self.state);
        let created = wall_ms(self.created);
        let ttl = ms(self.ttl);
        let (era, principal, session) = match &self.owner {
            Owner::Modern { principal } => (TaskEra::Modern, principal.clone(), None),
            Owner::Legacy { principal, key, .. } => {
                (TaskEra::Legacy, principal.clone(), key.clone())
            }
        };
        let mut r = TaskRecord::new(
            self.id.clone(),
            instance,
            era,
            created,
            ttl,
            ms(poll_interval),
            lease_until,
        );
        r.principal = principal;
        r.session = session;
        r.seq = self.seq;
        r.status = st.status(self.legacy);
        r.status_message = st.status_message.clone();
        r.updated_at = st.updated.map_or(created, wall_ms);
        if !self.legacy && st.outcome.is_none() {
            r.input_requests = st.pending.clone();
        }
        r.outcome = st.outcome.as_ref().map(|o| match o {
            Outcome::Result { value, is_error } => TaskOutcome::Result {
                value: value.clone(),
                is_error: *is_error,
            },
            Outcome::Error(e) => TaskOutcome::Error {
                error: serde_json::to_value(e).unwrap_or_else(|_| json!({})),
            },
            Outcome::Cancelled => TaskOutcome::Cancelled,
            // The in-memory store's record holds the result: read (copied) from there, as it
            // was copied from here before.
            Outcome::Kept { is_error } => self
                .dirty
                .as_ref()
                .and_then(|d| d.kept_outcome(&self.id))
                .unwrap_or(TaskOutcome::Result {
                    value: Value::Null,
                    is_error: *is_error,
                }),
        });
        r
    }

    /// The in-memory store now holds this task's terminal record: the entry's own copy of
    /// its result goes.
    pub(super) fn release_result(&self) {
        let mut st = lock(&self.state);
        if let Some(Outcome::Result { is_error, .. }) = st.outcome {
            st.outcome = Some(Outcome::Kept { is_error });
        }
    }
}

/// The task object of `record`'s era: `Task`, and for a 2026-07-28 `tasks/get` (`detailed`)
/// the inlined `inputRequests`, `result` or `error`.
pub(super) fn render(r: &TaskRecord, detailed: bool) -> Map<String, Value> {
    let mut obj = Map::new();
    obj.insert("taskId".into(), json!(r.id));
    obj.insert("status".into(), json!(r.status.as_str()));
    if let Some(m) = &r.status_message {
        obj.insert("statusMessage".into(), json!(m));
    }
    obj.insert("createdAt".into(), json!(iso8601(from_ms(r.created_at))));
    obj.insert(
        "lastUpdatedAt".into(),
        json!(iso8601(from_ms(r.updated_at))),
    );
    if r.era == TaskEra::Legacy {
        obj.insert("ttl".into(), json!(r.ttl));
        obj.insert("pollInterval".into(), json!(r.poll_interval));
        return obj;
    }
    obj.insert("ttlMs".into(), json!(r.ttl));
    obj.insert("pollIntervalMs".into(), json!(r.poll_interval));
    if detailed {
        match (&r.outcome, r.status) {
            (None, TaskStatus::InputRequired) => {
                obj.insert(
                    "inputRequests".into(),
                    Value::Object(r.input_requests.clone()),
                );
            }
            (Some(TaskOutcome::Result { value, .. }), _) => {
                obj.insert("result".into(), value.clone());
            }
            (Some(TaskOutcome::Error { error }), _) => {
                obj.insert("error".into(), error.clone());
            }
            _ => {}
        }
    }
    obj
}

/// 2025-11-25 `tasks/result` of a finished task: what the call would have returned.
pub(super) fn final_of(r: &TaskRecord) -> Option<Result<Value, ErrorObject>> {
    Some(match r.outcome.as_ref()? {
        TaskOutcome::Result { value, .. } => {
            let mut value = value.clone();
            if let Value::Object(obj) = &mut value {
                let meta = obj
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(meta) = meta {
                    meta.insert(META_RELATED_TASK.into(), json!({"taskId": r.id}));
                }
            }
            Ok(value)
        }
        TaskOutcome::Error { error } => Err(serde_json::from_value(error.clone())
            .unwrap_or_else(|_| ErrorObject::internal(format!("Task {} failed", r.id)))),
        // A kind this build does not know has no result either.
        _ => Err(ErrorObject::invalid_params(format!(
            "Task {} was cancelled; it has no result",
            r.id
        ))),
    })
}

/// Whether `session`, in `era`, may see the task of `record`.
pub(super) fn admits(
    r: &TaskRecord,
    era: Era,
    principal: &Option<String>,
    key: Option<&str>,
) -> bool {
    match r.era {
        TaskEra::Modern => era == Era::Modern && r.principal == *principal,
        TaskEra::Legacy => {
            era == Era::Legacy
                && r.session.is_some()
                && r.session.as_deref() == key
                && r.principal == *principal
        }
        #[allow(unreachable_patterns)]
        _ => false,
    }
}

pub(super) fn not_found() -> ErrorObject {
    ErrorObject::invalid_params("Failed to retrieve task: Task not found")
}

/// `work`, a read of the shared store, as a [`Wait`] the driver bounds by `deadline`: a
/// store that hangs or panics costs only this request, which is answered "unavailable". Its
/// outcome comes back to `host` ([`Engine::complete`](crate::engine::Engine::complete)) with `job`.
pub(super) fn store_wait<T: Send + 'static>(
    host: Arc<dyn JobHost>,
    job: StoreRead,
    deadline: Duration,
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> Handled {
    Handled::Wait(Wait::new(
        work,
        deadline,
        Continuation::Store(Box::new(job)).into_job(),
        host,
    ))
}

/// What the engine needs to answer a `tasks/*` request once its store read is over. Data
/// only.
pub(in crate::engine) enum StoreRead {
    /// 2026-07-28 `tasks/get`, `tasks/update`, `tasks/cancel`: the read is the result.
    Modern { id: RequestId, scope: RequestScope },
    /// 2025-11-25 `tasks/get`, `tasks/cancel`, `tasks/result`: the read is the answer
    /// (`None` when the request was cancelled while it waited); `guard` holds the request in
    /// flight (`tasks/result`).
    Legacy {
        id: RequestId,
        guard: Option<InFlight>,
    },
    /// 2025-11-25 `tasks/list`: the read is the session's stored records, merged with this
    /// instance's own tasks when it ends.
    List {
        id: RequestId,
        /// The session's serial, the id its tasks' owner names it by.
        session: u64,
        key: String,
        principal: Option<String>,
        after: Option<(u64, u64, String)>,
        size: usize,
    },
}

/// The answer to request `id` when its read of the task store overran or panicked.
pub(super) fn store_failed(id: RequestId, failure: Failure) -> Option<OutgoingMessage> {
    let error = match failure {
        Failure::TimedOut(d) => {
            tracing::warn!(deadline_ms = ms(d), "the task store did not answer in time");
            ErrorObject::new(
                crate::wire::ErrorCode::UNAVAILABLE,
                format!(
                    "The task store did not answer within {} ms; try again later",
                    ms(d)
                ),
            )
        }
        Failure::Panicked => {
            tracing::error!("the task store panicked");
            ErrorObject::new(
                crate::wire::ErrorCode::UNAVAILABLE,
                "The task store is unavailable; try again later",
            )
        }
    };
    Some(OutgoingMessage::Error {
        id: Some(id),
        error,
    })
}

pub(super) fn unavailable(e: &TaskStoreError) -> ErrorObject {
    tracing::warn!(error = %e, "the task store failed");
    ErrorObject::new(
        crate::wire::ErrorCode::UNAVAILABLE,
        "The task store is unavailable; try again later",
    )
}

impl LiveTasks {
    /// Before a read of live task `entry`'s record: with a shared store, whose writes the
    /// driver makes later, writes the record now, so the read sees what this instance knows
    /// (a refused write means the task ended elsewhere: its work stops). The default
    /// in-memory store is written at every change already.
    pub(super) async fn write_ahead(
        &self,
        store: &Arc<dyn TaskStore>,
        entry: &TaskEntry,
    ) -> Result<(), ErrorObject> {
        let Some(shared) = &self.shared else {
            return Ok(());
        };
        let lease_until = wall_ms(self.platform.time.wall()).saturating_add(ms(shared.lease));
        let record = entry.record(&shared.instance, self.config.poll_interval, lease_until);
        let written = store.put(record).await.map_err(|e| unavailable(&e))?;
        if !written && !entry.status().is_terminal() {
            self.stop_ended(&entry.id);
        }
        Ok(())
    }

    /// Stops and forgets live task `id`, whose stored record ended elsewhere.
    fn stop_ended(&self, id: &str) {
        let mut inner = lock(&self.inner);
        if let Some(entry) = inner.tasks.get(id).cloned() {
            entry.finish(
                Outcome::Cancelled,
                Some("The task ended on another instance.".into()),
            );
            inner.take(id);
        }
        lock(&self.dirty.ids).remove(id);
    }

    /// The shared store's handle for the driver, when one is configured.
    pub(crate) fn sync(self: &Arc<Self>) -> Option<TaskSync> {
        Some(TaskSync {
            shared: self.shared.clone()?,
            tasks: self.clone(),
        })
    }
}

/// The driver's handle on an engine's tasks in a shared [`TaskStore`] (from
/// [`Engine::task_sync`](crate::engine::Engine::task_sync)): which records to write, which leases to renew, and where to
/// deliver what other instances asked of this one's tasks. It does no I/O itself.
#[derive(Clone)]
pub struct TaskSync {
    shared: SharedTasks,
    tasks: Arc<LiveTasks>,
}

impl std::fmt::Debug for TaskSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskSync")
            .field("instance", &self.shared.instance)
            .field("lease", &self.shared.lease)
            .finish_non_exhaustive()
    }
}

impl TaskSync {
    /// The shared store.
    pub fn store(&self) -> &Arc<dyn TaskStore> {
        &self.shared.store
    }

    /// This instance's name in the records it owns.
    pub fn instance(&self) -> &str {
        &self.shared.instance
    }

    /// How long a renewal vouches for this instance's running tasks.
    pub fn lease(&self) -> Duration {
        self.shared.lease
    }

    /// How often to renew: a quarter of the lease, between 100 ms and 1 s, so that a cancel
    /// from another instance reaches the work within a second.
    pub fn renew_every(&self) -> Duration {
        (self.shared.lease / 4).clamp(Duration::from_millis(100), Duration::from_secs(1))
    }

    /// Wall-clock milliseconds of the engine's time source.
    pub fn now_ms(&self) -> u64 {
        wall_ms(self.tasks.platform.time.wall())
    }

    /// Changes whenever a record is due to be written.
    pub fn changes(&self) -> Changes {
        self.tasks.dirty.signal.subscribe()
    }

    fn lease_until(&self) -> u64 {
        self.now_ms().saturating_add(ms(self.shared.lease))
    }

    /// The record of live task `id` as it is now, leased anew.
    pub fn record(&self, id: &str) -> Option<TaskRecord> {
        let entry = self.tasks.get(id)?;
        Some(entry.record(
            &self.shared.instance,
            self.tasks.config.poll_interval,
            self.lease_until(),
        ))
    }

    /// The records changed since the last call, to write with [`TaskStore::put`].
    pub fn take_dirty(&self) -> Vec<TaskRecord> {
        let ids: Vec<String> = lock(&self.tasks.dirty.ids).drain().collect();
        let mut records: Vec<TaskRecord> = lock(&self.tasks.dirty.finals).drain(..).collect();
        records.extend(ids.iter().filter_map(|id| self.record(id)));
        records
    }

    /// Writes live task `id`'s record now (before the client hears of the task); a refused
    /// write stops the task, a failed one is retried with the next changes.
    pub async fn publish(&self, id: &str) {
        let Some(record) = self.record(id) else {
            return;
        };
        match self.shared.store.put(record).await {
            Ok(true) => {}
            Ok(false) => self.stop(id),
            Err(e) => {
                tracing::warn!(error = %e, "could not write a task record");
                self.retry(id);
            }
        }
    }

    /// Marks live task `id` to be written again (its write failed).
    pub fn retry(&self, id: &str) {
        self.tasks.dirty.mark(id);
    }

    /// The ids of this instance's running tasks, whose leases to renew.
    pub fn running(&self) -> Vec<String> {
        lock(&self.tasks.inner)
            .tasks
            .values()
            .filter(|t| !t.status().is_terminal())
            .map(|t| t.id.clone())
            .collect()
    }

    /// Carries out a renewal: stops the work of tasks that ended elsewhere (cancelled by
    /// request, or failed when this instance's lease lapsed) and forgets them here, so every
    /// instance reads the store's record; delivers `tasks/update` answers.
    pub fn apply(&self, renewal: Renewal) {
        for id in &renewal.stop {
            self.stop(id);
        }
        for (id, responses) in &renewal.responses {
            if let Some(entry) = self.tasks.get(id) {
                entry.update(responses);
            }
        }
    }

    /// Stops and forgets live task `id`, whose stored record ended (a write was refused).
    pub fn stop(&self, id: &str) {
        self.tasks.stop_ended(id);
    }
}
