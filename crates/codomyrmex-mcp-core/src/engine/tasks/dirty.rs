//! [`Dirty`]: where changes of live tasks go, between the live table (`store.rs`) and the
//! records of the [`TaskStore`](crate::task_store::TaskStore) (`shared.rs`). Its own module so
//! that both use it and neither uses the other's way back (no import cycle).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{TaskEntry, lock};
use crate::sync::Generation;
use crate::task_store::{TaskOutcome, TaskRecord};

/// The most final records waiting for the driver to write them.
const MAX_FINALS: usize = 4096;

/// The owner named in the records of the default in-memory store.
pub(crate) const LOCAL_OWNER: &str = "local";

/// Where changes of live tasks go. With a shared store: the ids of live tasks changed since
/// the driver last wrote them, and the final records of tasks that left the live store before
/// it did. With the default in-memory store (`memory`): nowhere to wait, the record is
/// written at once.
#[derive(Default)]
pub(super) struct Dirty {
    pub(super) ids: Mutex<HashSet<String>>,
    pub(super) finals: Mutex<Vec<TaskRecord>>,
    pub(super) signal: Generation,
    /// The default in-memory store, and the poll interval its records suggest.
    memory: Option<(Arc<crate::task_store::MemoryTaskStore>, Duration)>,
}

impl Dirty {
    /// Writes straight to `memory`, the engine's default in-memory store.
    pub(super) fn writing_to(
        memory: Arc<crate::task_store::MemoryTaskStore>,
        poll_interval: Duration,
    ) -> Self {
        Self {
            memory: Some((memory, poll_interval)),
            ..Self::default()
        }
    }

    /// Live task `entry` changed (`created`: it has just joined the live store). Its record is
    /// written now to the in-memory store (a task that already left it is not written back);
    /// with a shared store it is noted for the driver.
    pub(super) fn changed(&self, entry: &TaskEntry, created: bool) {
        match &self.memory {
            Some((store, poll)) => {
                let mut record = entry.record(LOCAL_OWNER, *poll, u64::MAX);
                // The live table expires the task, and its record with it, at its TTL on the
                // monotonic clock: a jump of the wall clock expires nothing.
                record.expires_at = u64::MAX;
                let holds_result = record.status.is_terminal()
                    && matches!(record.outcome, Some(TaskOutcome::Result { .. }));
                if store.write(record, created) && holds_result {
                    entry.release_result();
                }
            }
            None => self.mark(&entry.id),
        }
    }

    /// The outcome in the in-memory store's record of task `id`, if it is there.
    pub(super) fn kept_outcome(&self, id: &str) -> Option<TaskOutcome> {
        let (store, _) = self.memory.as_ref()?;
        store.outcome(id)
    }

    /// Live task `id` left the live store: its record leaves the in-memory store too.
    pub(super) fn left(&self, id: &str) {
        if let Some((store, _)) = &self.memory {
            store.remove(id);
        }
    }

    pub(super) fn mark(&self, id: &str) {
        lock(&self.ids).insert(id.to_owned());
        self.signal.bump();
    }

    /// Keeps the last record of a task that left the live store, for the driver to write; at
    /// most [`MAX_FINALS`] wait (without a driver running, the oldest give way).
    pub(super) fn keep_final(&self, record: TaskRecord) {
        let mut finals = lock(&self.finals);
        if finals.len() >= MAX_FINALS {
            finals.remove(0);
        }
        finals.push(record);
        drop(finals);
        self.signal.bump();
    }
}
