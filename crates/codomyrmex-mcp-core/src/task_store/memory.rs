//! [`MemoryTaskStore`]: the in-memory [`TaskStore`], for one process (and for tests that
//! play several instances sharing one store).

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::{Map, Value};

use super::{Renewal, TaskRecord, TaskStore, TaskStoreError, TaskStoreFuture};
use crate::sync::Generation;

/// The most `tasks/update` deliveries queued per task for its owner.
pub(super) const MAX_QUEUED: usize = 64;

/// The in-memory [`TaskStore`]: a map behind a mutex.
#[derive(Debug, Default)]
pub struct MemoryTaskStore {
    records: Mutex<HashMap<String, Stored>>,
    changed: Generation,
}

#[derive(Debug)]
struct Stored {
    record: TaskRecord,
    queued: VecDeque<Map<String, Value>>,
}

fn ready<'a, T: Send + 'a>(value: Result<T, TaskStoreError>) -> TaskStoreFuture<'a, T> {
    Box::pin(std::future::ready(value))
}

impl MemoryTaskStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Stored>> {
        self.records.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`put`](TaskStore::put), synchronously; `create: false` only replaces a stored record
    /// (a task that left the store is not written back by a late change of its live part).
    pub(crate) fn write(&self, record: TaskRecord, create: bool) -> bool {
        let written = {
            let mut map = self.lock();
            match map.get_mut(&record.id) {
                Some(stored) if stored.record.status.is_terminal() => false,
                Some(stored) => {
                    let lease = stored.record.lease_until.max(record.lease_until);
                    stored.record = record;
                    stored.record.lease_until = lease;
                    if stored.record.status.is_terminal() {
                        stored.queued.clear();
                    }
                    true
                }
                None if create => {
                    map.insert(
                        record.id.clone(),
                        Stored {
                            record,
                            queued: VecDeque::new(),
                        },
                    );
                    true
                }
                None => false,
            }
        };
        if written {
            self.changed.bump();
        }
        written
    }

    /// A copy of the outcome in record `id`, if there is the record and an outcome.
    pub(crate) fn outcome(&self, id: &str) -> Option<super::TaskOutcome> {
        self.lock().get(id)?.record.outcome.clone()
    }

    /// Forgets record `id` (its task left the engine's live store).
    pub(crate) fn remove(&self, id: &str) {
        if self.lock().remove(id).is_some() {
            self.changed.bump();
        }
    }

    /// The record `id` at `now` with the lease rule applied, in the locked map.
    fn read(map: &mut HashMap<String, Stored>, id: &str, now: u64) -> Option<TaskRecord> {
        let stored = map.get_mut(id)?;
        if stored.record.is_expired(now) {
            map.remove(id);
            return None;
        }
        if stored.record.lease_lapsed(now) {
            stored.record = stored.record.clone().owner_stopped(now);
            stored.queued.clear();
        }
        Some(stored.record.clone())
    }
}

impl TaskStore for MemoryTaskStore {
    fn put(&self, record: TaskRecord) -> TaskStoreFuture<'_, bool> {
        ready(Ok(self.write(record, true)))
    }

    fn get<'a>(&'a self, id: &'a str, now: u64) -> TaskStoreFuture<'a, Option<TaskRecord>> {
        let record = Self::read(&mut self.lock(), id, now);
        ready(Ok(record))
    }

    fn cancel<'a>(&'a self, id: &'a str, now: u64) -> TaskStoreFuture<'a, Option<TaskRecord>> {
        let record = {
            let mut map = self.lock();
            match Self::read(&mut map, id, now) {
                Some(r) if !r.status.is_terminal() => {
                    let r = r.cancelled(now);
                    if let Some(stored) = map.get_mut(id) {
                        stored.record = r.clone();
                        stored.queued.clear();
                    }
                    Some(r)
                }
                other => other,
            }
        };
        self.changed.bump();
        ready(Ok(record))
    }

    fn deliver<'a>(
        &'a self,
        id: &'a str,
        responses: Map<String, Value>,
    ) -> TaskStoreFuture<'a, bool> {
        let mut map = self.lock();
        let delivered = match map.get_mut(id) {
            Some(stored) if !stored.record.status.is_terminal() => {
                if stored.queued.len() >= MAX_QUEUED {
                    stored.queued.pop_front();
                }
                stored.queued.push_back(responses);
                true
            }
            _ => false,
        };
        ready(Ok(delivered))
    }

    fn renew<'a>(&'a self, ids: &'a [String], lease_until: u64) -> TaskStoreFuture<'a, Renewal> {
        let mut map = self.lock();
        let mut renewal = Renewal::default();
        for id in ids {
            match map.get_mut(id) {
                Some(stored) if !stored.record.status.is_terminal() => {
                    stored.record.lease_until = stored.record.lease_until.max(lease_until);
                    for r in stored.queued.drain(..) {
                        renewal.responses.push((id.clone(), r));
                    }
                }
                _ => renewal.stop.push(id.clone()),
            }
        }
        ready(Ok(renewal))
    }

    fn list<'a>(&'a self, session: &'a str, now: u64) -> TaskStoreFuture<'a, Vec<TaskRecord>> {
        let mut map = self.lock();
        let ids: Vec<String> = map
            .values()
            .filter(|s| s.record.session.as_deref() == Some(session))
            .map(|s| s.record.id.clone())
            .collect();
        let mut records: Vec<TaskRecord> = ids
            .iter()
            .filter_map(|id| Self::read(&mut map, id, now))
            .collect();
        records.sort_by(|a, b| (a.seq, &a.id).cmp(&(b.seq, &b.id)));
        ready(Ok(records))
    }

    fn changed<'a>(&'a self, id: &'a str, seen: u64) -> TaskStoreFuture<'a, ()> {
        let mut changes = self.changed.subscribe();
        let moved = self
            .lock()
            .get(id)
            .is_none_or(|s| s.record.updated_at != seen || s.record.status.is_terminal());
        Box::pin(async move {
            if !moved {
                // Closed only when the store is dropped; either way the caller reads again.
                let _ = changes.changed().await;
            }
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_in_memory_task_store_keeps_the_contract() {
        futures_executor::block_on(super::super::contract::task_store(
            &super::MemoryTaskStore::new(),
        ));
    }
}
