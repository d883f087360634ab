//! The contract every [`TaskStore`] keeps, as async test functions that panic on a
//! violation: run them against an implementation (the in-memory store's unit tests and the
//! Redis crate's tests do). Times are explicit, so no test waits for a clock. Each
//! function expects a store without the ids it uses.

// Test code for implementations, not for input: a violation is meant to panic.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use serde_json::{Map, Value, json};

use super::{OWNER_STOPPED, TaskEra, TaskOutcome, TaskRecord, TaskStatus, TaskStore};

fn record(id: &str, now: u64, lease_until: u64) -> TaskRecord {
    TaskRecord::new(
        id,
        "instance-a",
        TaskEra::Modern,
        now,
        60_000,
        500,
        lease_until,
    )
}

fn answers(key: &str, n: u64) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(key.into(), json!({"n": n}));
    m
}

/// Runs every check of the contract against `store`.
pub async fn task_store(store: &dyn TaskStore) {
    round_trip(store).await;
    terminal_is_final(store).await;
    lapsed_leases_fail(store).await;
    renewal_keeps_tasks_alive(store).await;
    cancel_reaches_the_owner(store).await;
    answers_reach_the_owner(store).await;
    lists_are_per_session(store).await;
    expiry(store).await;
    changes_are_seen(store).await;
}

/// A written record reads back as written, big numbers included.
pub async fn round_trip(store: &dyn TaskStore) {
    let mut r = record("rt", 1_000, 10_000);
    r.principal = Some("alice".into());
    r.input_requests
        .insert("k".into(), json!({"method": "elicitation/create"}));
    assert!(store.put(r.clone()).await.unwrap());
    assert_eq!(store.get("rt", 1_001).await.unwrap(), Some(r.clone()));
    let mut done = r.clone();
    done.status = TaskStatus::Completed;
    done.input_requests.clear();
    done.outcome = Some(TaskOutcome::Result {
        value: json!({"content": [], "structuredContent": {"big": u64::MAX}}),
        is_error: false,
    });
    assert!(store.put(done.clone()).await.unwrap());
    assert_eq!(store.get("rt", 1_002).await.unwrap(), Some(done));
    assert_eq!(store.get("missing", 1_002).await.unwrap(), None);
}

/// A terminal record does not change again.
pub async fn terminal_is_final(store: &dyn TaskStore) {
    let r = record("tf", 1_000, 10_000);
    assert!(store.put(r.clone()).await.unwrap());
    let failed = r.clone().owner_stopped(2_000);
    assert!(store.put(failed.clone()).await.unwrap());
    assert!(
        !store.put(r).await.unwrap(),
        "a terminal record was overwritten"
    );
    assert_eq!(store.get("tf", 2_001).await.unwrap(), Some(failed));
}

/// A running record whose lease lapsed is failed, for every reader, for good.
pub async fn lapsed_leases_fail(store: &dyn TaskStore) {
    let r = record("ll", 1_000, 5_000);
    store.put(r.clone()).await.unwrap();
    let before = store.get("ll", 4_999).await.unwrap().unwrap();
    assert_eq!(before.status, TaskStatus::Working);
    let after = store.get("ll", 5_000).await.unwrap().unwrap();
    assert_eq!(after.status, TaskStatus::Failed);
    assert_eq!(after.status_message.as_deref(), Some(OWNER_STOPPED));
    assert!(matches!(after.outcome, Some(TaskOutcome::Error { .. })));
    // The owner comes back too late: it neither resurrects the task nor keeps working.
    assert!(!store.put(r).await.unwrap());
    let renewal = store.renew(&["ll".into()], 9_000).await.unwrap();
    assert_eq!(renewal.stop, vec!["ll".to_owned()]);
    assert_eq!(store.get("ll", 5_001).await.unwrap(), Some(after));
}

