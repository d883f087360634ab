//! The live task table: bounded, with TTL expiry, holding the live task entries by id (the
//! parts of a task that cannot be serialized). Their records live in a
//! [`TaskStore`](crate::task_store::TaskStore): the default in-memory one is written at every
//! change of an entry here and loses a record when its entry leaves.
//!
//! It owns the tasks' time-driven state and exposes it as a [`TimerHost`]: TTL deadlines and
//! the orphan check (a 2025-11-25 task whose session is gone) are instants in
//! [`TimerHost::poll_timeout`], fired by [`TimerHost::handle_timeout`]. It never sleeps: the
//! driver's one timer calls it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::invocation::{TimerHost, Timers};
use crate::sync::{Changes, Generation};

use super::*;
use crate::engine::session::Session;
use crate::platform::Platform;
use crate::wire::Era;

/// The task store: bounded, with TTL expiry.
pub(crate) struct TaskStore {
    pub(super) config: TaskConfig,
    pub(super) inner: Arc<Mutex<StoreInner>>,
    /// The clock of expiry and timestamps, the entropy of task ids.
    pub(super) platform: Platform,
    /// Bumped whenever the earliest timer may have moved earlier.
    schedule: Generation,
    /// Whether a driver's timer runs for this store.
    armed: Arc<AtomicBool>,
    /// The store shared with other instances, if any: the records of these tasks go there.
    pub(crate) shared: Option<super::SharedTasks>,
    /// What changed since the driver last wrote it (with a shared store).
    pub(super) dirty: Arc<super::dirty::Dirty>,
    /// Where the tasks' records are read: the shared store, or by default an in-memory one.
    records: Arc<dyn crate::task_store::TaskStore>,
    /// The prefix of [`session_key`](Self::session_key)s of sessions without a key.
    local_prefix: std::sync::OnceLock<Option<String>>,
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
pub(super) struct StoreInner {
    pub(super) tasks: HashMap<String, Arc<TaskEntry>>,
    pub(super) reserved: usize,
    pub(super) next_seq: u64,
    /// Bytes of finished results kept.
    pub(super) retained: usize,
    /// When to look next for 2025-11-25 tasks whose session is gone (while any still runs).
    pub(super) orphan_check: Option<Instant>,
    /// With a shared store: where a finished task's last record goes when it leaves here.
    pub(super) finals: Option<(Arc<super::dirty::Dirty>, std::time::Duration)>,
    /// With the default in-memory store: where a task's record leaves with it.
    pub(super) memory: Option<Arc<super::dirty::Dirty>>,
}

impl StoreInner {
    /// Removes a task, stopping its work.
    pub(super) fn take(&mut self, id: &str) -> Option<Arc<TaskEntry>> {
        let entry = self.tasks.remove(id)?;
        entry.cancel.cancel();
        if let Some(dirty) = &self.memory {
            dirty.left(id);
        }
        if let Some((dirty, poll)) = &self.finals
            && entry.status().is_terminal()
        {
            dirty.keep_final(entry.record("", *poll, 0));
        }
        self.retained = self
            .retained
            .saturating_sub(entry.size.load(Ordering::Relaxed));
        Some(entry)
    }

