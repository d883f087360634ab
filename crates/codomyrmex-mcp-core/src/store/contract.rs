//! The contract tests of the store traits, as plain functions over any implementation, so
//! that an implementation outside this crate (Redis) runs the same checks:
//!
//! ```ignore
//! codomyrmex_mcp::store::contract::session_store(&my_store).await;
//! ```
//!
//! They panic on the first violation. Times are explicit values: nothing sleeps. Each
//! function expects an empty store; [`event_store`] also expects the bounds it names.

// Test code for implementations, not for input: a violation is meant to panic.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::task::{Poll, Waker};

use super::{
    BusHandler, BusMessage, EventId, EventStore, MessageBus, ReplayScope, Routed, SessionRecord,
    SessionStore, StoreError,
};

const T0: u64 = 1_000_000;
const IDLE: u64 = 60_000;

fn record(id: &str, now: u64) -> SessionRecord {
    SessionRecord::new(id, "2025-11-25", now, IDLE)
}

/// Checks a [`SessionStore`]: creation and its cap with LRU eviction of idle sessions, busy
/// sessions kept, sliding expiry, compare-and-set, deletion and expiry.
pub async fn session_store(store: &dyn SessionStore) {
    let none = |_: &str| false;
    // Create and load; a duplicate id is refused.
    let created = store.create(record("a", T0), 2, T0, &none).await;
    assert_eq!(created.map(|c| c.evicted), Ok(Vec::new()));
    assert_eq!(
        store.create(record("a", T0), 2, T0, &none).await,
        Err(StoreError::Exists)
    );
    let a = store.load("a", T0).await.expect("load").expect("stored");
    assert_eq!(a.protocol_version, "2025-11-25");
    assert!(a.version >= 1);
    // The record round-trips through its encoding.
    assert_eq!(
        SessionRecord::decode(&a.encode().expect("encode")),
        Ok(a.clone())
    );
    store
        .create(record("b", T0 + 10), 2, T0 + 10, &none)
        .await
        .expect("b");
    // `a` is used after `b`: `b` is the least recently used.
    let expires = store.touch("a", T0 + 20).await.expect("touch");
    assert_eq!(expires, Some(T0 + 20 + IDLE), "sliding expiry");
    let a = store.load("a", T0 + 20).await.expect("load").expect("a");
    assert_eq!((a.last_seen, a.expires_at), (T0 + 20, T0 + 20 + IDLE));
    let created = store
        .create(record("c", T0 + 30), 2, T0 + 30, &none)
        .await
        .expect("room is made");
    assert_eq!(created.evicted, ["b"]);
    assert_eq!(store.load("b", T0 + 30).await, Ok(None));
    // Busy sessions are never evicted; when all are busy, the store is full.
    let busy = |_: &str| true;
    assert_eq!(
        store.create(record("d", T0 + 40), 2, T0 + 40, &busy).await,
        Err(StoreError::Full)
    );
    let keep_a = |id: &str| id == "a";
    let created = store
        .create(record("d", T0 + 40), 2, T0 + 40, &keep_a)
        .await
        .expect("c goes");
    assert_eq!(created.evicted, ["c"]);
    // Within one millisecond, the order of use decides: `d` was used after `a` here.
    store.touch("a", T0 + 40).await.expect("touch").expect("a");
    store.touch("d", T0 + 40).await.expect("touch").expect("d");
    let created = store
        .create(record("x", T0 + 40), 3, T0 + 40, &none)
        .await
        .expect("room");
    assert!(created.evicted.is_empty(), "a cap of 3 has room");
    let created = store
        .create(record("y", T0 + 40), 3, T0 + 40, &none)
        .await
        .expect("room");
    assert_eq!(created.evicted, ["a"]);
    store.touch("d", T0 + 40).await.expect("touch").expect("d");
    store.delete("x").await.expect("delete");
    store.delete("y").await.expect("delete");
    store
        .create(record("a", T0 + 20), 3, T0 + 20, &none)
        .await
        .expect("a again");
    store.touch("a", T0 + 20).await.expect("touch").expect("a");
    // Compare-and-set.
    let d = store.load("d", T0 + 40).await.expect("load").expect("d");
    let mut changed = d.clone();
    changed.log_level = Some("debug".into());
    let saved = store.save(changed.clone(), d.version).await.expect("save");
    assert!(saved.version > d.version);
    assert!(matches!(
        store.save(changed, d.version).await,
        Err(StoreError::Conflict { .. })
    ));
    let d = store.load("d", T0 + 40).await.expect("load").expect("d");
    assert_eq!(d.log_level.as_deref(), Some("debug"));
    // Expiry: `a` was touched at T0 + 20, `d` created at T0 + 40.
    let later = T0 + 20 + IDLE;
    assert_eq!(store.load("a", later).await, Ok(None), "expired");
    assert_eq!(store.touch("a", later).await, Ok(None));
    assert!(store.load("d", later).await.expect("load").is_some());
    // A busy session outlives its expiry in `expire`, not in `touch`.
    let far = T0 + 10 * IDLE;
    let keep_d = |id: &str| id == "d";
    assert_eq!(store.expire(far, &keep_d).await, Ok(Vec::new()));
    assert_eq!(store.expire(far, &none).await, Ok(vec!["d".to_owned()]));
    assert_eq!(store.count().await, Ok(0));
    // Deletion.
    store
        .create(record("e", far), 2, far, &none)
        .await
        .expect("e");
    assert_eq!(store.delete("e").await, Ok(true));
    assert_eq!(store.delete("e").await, Ok(false));
    assert_eq!(store.load("e", far).await, Ok(None));
    admissions_at_once(store, far).await;
}

