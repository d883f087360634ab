//! The store contracts (`codomyrmex_mcp::store::contract`) against a real Redis: each test
//! starts its own `redis-server` on a free loopback port (no persistence) and stops it.
//! Also: what the stores do while Redis is away, and that they recover when it returns.

// Test helpers fail by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use codomyrmex_mcp::store::{
    BusMessage, EventStore as _, MessageBus as _, ReplayScope, SessionRecord, SessionStore as _,
    StoreError, contract,
};
use codomyrmex_mcp_redis::{EventBounds, RedisBus, RedisEventStore, RedisSessionStore};

mod redis_support;

use redis_support::*;

#[tokio::test]
async fn the_redis_session_store_keeps_the_contract() {
    let redis = start_redis();
    let store = RedisSessionStore::new(connect(&redis, "t1").await);
    contract::session_store(&store).await;
}

#[tokio::test]
async fn the_redis_event_store_keeps_the_contract() {
    let redis = start_redis();
    let store = RedisEventStore::new(
        connect(&redis, "t2").await,
        EventBounds::new(4, 100, 300, 400, 600),
    );
    contract::event_store(&store).await;
}

#[tokio::test]
async fn the_redis_bus_keeps_the_contract() {
    let redis = start_redis();
    let a = RedisBus::join(connect(&redis, "t4").await).await.unwrap();
    let b = RedisBus::join(connect(&redis, "t4").await).await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), contract::message_bus(&a, &b))
        .await
        .expect("every routed message arrives");
}

/// The harness's own guard (`redis_support`): a server started on a port that another
/// test's server holds is not taken for this one's.
#[test]
fn a_port_another_server_holds_is_not_taken_for_a_fresh_one() {
    let first = start_redis();
    let port = first.port;
    let second = std::panic::catch_unwind(|| start_redis_on(port));
    assert!(
        second.is_err(),
        "another test's server was taken for a fresh one"
    );
}

