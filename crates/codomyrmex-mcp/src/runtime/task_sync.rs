//! The driver's task sync: writes an engine's changed task records to its shared
//! [`TaskStore`](codomyrmex_mcp_core::task_store::TaskStore), renews the leases of the tasks
//! it runs, and carries out what other instances asked of them (a cancel, `tasks/update`
//! answers), on one tokio task per engine.
//!
//! Cancels and answers reach the owner with its renewals: every renewal returns them, and
//! one store round trip covers every task of the instance. Without wakeups the sync renews
//! every quarter of the lease, at most a second apart, so a cancel from another instance
//! waits for that poll. With [`TaskWakeups`] ([`spawn_task_sync_woken`]: the store pushes a
//! wakeup when another instance cancels a task of this one, or queues answers for it) the
//! sync renews at once on each, and otherwise only every quarter of the lease, which then
//! only keeps the lease (and catches a lost wakeup). When the store cannot be reached,
//! writes are retried at the next round; a lease that cannot be renewed lapses, and the
//! other instances then see those tasks fail.

use std::time::Duration;

use codomyrmex_mcp_core::engine::{Engine, TaskSync};
use futures_util::StreamExt as _;
use futures_util::stream::BoxStream;

/// Nudges from the task store: each item says another instance asked something of this
/// instance's tasks (a cancel, `tasks/update` answers), to renew now. A stream that ends
/// leaves the sync polling every quarter of the lease.
pub type TaskWakeups = BoxStream<'static, ()>;

/// Keeps a task sync running; dropping it stops the sync (the instance's leases then lapse).
#[derive(Debug)]
pub struct TaskSyncHandle(tokio::task::JoinHandle<()>);

impl Drop for TaskSyncHandle {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Starts the task sync of `engine`, if it shares its tasks through a store (else `None`).
/// Needs a tokio runtime.
pub fn spawn_task_sync(engine: &Engine) -> Option<TaskSyncHandle> {
    let sync = engine.task_sync()?;
    Some(TaskSyncHandle(tokio::spawn(run(sync, None))))
}

/// [`spawn_task_sync`], renewing at once on each of `wakeups` (pushed by the store), and
/// otherwise every quarter of the lease.
pub fn spawn_task_sync_woken(engine: &Engine, wakeups: TaskWakeups) -> Option<TaskSyncHandle> {
    let sync = engine.task_sync()?;
    Some(TaskSyncHandle(tokio::spawn(run(sync, Some(wakeups)))))
}

async fn run(sync: TaskSync, mut wakeups: Option<TaskWakeups>) {
    // Pushed wakeups make the one-second cap of the poll unneeded: the poll then only keeps
    // the lease.
    let every = if wakeups.is_some() {
        (sync.lease() / 4).max(Duration::from_millis(100))
    } else {
        sync.renew_every()
    };
    let mut changes = sync.changes();
    let mut renew_at = tokio::time::Instant::now();
    loop {
        flush(&sync).await;
        if tokio::time::Instant::now() >= renew_at {
            renew(&sync).await;
            renew_at = tokio::time::Instant::now() + every;
        }
        let woken = async {
            match wakeups.as_mut() {
                Some(w) => w.next().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = changes.changed() => if r.is_err() { return },
            () = tokio::time::sleep_until(renew_at) => {}
            w = woken => match w {
                Some(()) => renew_at = tokio::time::Instant::now(),
                None => {
                    tracing::warn!("the task store's wakeups ended; polling every {every:?}");
                    wakeups = None;
                }
            },
        }
    }
}

/// Writes the records that changed.
async fn flush(sync: &TaskSync) {
    for record in sync.take_dirty() {
        let id = record.id.clone();
        match sync.store().put(record).await {
            Ok(true) => {}
            // The stored record ended (cancelled elsewhere, or this lease lapsed).
            Ok(false) => sync.stop(&id),
            Err(e) => {
                tracing::warn!(error = %e, "could not write a task record; retrying");
                sync.retry(&id);
                // Give the store a moment instead of spinning on the retry's change.
                tokio::time::sleep(Duration::from_millis(200)).await;
                return;
            }
        }
    }
}

/// Renews this instance's leases and applies what came back.
async fn renew(sync: &TaskSync) {
    let running = sync.running();
    if running.is_empty() {
        return;
    }
    let lease_until = sync
        .now_ms()
        .saturating_add(u64::try_from(sync.lease().as_millis()).unwrap_or(u64::MAX));
    match sync.store().renew(&running, lease_until).await {
        Ok(renewal) => sync.apply(renewal),
        Err(e) => tracing::warn!(error = %e, "could not renew task leases"),
    }
}