/// Many admissions at once into a full table of idle sessions (issue #26): each one evicts an
/// idle session of its own, none is refused, the busy one stays, the cap holds.
async fn admissions_at_once(store: &dyn SessionStore, now: u64) {
    const CAP: usize = 8;
    let none = |_: &str| false;
    for i in 0..CAP {
        let id = format!("old{i}");
        store
            .create(record(&id, now), CAP, now, &none)
            .await
            .expect("room");
    }
    let keep_old0 = |id: &str| id == "old0";
    let later = now + 1;
    let ids: Vec<String> = (0..4 * CAP).map(|i| format!("new{i}")).collect();
    let admitted = futures_util::future::join_all(
        ids.iter()
            .map(|id| store.create(record(id, later), CAP, later, &keep_old0)),
    )
    .await;
    for (id, result) in ids.iter().zip(&admitted) {
        assert!(result.is_ok(), "{id} was refused: {result:?}");
    }
    let evicted: usize = admitted
        .iter()
        .map(|r| r.as_ref().map_or(0, |c| c.evicted.len()))
        .sum();
    assert_eq!(evicted, 4 * CAP, "one eviction per admission");
    assert_eq!(store.count().await, Ok(CAP), "the cap holds");
    assert!(
        store.load("old0", later).await.expect("load").is_some(),
        "the busy session stays"
    );
    for id in ids.iter().chain(std::iter::once(&"old0".to_owned())) {
        store.delete(id).await.expect("delete");
    }
    assert_eq!(store.count().await, Ok(0));
}