    pub(super) fn purge_expired(&mut self, now: Instant) {
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

    /// Whether a 2025-11-25 task still runs (and so needs the orphan check).
    pub(super) fn runs_legacy(&self) -> bool {
        self.tasks
            .values()
            .any(|t| t.legacy && !t.status().is_terminal())
    }

    /// The oldest finished task other than `except`.
    pub(super) fn oldest_finished(&self, except: Option<&str>) -> Option<String> {
        self.tasks
            .values()
            .filter(|t| Some(t.id.as_str()) != except && t.status().is_terminal())
            .min_by_key(|t| t.seq)
            .map(|t| t.id.clone())
    }
}

/// A slot in the store, held while a call may still become a task.
pub(crate) struct Reservation {
    pub(super) inner: Arc<Mutex<StoreInner>>,
    pub(super) seq: u64,
    pub(super) armed: bool,
}

impl Reservation {
    /// Puts `entry` in the store: from now on `tasks/get` finds it, and its TTL (and, for a
    /// 2025-11-25 task, the orphan check) is in the store's timers.
    pub(super) fn commit(mut self, entry: Arc<TaskEntry>, store: &TaskStore) {
        let mut inner = lock(&self.inner);
        inner.reserved = inner.reserved.saturating_sub(1);
        if entry.legacy && inner.orphan_check.is_none() {
            inner.orphan_check = Some(store.platform.time.now() + SESSION_CHECK);
        }
        // Written while the task is in the live store, so a task leaving it at once does not
        // leave its record behind.
        store.dirty.changed(&entry, true);
        inner.tasks.insert(entry.id.clone(), entry);
        self.armed = false;
        drop(inner);
        store.schedule.bump();
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
    pub(crate) fn new(
        config: TaskConfig,
        platform: Platform,
        shared: Option<super::SharedTasks>,
    ) -> Self {
        let (records, dirty): (Arc<dyn crate::task_store::TaskStore>, _) = match &shared {
            Some(s) => (s.store.clone(), super::dirty::Dirty::default()),
            None => {
                let memory = Arc::new(crate::task_store::MemoryTaskStore::new());
                let dirty = super::dirty::Dirty::writing_to(memory.clone(), config.poll_interval);
                (memory, dirty)
            }
        };
        let dirty = Arc::new(dirty);
        let inner = StoreInner {
            finals: shared
                .as_ref()
                .map(|_| (dirty.clone(), config.poll_interval)),
            memory: shared.is_none().then(|| dirty.clone()),
            ..StoreInner::default()
        };
        Self {
            config,
            inner: Arc::new(Mutex::new(inner)),
            platform,
            schedule: Generation::new(),
            armed: Arc::new(AtomicBool::new(false)),
            shared,
            dirty,
            records,
            local_prefix: std::sync::OnceLock::new(),
        }
    }

    /// The key by which task records name `session`: its `Mcp-Session-Id`, or for a session
    /// without one (stdio) its serial under this store's random prefix, which no session of
    /// another instance matches. `None` without entropy (no task is created then).
    pub(crate) fn session_key(&self, session: &Session) -> Option<String> {
        if let Some(key) = session.key() {
            return Some(key.to_owned());
        }
        let prefix = self
            .local_prefix
            .get_or_init(|| self.random_id())
            .as_ref()?;
        Some(format!("{prefix}:{}", session.serial()))
    }

    /// Where this store's task records are read, through the [`TaskStore`] trait.
    ///
    /// [`TaskStore`]: crate::task_store::TaskStore
    pub(crate) fn records(&self) -> Arc<dyn crate::task_store::TaskStore> {
        self.records.clone()
    }

    /// Where a new entry sends its changes.
    pub(super) fn tracking(&self) -> Option<Arc<super::dirty::Dirty>> {
        Some(self.dirty.clone())
    }

    /// The driver's handle on this store's timers.
    pub(crate) fn timers(self: &Arc<Self>) -> Timers {
        let host: Arc<dyn TimerHost> = self.clone();
        Timers::new(Arc::downgrade(&host), self.armed.clone())
    }

    /// 128 random bits, as 32 hex digits. `None` without entropy.
    pub(super) fn random_id(&self) -> Option<String> {
        let mut bytes = [0u8; 16];
        self.platform.entropy.fill(&mut bytes).ok()?;
        Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    pub(crate) fn config(&self) -> &TaskConfig {
        &self.config
    }

    /// A slot for a new task, making room by dropping the oldest finished task if needed.
    /// `None` when every slot holds a running task.
    pub(crate) fn reserve(&self, now: Instant) -> Option<Reservation> {
        let mut inner = lock(&self.inner);
        inner.purge_expired(now);
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

    /// A live task by id, as the store's clock tells the time: for reads inside work that
    /// runs later than the request (the driver's task sync, a store read's continuation).
    pub(crate) fn get(&self, id: &str) -> Option<Arc<TaskEntry>> {
        self.get_at(id, self.platform.time.now())
    }

    /// A live task by id, unless it has expired by `now`.
    pub(crate) fn get_at(&self, id: &str, now: Instant) -> Option<Arc<TaskEntry>> {
        let mut inner = lock(&self.inner);
        let entry = inner.tasks.get(id)?.clone();
        if entry.expired(now) {
            inner.take(id);
            return None;
        }
        Some(entry)
    }

    /// Counts a finished task's result of `bytes` against `max_retained_bytes`, dropping the
    /// oldest other finished tasks while over it.
    pub(super) fn retain(&self, entry: &Arc<TaskEntry>, bytes: usize) {
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

    /// The 2025-11-25 tasks of `session` unexpired at `now`, oldest first.
    pub(super) fn list(
        &self,
        serial: u64,
        principal: &Option<String>,
        now: Instant,
    ) -> Vec<Arc<TaskEntry>> {
        let mut inner = lock(&self.inner);
        inner.purge_expired(now);
        let mut tasks: Vec<Arc<TaskEntry>> = inner
            .tasks
            .values()
            .filter(|t| t.owner.admits_id(Era::Legacy, serial, principal))
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

impl TimerHost for TaskStore {
    fn poll_timeout(&self) -> Option<Instant> {
        let inner = lock(&self.inner);
        let ttl = inner.tasks.values().map(|t| t.deadline).min();
        // The orphan check only while a 2025-11-25 task still runs.
        let orphan_check = inner.orphan_check.filter(|_| inner.runs_legacy());
        match (ttl, orphan_check) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Expires every task whose TTL has elapsed (a running one fails first, so a waiter
    /// hears why), and, when the orphan check is due, stops and forgets the running
    /// 2025-11-25 tasks whose session is gone.
    fn handle_timeout(&self, now: Instant) {
        let mut inner = lock(&self.inner);
        let expired: Vec<Arc<TaskEntry>> = inner
            .tasks
            .values()
            .filter(|t| t.expired(now))
            .cloned()
            .collect();
        for entry in expired {
            entry.finish(
                Outcome::Error(ErrorObject::internal(
                    "The task did not finish within its time to live",
                )),
                Some("The task expired before it finished".into()),
            );
            inner.take(&entry.id);
        }
        if inner.orphan_check.is_some_and(|at| at <= now) {
            let orphans: Vec<Arc<TaskEntry>> = inner
                .tasks
                .values()
                .filter(|t| !t.status().is_terminal() && t.owner.is_orphaned())
                .cloned()
                .collect();
            for entry in orphans {
                entry.cancel.cancel();
                entry.finish(Outcome::Cancelled, Some("The session ended.".into()));
                inner.take(&entry.id);
            }
            inner.orphan_check = Some(now + SESSION_CHECK);
        }
        if !inner.runs_legacy() {
            inner.orphan_check = None;
        }
    }

    fn schedule(&self) -> Changes {
        self.schedule.subscribe()
    }
}