#[tokio::test]
async fn a_claim_expires() {
    let redis = start_redis();
    let a = RedisBus::join(connect(&redis, "t5").await).await.unwrap();
    let b = RedisBus::join(connect(&redis, "t5").await).await.unwrap();
    a.subscribe(std::sync::Arc::new(contract::Collector::default()))
        .await
        .unwrap();
    a.claim("s", "k", 0, 50).await.unwrap();
    assert_eq!(
        b.route("s", "k", BusMessage::Client(b"{}".to_vec()), 0)
            .await,
        Ok(true)
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let routed = b
            .route("s", "k", BusMessage::Client(b"{}".to_vec()), 0)
            .await;
        if routed == Ok(false) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the claim never expired: the last route gave {routed:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    b.claim("s", "k", 0, 60_000)
        .await
        .expect("an expired claim can be taken");
}

#[tokio::test]
async fn two_instances_see_one_session_table() {
    let redis = start_redis();
    let a = RedisSessionStore::new(connect(&redis, "shared").await);
    let b = RedisSessionStore::new(connect(&redis, "shared").await);
    let none = |_: &str| false;
    let record = SessionRecord::new("s", "2025-11-25", 1_000, 60_000);
    a.create(record, 10, 1_000, &none).await.unwrap();
    let seen = b
        .touch("s", 2_000)
        .await
        .unwrap()
        .expect("b sees a's session");
    assert_eq!(seen, 62_000);
    assert_eq!(b.delete("s").await, Ok(true));
    assert_eq!(a.load("s", 3_000).await, Ok(None), "deleted everywhere");
    // Another prefix is another service.
    let other = RedisSessionStore::new(connect(&redis, "other").await);
    assert_eq!(other.count().await, Ok(0));
}

#[tokio::test]
async fn instances_agree_on_a_shared_secret() {
    let redis = start_redis();
    let a = connect(&redis, "sec").await;
    let b = connect(&redis, "sec").await;
    let first = a.shared_secret("request-state", [1; 32]).await.unwrap();
    assert_eq!(first, [1; 32], "the first instance's bytes are stored");
    let second = b.shared_secret("request-state", [2; 32]).await.unwrap();
    assert_eq!(second, [1; 32], "a later instance gets the same secret");
    let other = connect(&redis, "other").await;
    assert_eq!(
        other.shared_secret("request-state", [3; 32]).await.unwrap(),
        [3; 32],
        "another prefix is another service"
    );
}

#[tokio::test]
async fn redis_going_away_is_unavailable_and_coming_back_recovers() {
    let port = free_port();
    let redis = start_redis_on(port);
    let conn = connect(&redis, "t3").await;
    let sessions = RedisSessionStore::new(conn.clone());
    let events = RedisEventStore::new(conn, EventBounds::default());
    let none = |_: &str| false;
    sessions
        .create(
            SessionRecord::new("s", "2025-11-25", 1, 60_000),
            10,
            1,
            &none,
        )
        .await
        .unwrap();
    drop(redis);
    let down = tokio::time::timeout(Duration::from_secs(30), sessions.load("s", 2))
        .await
        .expect("a store call with Redis down returns, it does not hang");
    assert!(matches!(down, Err(StoreError::Unavailable(_))), "{down:?}");
    let scope = ReplayScope {
        session: "s",
        principal: None,
    };
    let down = tokio::time::timeout(Duration::from_secs(30), events.open_stream(scope))
        .await
        .expect("no hang");
    assert!(matches!(down, Err(StoreError::Unavailable(_))), "{down:?}");
    // Redis comes back (empty: no persistence); the connection manager reconnects.
    let _redis = start_redis_on(port);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match sessions.count().await {
            Ok(0) => break,
            Ok(n) => panic!("a fresh Redis holds {n} sessions"),
            Err(e) => {
                assert!(Instant::now() < deadline, "no reconnection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
    assert!(events.open_stream(scope).await.unwrap() >= 1);
}

/// The round trips `docs/deployment.md` quotes per session operation, counted by the
/// connection itself (`RedisConnection::round_trips`, `mcp_store_round_trips_total`).
#[tokio::test]
async fn each_session_operation_costs_the_round_trips_the_docs_say() {
    let redis = start_redis();
    let conn = connect(&redis, "trips").await;
    let store = RedisSessionStore::new(conn.clone());
    let keep_none = |_: &str| false;
    // The first call of each script loads it (EVALSHA, NOSCRIPT, EVAL): warm them up.
    let warm = SessionRecord::new("warm", "2025-11-25", 1_000, 60_000);
    store
        .create(warm.clone(), 10, 1_000, &keep_none)
        .await
        .unwrap();
    store.touch("warm", 1_001).await.unwrap();
    let loaded = store.load("warm", 1_002).await.unwrap().unwrap();
    store.save(loaded.clone(), loaded.version).await.unwrap();
    let before = conn.round_trips();
    assert!(store.delete("warm").await.unwrap());
    assert_eq!(
        conn.round_trips() - before,
        3,
        "a script Redis does not know yet: EVALSHA, SCRIPT LOAD, EVALSHA"
    );

    let trips = |f: u64| conn.round_trips() - f;
    let before = conn.round_trips();
    let created = SessionRecord::new("s1", "2025-11-25", 2_000, 60_000);
    store.create(created, 10, 2_000, &keep_none).await.unwrap();
    assert_eq!(trips(before), 1, "initialize: one round trip");

    let before = conn.round_trips();
    assert!(store.touch("s1", 2_001).await.unwrap().is_some());
    assert_eq!(
        trips(before),
        1,
        "a request on a held session: one (the touch)"
    );

    let before = conn.round_trips();
    let record = store.load("s1", 2_002).await.unwrap().unwrap();
    assert_eq!(trips(before), 1, "a load: one");

    let before = conn.round_trips();
    store.save(record.clone(), record.version).await.unwrap();
    assert_eq!(trips(before), 1, "a compare-and-set: one");

    let before = conn.round_trips();
    assert!(store.delete("s1").await.unwrap());
    assert_eq!(trips(before), 1, "DELETE: one");
    assert_eq!(store.round_trips(), Some(conn.round_trips()));
}

#[tokio::test]
async fn the_redis_task_store_keeps_the_contract() {
    let redis = start_redis();
    let store = codomyrmex_mcp_redis::RedisTaskStore::new(connect(&redis, "t-tasks").await);
    codomyrmex_mcp::task_store::contract::task_store(&store).await;
}

/// Two instances' views of one task: what one writes (and a cancel, a lapsed lease) the
/// other reads, through separate connections.
#[tokio::test]
async fn task_records_are_shared_between_connections() {
    use codomyrmex_mcp::task_store::{OWNER_STOPPED, TaskEra, TaskRecord, TaskStatus, TaskStore};
    let redis = start_redis();
    let a = codomyrmex_mcp_redis::RedisTaskStore::new(connect(&redis, "t-share").await);
    let b = codomyrmex_mcp_redis::RedisTaskStore::new(connect(&redis, "t-share").await);
    let r = TaskRecord::new("x", "a", TaskEra::Modern, 1_000, 60_000, 500, 5_000);
    assert!(a.put(r).await.unwrap());
    assert_eq!(
        b.get("x", 2_000).await.unwrap().unwrap().status,
        TaskStatus::Working
    );
    let failed = b.get("x", 5_000).await.unwrap().unwrap();
    assert_eq!(failed.status_message.as_deref(), Some(OWNER_STOPPED));
    assert_eq!(
        a.renew(&["x".into()], 9_000).await.unwrap().stop,
        vec!["x".to_owned()]
    );
}

#[tokio::test]
async fn the_redis_change_bus_keeps_the_contract() {
    let redis = start_redis();
    let a = codomyrmex_mcp_redis::RedisChangeBus::new(connect(&redis, "t-bus").await);
    let b = codomyrmex_mcp_redis::RedisChangeBus::new(connect(&redis, "t-bus").await);
    codomyrmex_mcp::change_bus::contract::change_bus(&a, &b).await;
}

/// Everything of one process that listens (the message bus, the change bus, SSE readers
/// waiting on a stream) shares one pub/sub connection to Redis, however many listen.
#[tokio::test]
async fn one_connection_listens_for_the_bus_the_changes_and_the_streams() {
    use codomyrmex_mcp::change_bus::ChangeBus as _;
    let redis = start_redis();
    let conn = connect(&redis, "t9").await;
    let bus = RedisBus::join(conn.clone()).await.unwrap();
    bus.subscribe(std::sync::Arc::new(contract::Collector::default()))
        .await
        .unwrap();
    let changes = codomyrmex_mcp_redis::RedisChangeBus::new(conn.clone());
    let _feed_one = changes.subscribe().await.unwrap();
    let _feed_two = changes.subscribe().await.unwrap();
    let events = RedisEventStore::new(conn.clone(), EventBounds::default());
    let scope = ReplayScope {
        session: "s",
        principal: None,
    };
    let stream = events.open_stream(scope).await.unwrap();
    let after = codomyrmex_mcp::store::EventId { stream, seq: 0 };
    let waiting = tokio::spawn(async move { events.wait_after(after, scope_static()).await });
    // Wait until the reader is subscribed, then count the pub/sub connections.
    let mut admin = redis::Client::open(format!("redis://127.0.0.1:{}/", redis.port))
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let channels: Vec<String> = redis::cmd("PUBSUB")
            .arg("CHANNELS")
            .query_async(&mut admin)
            .await
            .unwrap();
        if channels.iter().any(|c| c.contains(":ev:")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the reader never subscribed: {channels:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let clients: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut admin)
        .await
        .unwrap();
    assert_eq!(clients.lines().count(), 1, "{clients}");
    waiting.abort();
}

fn scope_static() -> ReplayScope<'static> {
    ReplayScope {
        session: "s",
        principal: None,
    }
}

/// A message routed to a claim whose owner no longer listens (it died) is not lost
/// silently: the sender is told the owner is gone.
#[tokio::test]
async fn routing_to_a_claim_whose_owner_is_gone_says_so() {
    let redis = start_redis();
    let dead = RedisBus::join(connect(&redis, "t10").await).await.unwrap();
    let live = RedisBus::join(connect(&redis, "t10").await).await.unwrap();
    live.subscribe(std::sync::Arc::new(contract::Collector::default()))
        .await
        .unwrap();
    // `dead` claimed a request, then stopped listening (it never subscribed).
    dead.claim("s", "srv-1", 0, 60_000).await.unwrap();
    assert_eq!(
        live.route("s", "srv-1", BusMessage::Client(b"{}".to_vec()), 0)
            .await,
        Err(StoreError::OwnerGone)
    );
    assert_eq!(
        live.route("s", "srv-2", BusMessage::Client(b"{}".to_vec()), 0)
            .await,
        Ok(false),
        "no claim: still this instance's to handle"
    );
}