/// Checks an [`EventStore`] built with these bounds: 4 events per stream, 100 bytes per
/// event, 300 bytes per stream, 400 per session, 600 for the whole store.
pub async fn event_store(store: &dyn EventStore) {
    let alice = ReplayScope {
        session: "s1",
        principal: Some("alice"),
    };
    let stream = store.open_stream(alice).await.expect("open");
    assert_ne!(stream, 0, "stream 0 is the standalone stream");
    // A stream opened with its writer on record is a new stream like any other.
    let written = store
        .open_stream_by(alice, super::StreamWriter::new("w1", b"{}"))
        .await
        .expect("open with a writer");
    assert!(written != stream && written != 0, "a new stream: {written}");
    let first = store
        .append(alice, written, b"x".to_vec())
        .await
        .expect("append");
    assert_eq!(first.stream, written);
    let mut ids = Vec::new();
    for n in 0..3u8 {
        ids.push(
            store
                .append(alice, stream, vec![n; 10])
                .await
                .expect("append"),
        );
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ordered: {ids:?}");
    assert!(
        ids.iter().all(|id| id.stream == stream),
        "ids name their stream"
    );
    let id: EventId = ids[0].to_string().parse().expect("ids parse back");
    assert_eq!(id, ids[0]);
    // Replay after the first: the other two, unchanged.
    let replay = store.replay_after(ids[0], alice).await.expect("replay");
    assert_eq!(replay.stream, stream);
    let data: Vec<Vec<u8>> = replay.events.iter().map(|e| e.data.clone()).collect();
    assert_eq!(data, [vec![1u8; 10], vec![2u8; 10]]);
    assert!(!replay.closed);
    // Only for the owner: another principal or session does not see the stream.
    let bob = ReplayScope {
        session: "s1",
        principal: Some("bob"),
    };
    assert_eq!(
        store.replay_after(ids[0], bob).await,
        Err(StoreError::UnknownStream)
    );
    let other = ReplayScope {
        session: "s2",
        principal: Some("alice"),
    };
    assert_eq!(
        store.replay_after(ids[0], other).await,
        Err(StoreError::UnknownStream)
    );
    // Other streams' events are not replayed.
    let second = store.open_stream(alice).await.expect("open");
    store
        .append(alice, second, vec![9; 10])
        .await
        .expect("append");
    let replay = store.replay_after(ids[0], alice).await.expect("replay");
    assert_eq!(replay.events.len(), 2);
    // Bounds: an event over 100 bytes is refused; the stream keeps 4 events, oldest first.
    assert_eq!(
        store.append(alice, stream, vec![0; 101]).await,
        Err(StoreError::TooLarge { limit: 100 })
    );
    for n in 3..6u8 {
        store
            .append(alice, stream, vec![n; 10])
            .await
            .expect("append");
    }
    // Event 1 is gone: resuming after it would skip event 2.
    assert_eq!(
        store.replay_after(ids[0], alice).await,
        Err(StoreError::Evicted)
    );
    // The byte bound of the stream (300) evicts too.
    for _ in 0..4 {
        store
            .append(alice, stream, vec![7; 100])
            .await
            .expect("append");
    }
    let last = EventId { stream, seq: 6 };
    assert_eq!(
        store.replay_after(last, alice).await,
        Err(StoreError::Evicted)
    );
    let tail = store
        .replay_after(EventId { stream, seq: 7 }, alice)
        .await
        .expect("replay");
    assert_eq!(tail.events.len(), 3, "300 bytes hold three 100-byte events");
    // The session's (400) and the store's (600) bounds span streams.
    let third = store.open_stream(alice).await.expect("open");
    for _ in 0..3 {
        store
            .append(alice, third, vec![8; 100])
            .await
            .expect("append");
    }
    let after = EventId {
        stream: third,
        seq: 0,
    };
    let mine = store.replay_after(after, alice).await.expect("replay");
    assert_eq!(mine.events.len(), 3, "the newest events stay");
    assert_eq!(
        store.replay_after(EventId { stream, seq: 7 }, alice).await,
        Err(StoreError::Evicted),
        "the session's oldest events went"
    );
    let nine = EventId { stream, seq: 9 };
    assert_eq!(
        store
            .replay_after(nine, alice)
            .await
            .expect("replay")
            .events
            .len(),
        1
    );
    // The store's bound (600) spans sessions: another session's events evict this one's
    // oldest.
    let carol = ReplayScope {
        session: "s2",
        principal: Some("carol"),
    };
    let theirs = store.open_stream(carol).await.expect("open");
    for _ in 0..3 {
        store
            .append(carol, theirs, vec![6; 100])
            .await
            .expect("append");
    }
    assert_eq!(
        store.replay_after(nine, alice).await,
        Err(StoreError::Evicted)
    );
    assert_eq!(
        store
            .replay_after(after, alice)
            .await
            .expect("replay")
            .events
            .len(),
        3
    );
    // Past the end of a known stream: nothing yet.
    let past = store
        .replay_after(
            EventId {
                stream: third,
                seq: 99,
            },
            alice,
        )
        .await
        .expect("replay");
    assert!(past.events.is_empty());
    // The last sequence number comes with every replay, whatever the id.
    assert_eq!(
        past.last_seq, 3,
        "three events appended to the third stream"
    );
    // Waiting: at once when an event follows the id; otherwise until one is appended.
    store
        .wait_after(
            EventId {
                stream: third,
                seq: 2,
            },
            alice,
        )
        .await
        .expect("an event follows: no wait");
    let end = EventId {
        stream: third,
        seq: 3,
    };
    let mut waiting = store.wait_after(end, alice);
    let first = std::future::poll_fn(|cx| Poll::Ready(waiting.as_mut().poll(cx))).await;
    assert!(!matches!(first, Poll::Ready(Err(_))), "{first:?}");
    // Empty, so that no bound evicts anything.
    let next = store
        .append(alice, third, Vec::new())
        .await
        .expect("append");
    assert_eq!(
        next,
        EventId {
            stream: third,
            seq: 4
        }
    );
    if first.is_pending() {
        waiting.await.expect("woken by the append");
    }
    let tail = store.replay_after(end, alice).await.expect("replay");
    assert_eq!(tail.events.len(), 1);
    assert_eq!(
        store.wait_after(end, bob).await,
        Err(StoreError::UnknownStream),
        "only the owner waits"
    );
    // Closing ends a stream; dropping the session forgets it.
    store.close_stream(alice, third).await.expect("close");
    store
        .wait_after(
            EventId {
                stream: third,
                seq: 4,
            },
            alice,
        )
        .await
        .expect("a closed stream: no wait");
    assert!(
        store
            .replay_after(after, alice)
            .await
            .expect("replay")
            .closed
    );
    assert_eq!(
        store.append(alice, third, vec![1]).await,
        Err(StoreError::Closed)
    );
    store.drop_session("s1").await.expect("drop");
    assert_eq!(
        store.replay_after(after, alice).await,
        Err(StoreError::UnknownStream)
    );
}

/// A [`BusHandler`] that keeps what it is given, for [`message_bus`].
#[derive(Default)]
pub struct Collector {
    state: Mutex<(Vec<Routed>, Option<Waker>)>,
}

impl BusHandler for Collector {
    fn deliver(&self, routed: Routed) {
        let mut s = self.state.lock().unwrap();
        s.0.push(routed);
        if let Some(w) = s.1.take() {
            w.wake();
        }
    }
}

impl Collector {
    /// The next message delivered (waits for it).
    pub async fn next(&self) -> Routed {
        std::future::poll_fn(|cx| {
            let mut s = self.state.lock().unwrap();
            if s.0.is_empty() {
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            } else {
                Poll::Ready(s.0.remove(0))
            }
        })
        .await
    }

    /// How many messages wait to be taken.
    pub fn len(&self) -> usize {
        self.state.lock().unwrap().0.len()
    }

    /// Whether no message waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Checks two instances `a` and `b` of one [`MessageBus`] (both fresh, nothing claimed):
/// who listens, claims and their owners, routing to the owner, unknown keys, release and
/// broadcast.
/// Expiry is the implementation's own (Redis keeps time itself): not checked here.
pub async fn message_bus(a: &dyn MessageBus, b: &dyn MessageBus) {
    assert_ne!(a.instance(), b.instance(), "instances have distinct names");
    let (ca, cb) = (
        Arc::new(Collector::default()),
        Arc::new(Collector::default()),
    );
    a.subscribe(ca.clone()).await.expect("subscribe a");
    b.subscribe(cb.clone()).await.expect("subscribe b");
    // Both listen, as each other sees it.
    assert_eq!(b.listens(a.instance()).await, Ok(true), "a listens");
    assert_eq!(a.listens(b.instance()).await, Ok(true), "b listens");
    a.claim("s", "srv-1", T0, IDLE).await.expect("claim");
    a.claim("s", "srv-1", T0, IDLE)
        .await
        .expect("the owner may claim again");
    assert_eq!(
        b.claim("s", "srv-1", T0, IDLE).await,
        Err(StoreError::Exists),
        "another instance's claim is refused"
    );
    let message = BusMessage::Client(br#"{"jsonrpc":"2.0","id":"srv-1","result":{}}"#.to_vec());
    assert_eq!(
        b.route("s", "srv-1", message.clone(), T0 + 1).await,
        Ok(true)
    );
    let got = ca.next().await;
    assert_eq!(
        got,
        Routed {
            session: "s".into(),
            message: message.clone()
        }
    );
    assert_eq!(
        b.route("s", "srv-2", message.clone(), T0 + 1).await,
        Ok(false),
        "unknown key"
    );
    assert_eq!(
        b.route("t", "srv-1", message.clone(), T0 + 1).await,
        Ok(false),
        "other session"
    );
    b.release("s", "srv-1").await.expect("release");
    assert_eq!(
        b.route("s", "srv-1", message.clone(), T0 + 1).await,
        Ok(true),
        "only the owner releases its claim"
    );
    ca.next().await;
    a.release("s", "srv-1").await.expect("release");
    assert_eq!(
        b.route("s", "srv-1", message.clone(), T0 + 2).await,
        Ok(false),
        "released"
    );
    // A broadcast reaches every instance, the sender included.
    // Clients' messages and the instances' own store-level messages alike, intact.
    let cancel = BusMessage::Client(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#
            .to_vec(),
    );
    let relay = BusMessage::RelayTask {
        instance: b.instance().to_owned(),
        task: "task-1".into(),
        stream: 3,
    };
    let taken = BusMessage::NotificationsTaken {
        instance: a.instance().to_owned(),
    };
    for message in [cancel, relay, taken, BusMessage::SessionEnded] {
        b.broadcast("s", message.clone()).await.expect("broadcast");
        for c in [&ca, &cb] {
            let got = c.next().await;
            assert_eq!(
                got,
                Routed {
                    session: "s".into(),
                    message: message.clone()
                }
            );
        }
    }
    assert!(ca.is_empty() && cb.is_empty(), "each delivered once");
}