/// Renewing moves the lease on; an owner's write with an older lease keeps the newer one.
pub async fn renewal_keeps_tasks_alive(store: &dyn TaskStore) {
    let r = record("rn", 1_000, 2_000);
    store.put(r.clone()).await.unwrap();
    let renewal = store
        .renew(&["rn".into(), "gone".into()], 8_000)
        .await
        .unwrap();
    assert_eq!(renewal.stop, vec!["gone".to_owned()]);
    assert!(renewal.responses.is_empty());
    let mut update = r;
    update.status_message = Some("halfway".into());
    store.put(update).await.unwrap();
    let seen = store.get("rn", 7_999).await.unwrap().unwrap();
    assert_eq!(seen.status, TaskStatus::Working);
    assert_eq!(seen.status_message.as_deref(), Some("halfway"));
    assert_eq!(seen.lease_until, 8_000);
}

/// `cancel` ends a running task at once; its owner hears it at the next renewal.
pub async fn cancel_reaches_the_owner(store: &dyn TaskStore) {
    let r = record("cx", 1_000, 10_000);
    store.put(r.clone()).await.unwrap();
    let cancelled = store.cancel("cx", 2_000).await.unwrap().unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    assert_eq!(cancelled.outcome, Some(TaskOutcome::Cancelled));
    let renewal = store.renew(&["cx".into()], 12_000).await.unwrap();
    assert_eq!(renewal.stop, vec!["cx".to_owned()]);
    // The owner's late result does not undo the cancel.
    let mut done = r;
    done.status = TaskStatus::Completed;
    done.outcome = Some(TaskOutcome::Result {
        value: json!({"content": []}),
        is_error: false,
    });
    assert!(!store.put(done).await.unwrap());
    let again = store.cancel("cx", 3_000).await.unwrap().unwrap();
    assert_eq!(again, cancelled);
    assert_eq!(store.cancel("nope", 3_000).await.unwrap(), None);
}

/// `deliver` queues answers for the owner, in order, each taken once.
pub async fn answers_reach_the_owner(store: &dyn TaskStore) {
    store.put(record("in", 1_000, 10_000)).await.unwrap();
    assert!(store.deliver("in", answers("a", 1)).await.unwrap());
    assert!(store.deliver("in", answers("b", 2)).await.unwrap());
    let renewal = store.renew(&["in".into()], 11_000).await.unwrap();
    assert!(renewal.stop.is_empty());
    assert_eq!(
        renewal.responses,
        vec![
            ("in".to_owned(), answers("a", 1)),
            ("in".to_owned(), answers("b", 2))
        ]
    );
    let renewal = store.renew(&["in".into()], 11_000).await.unwrap();
    assert!(renewal.responses.is_empty());
    store.cancel("in", 2_000).await.unwrap();
    assert!(!store.deliver("in", answers("c", 3)).await.unwrap());
    assert!(!store.deliver("absent", answers("c", 3)).await.unwrap());
}

/// `list` returns one session's records in creation order, leases applied.
pub async fn lists_are_per_session(store: &dyn TaskStore) {
    for (id, session, seq) in [("l2", "s1", 2), ("l1", "s1", 1), ("lx", "s2", 1)] {
        let mut r = record(id, 1_000, 5_000);
        r.era = TaskEra::Legacy;
        r.session = Some(session.into());
        r.seq = seq;
        store.put(r).await.unwrap();
    }
    let listed = store.list("s1", 2_000).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["l1", "l2"]);
    let lapsed = store.list("s1", 6_000).await.unwrap();
    assert!(lapsed.iter().all(|r| r.status == TaskStatus::Failed));
    assert!(store.list("s3", 2_000).await.unwrap().is_empty());
}

/// A record is gone once its TTL from creation has passed.
pub async fn expiry(store: &dyn TaskStore) {
    let mut r = record("ex", 1_000, 1_000_000);
    r.ttl = 1_000;
    r.expires_at = 2_000;
    store.put(r).await.unwrap();
    assert!(store.get("ex", 1_999).await.unwrap().is_some());
    assert_eq!(store.get("ex", 2_000).await.unwrap(), None);
}

/// `changed` resolves once the record moved past what the caller saw.
pub async fn changes_are_seen(store: &dyn TaskStore) {
    let r = record("ch", 1_000, 10_000);
    store.put(r.clone()).await.unwrap();
    let mut later = r;
    later.updated_at = 1_500;
    later.status_message = Some("moved".into());
    store.put(later).await.unwrap();
    store.changed("ch", 1_000).await.unwrap();
    store.changed("absent", 1_000).await.unwrap();
}
