//! What a reader of a stream in the Redis event store does about the stream's writer
//! (`EventStore::open_stream_by`), at the store's level: a waiting reader looks whether the
//! writer listens on the bus at each step; a live writer's stream waits on, however long;
//! a gone writer's stream ends with its epitaph, or only closes when its last event already
//! answered the request.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod redis_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use codomyrmex_mcp::store::{
    EventId, EventStore as _, MessageBus as _, ReplayScope, StreamWriter, contract,
};
use codomyrmex_mcp_redis::{EventBounds, RedisBus, RedisEventStore};
use redis_support::*;

const STEP: Duration = Duration::from_millis(100);
const HANG: Duration = Duration::from_secs(20);
const EPITAPH: &[u8] = br#"{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"gone"}}"#;

const SCOPE: ReplayScope<'static> = ReplayScope {
    session: "s",
    principal: None,
};

async fn reader(redis: &Redis) -> (RedisEventStore, codomyrmex_mcp_redis::RedisConnection) {
    let conn = connect(redis, "w").await;
    (
        RedisEventStore::new(conn.clone(), EventBounds::default()).with_wait_step(STEP),
        conn,
    )
}

/// A live writer (subscribed on the bus): the reader looks again and again (its round trips
/// grow) and its wait does not end; the writer's next event ends it.
#[tokio::test]
async fn a_live_writers_stream_waits_on_through_many_looks() {
    let redis = start_redis();
    let writer_conn = connect(&redis, "w").await;
    let bus = RedisBus::join(writer_conn.clone()).await.unwrap();
    bus.subscribe(Arc::new(contract::Collector::default()))
        .await
        .unwrap();
    let writer = RedisEventStore::new(writer_conn, EventBounds::default());
    let stream = writer
        .open_stream_by(SCOPE, StreamWriter::new(bus.instance(), EPITAPH))
        .await
        .unwrap();
    let (events, conn) = reader(&redis).await;
    let start = EventId { stream, seq: 0 };
    let before = conn.round_trips();
    let wait = events.wait_after(start, SCOPE);
    tokio::pin!(wait);
    // Ten looks or more (a look is one round trip), the wait still pending.
    let deadline = Instant::now() + HANG;
    while conn.round_trips() < before + 13 {
        assert!(Instant::now() < deadline, "the reader stopped looking");
        tokio::select! {
            done = &mut wait => panic!("the wait on a live writer's stream ended: {done:?}"),
            () = tokio::time::sleep(STEP / 2) => {}
        }
    }
    writer.append(SCOPE, stream, b"{}".to_vec()).await.unwrap();
    tokio::time::timeout(HANG, &mut wait)
        .await
        .expect("the event ends the wait")
        .unwrap();
    let r = events.replay_after(start, SCOPE).await.unwrap();
    assert_eq!(r.events.len(), 1);
    assert!(!r.closed, "{r:?}");
}

/// A writer that never listens (it died): the reader's wait ends after two looks, and the
/// stream holds the epitaph as its last event and is closed.
#[tokio::test]
async fn a_gone_writers_stream_ends_with_its_epitaph() {
    let redis = start_redis();
    let (events, _) = reader(&redis).await;
    let stream = events
        .open_stream_by(SCOPE, StreamWriter::new("i999", EPITAPH))
        .await
        .unwrap();
    events
        .append(
            SCOPE,
            stream,
            br#"{"jsonrpc":"2.0","method":"notifications/progress"}"#.to_vec(),
        )
        .await
        .unwrap();
    let after = EventId { stream, seq: 1 };
    tokio::time::timeout(HANG, events.wait_after(after, SCOPE))
        .await
        .expect("the wait ends")
        .unwrap();
    let r = events.replay_after(after, SCOPE).await.unwrap();
    assert!(r.closed, "{r:?}");
    let data: Vec<&[u8]> = r.events.iter().map(|e| e.data.as_slice()).collect();
    assert_eq!(data, [EPITAPH]);
}

/// A writer that answered (its last event is the response) and died before it closed the
/// stream: the stream is closed, with no error after the answer.
#[tokio::test]
async fn a_gone_writer_that_answered_only_closes_its_stream() {
    let redis = start_redis();
    let (events, _) = reader(&redis).await;
    let stream = events
        .open_stream_by(SCOPE, StreamWriter::new("i999", EPITAPH))
        .await
        .unwrap();
    let answer = br#"{"jsonrpc":"2.0","id":7,"result":{"content":[]}}"#;
    events.append(SCOPE, stream, answer.to_vec()).await.unwrap();
    let after = EventId { stream, seq: 1 };
    tokio::time::timeout(HANG, events.wait_after(after, SCOPE))
        .await
        .expect("the wait ends")
        .unwrap();
    let r = events.replay_after(after, SCOPE).await.unwrap();
    assert!(r.closed, "{r:?}");
    assert!(r.events.is_empty(), "nothing after the answer: {r:?}");
}
