//! The HTTP transport keeps its legacy session records in the `SessionStore` its config
//! names (issue #14 item 5): every create, touch and delete goes through it, and a store that
//! fails gets `503` with `Retry-After`, never a `404` that would make a client drop a
//! session that may still exist.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use codomyrmex_mcp::store::{
    Created, Keep, MemorySessionStore, SessionRecord, SessionStore, StoreError, StoreFuture,
};
use codomyrmex_mcp::transport::http::HttpConfig;
use http_support::*;
use serde_json::json;

/// The in-memory store, with a switch that makes it unreachable and a count of its calls.
#[derive(Debug, Default)]
struct Flaky {
    inner: MemorySessionStore,
    down: AtomicBool,
    calls: AtomicUsize,
    /// Calls refused while down.
    failures: AtomicUsize,
    /// Calls naming a session id (`load`, `touch`, `save`, `delete`).
    lookups: AtomicUsize,
}

impl Flaky {
    fn check(&self) -> Result<(), StoreError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if self.down.load(Ordering::SeqCst) {
            self.failures.fetch_add(1, Ordering::SeqCst);
            Err(StoreError::Unavailable("switched off by the test".into()))
        } else {
            Ok(())
        }
    }
}

fn failed<'a, T: Send + 'a>(e: StoreError) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(Err(e)))
}

impl SessionStore for Flaky {
    fn create<'a>(
        &'a self,
        record: SessionRecord,
        max: usize,
        now: u64,
        keep: Keep<'a>,
    ) -> StoreFuture<'a, Created> {
        match self.check() {
            Ok(()) => self.inner.create(record, max, now, keep),
            Err(e) => failed(e),
        }
    }
    fn load<'a>(&'a self, id: &'a str, now: u64) -> StoreFuture<'a, Option<SessionRecord>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        match self.check() {
            Ok(()) => self.inner.load(id, now),
            Err(e) => failed(e),
        }
    }
    fn touch<'a>(&'a self, id: &'a str, now: u64) -> StoreFuture<'a, Option<u64>> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        match self.check() {
            Ok(()) => self.inner.touch(id, now),
            Err(e) => failed(e),
        }
    }
    fn save<'a>(&'a self, record: SessionRecord, v: u64) -> StoreFuture<'a, SessionRecord> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        match self.check() {
            Ok(()) => self.inner.save(record, v),
            Err(e) => failed(e),
        }
    }
    fn delete<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        match self.check() {
            Ok(()) => self.inner.delete(id),
            Err(e) => failed(e),
        }
    }
    fn expire<'a>(&'a self, now: u64, keep: Keep<'a>) -> StoreFuture<'a, Vec<String>> {
        match self.check() {
            Ok(()) => self.inner.expire(now, keep),
            Err(e) => failed(e),
        }
    }
    fn count(&self) -> StoreFuture<'_, usize> {
        self.inner.count()
    }
    /// Every call counts as one round trip, as a remote store's would.
    fn round_trips(&self) -> Option<u64> {
        Some(self.calls.load(Ordering::SeqCst) as u64)
    }
}

#[tokio::test]
async fn sessions_live_in_the_configured_store_and_its_faults_are_503() {
    let store = Arc::new(Flaky::default());
    let s = start(config().with_session_store(store.clone())).await;
    let sid = s.legacy_session().await;
    // The record is the store's, with what the handshake negotiated.
    let record = store.inner.load(&sid, u64::MAX / 2).await.unwrap();
    assert!(record.is_none(), "expired long after its idle timeout");
    let record = store.inner.load(&sid, 0).await.unwrap().expect("stored");
    assert_eq!(record.protocol_version, LEGACY);
    assert_eq!(record.client_info.unwrap()["name"], "http-tests");
    let before = store.calls.load(Ordering::SeqCst);
    let list = legacy("tools/list", Some(2), json!({}), Some(&sid));
    assert_eq!(s.send(&list).await.status, 200);
    assert!(store.calls.load(Ordering::SeqCst) > before, "touched");

    store.down.store(true, Ordering::SeqCst);
    for r in [
        s.send(&list).await,
        s.send(&Req::new("DELETE", "/mcp").header("mcp-session-id", &sid))
            .await,
        s.send(&legacy("initialize", Some(1), initialize_body(), None))
            .await,
    ] {
        assert_eq!(r.status, 503, "{:?}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.error_code(), -32000);
        assert!(r.header("retry-after").is_some());
    }
    // The store is back: the session was never lost.
    store.down.store(false, Ordering::SeqCst);
    let metrics = s.send(&Req::new("GET", "/metrics")).await;
    let text = String::from_utf8_lossy(&metrics.body);
    // The three requests' failures, and the periodic expiry's if its tick fell in the window:
    // every refused store call is counted, exactly.
    let failures = store.failures.load(Ordering::SeqCst);
    assert!(failures >= 3, "{failures}");
    assert!(
        text.lines()
            .any(|l| l == format!("mcp_store_errors_total {failures}")),
        "the {failures} failures are counted: {text}"
    );
    assert_eq!(s.send(&list).await.status, 200);
    let r = s
        .send(&Req::new("DELETE", "/mcp").header("mcp-session-id", &sid))
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(store.inner.load(&sid, 0).await.unwrap(), None);
    assert_eq!(s.send(&list).await.status, 404);
    s.stop().await;
}

/// `/metrics` shows the store's own count of round trips, and it only goes up.
#[tokio::test]
async fn metrics_show_the_stores_round_trips() {
    let store = Arc::new(Flaky::default());
    let s = start(config().with_session_store(store.clone())).await;
    let trips = |text: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix("mcp_store_round_trips_total "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no mcp_store_round_trips_total in {text}"))
    };
    let sid = s.legacy_session().await;
    let list = legacy("tools/list", Some(2), json!({}), Some(&sid));
    let mut last = 0;
    for _ in 0..3 {
        assert_eq!(s.send(&list).await.status, 200);
        let before = store.calls.load(Ordering::SeqCst) as u64;
        let text =
            String::from_utf8_lossy(&s.send(&Req::new("GET", "/metrics")).await.body).into_owned();
        let after = store.calls.load(Ordering::SeqCst) as u64;
        let seen = trips(&text);
        assert!(
            before <= seen && seen <= after,
            "{before} <= {seen} <= {after}"
        );
        assert!(
            seen > last,
            "each request adds to the count: {last} then {seen}"
        );
        last = seen;
    }
    s.stop().await;
}

#[tokio::test]
async fn the_store_holds_the_cap() {
    let store = Arc::new(Flaky::default());
    let s = start(HttpConfig {
        max_sessions: 1,
        ..config().with_session_store(store.clone())
    })
    .await;
    let a = s.legacy_session().await;
    let b = s.legacy_session().await;
    assert_eq!(store.inner.count().await.unwrap(), 1);
    assert!(store.inner.load(&a, 0).await.unwrap().is_none());
    assert!(store.inner.load(&b, 0).await.unwrap().is_some());
    s.stop().await;
}

#[tokio::test]
async fn a_log_level_set_later_reaches_the_record() {
    let store = Arc::new(Flaky::default());
    let s = start(config().with_session_store(store.clone())).await;
    let sid = s.legacy_session().await;
    assert_eq!(
        store.inner.load(&sid, 0).await.unwrap().unwrap().log_level,
        None
    );
    let r = s
        .send(
            &legacy(
                "logging/setLevel",
                Some(3),
                json!({"level": "debug"}),
                Some(&sid),
            )
            .header("accept", "application/json"),
        )
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let record = store.inner.load(&sid, 0).await.unwrap().unwrap();
    assert_eq!(record.log_level.as_deref(), Some("debug"));
    s.stop().await;
}

/// Two servers sharing one store act as one service for 2025-11-25 sessions: a session opened
/// on one is used on the other (rebuilt from its record, with the client's log level), and
/// `DELETE` on either ends it on both.
#[tokio::test]
async fn instances_sharing_a_store_serve_each_others_sessions() {
    let store = Arc::new(Flaky::default());
    let a = start(config().with_session_store(store.clone())).await;
    let b = start(config().with_session_store(store.clone())).await;
    let sid = a.legacy_session().await;
    let r = a
        .send(
            &legacy(
                "logging/setLevel",
                Some(2),
                json!({"level": "warning"}),
                Some(&sid),
            )
            .header("accept", "application/json"),
        )
        .await;
    assert_eq!(r.status, 200);
    // The other instance never saw `initialize`, yet serves the session.
    let list =
        legacy("tools/list", Some(3), json!({}), Some(&sid)).header("accept", "application/json");
    let r = b.send(&list).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.json()["result"]["tools"].is_array(), "{:?}", r.json());
    // An unknown id is still 404 everywhere.
    let unknown = legacy("tools/list", Some(4), json!({}), Some("no-such-session"))
        .header("accept", "application/json");
    assert_eq!(b.send(&unknown).await.status, 404);
    // DELETE on B ends the session opened on A, on both.
    let r = b
        .send(&Req::new("DELETE", "/mcp").header("mcp-session-id", &sid))
        .await;
    assert_eq!(r.status, 204);
    assert_eq!(a.send(&list).await.status, 404);
    assert_eq!(b.send(&list).await.status, 404);
    a.stop().await;
    b.stop().await;
}

/// A session opened by one principal is not restored for another on a second instance.
#[tokio::test]
async fn a_restored_session_keeps_its_principal() {
    use codomyrmex_mcp::transport::http::{AuthConfig, StaticToken};
    let store = Arc::new(Flaky::default());
    let auth = || {
        let mut auth = AuthConfig::default();
        auth.static_tokens.push(StaticToken::new("alice", "tok-a"));
        auth.static_tokens.push(StaticToken::new("bob", "tok-b"));
        auth
    };
    let a = start(HttpConfig {
        auth: Some(auth()),
        ..config().with_session_store(store.clone())
    })
    .await;
    let b = start(HttpConfig {
        auth: Some(auth()),
        ..config().with_session_store(store.clone())
    })
    .await;
    let init = legacy("initialize", Some(1), initialize_body(), None)
        .header("authorization", "Bearer tok-a")
        .header("accept", "application/json");
    let r = a.send(&init).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    let list = |token: &str| {
        legacy("tools/list", Some(2), json!({}), Some(&sid))
            .header("authorization", format!("Bearer {token}"))
            .header("accept", "application/json")
    };
    assert_eq!(b.send(&list("tok-b")).await.status, 404, "bob");
    let r = b
        .send(
            &Req::new("DELETE", "/mcp")
                .header("mcp-session-id", &sid)
                .header("authorization", "Bearer tok-b"),
        )
        .await;
    assert_eq!(r.status, 404, "bob cannot end alice's session");
    assert_eq!(b.send(&list("tok-a")).await.status, 200, "alice");
    a.stop().await;
    b.stop().await;
}

/// With a store, the process keeps only `max_live_sessions` live: idle sessions past it drop
/// their live state and are rebuilt from their records when used again.
#[tokio::test]
async fn live_sessions_are_a_bounded_cache_over_the_store() {
    let store = Arc::new(Flaky::default());
    let s = start(HttpConfig {
        max_live_sessions: 4,
        ..config().with_session_store(store.clone())
    })
    .await;
    let mut ids = Vec::new();
    for _ in 0..12 {
        ids.push(s.legacy_session().await);
    }
    assert_eq!(
        store.inner.count().await.unwrap(),
        12,
        "every record is kept"
    );
    let metrics = s.send(&Req::new("GET", "/metrics")).await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.lines().any(|l| l == "mcp_http_sessions 4"),
        "four live sessions: {text}"
    );
    // The oldest, no longer live here, still works: rebuilt from its record.
    for id in &ids {
        let list =
            legacy("tools/list", Some(9), json!({}), Some(id)).header("accept", "application/json");
        let r = s.send(&list).await;
        assert_eq!(r.status, 200, "{id}: {}", String::from_utf8_lossy(&r.body));
    }
    s.stop().await;
}

/// Ids not of the form the server mints (32 lowercase hex digits) never reach the store:
/// the names of the Redis store's own keys (`lru`, `exp`, `tick`), an overlong id, spaces,
/// a tab and a byte the parser refuses get `404` (or `400`) on POST, GET and DELETE, even
/// with the store down, never `503`, and the store is not called.
#[tokio::test]
async fn a_malformed_session_id_never_reaches_the_store() {
    let store = Arc::new(Flaky::default());
    let s = start(config().with_session_store(store.clone())).await;
    let sid = s.legacy_session().await;
    assert_eq!(sid.len(), 32, "{sid}");
    store.down.store(true, Ordering::SeqCst);
    let lookups = store.lookups.load(Ordering::SeqCst);
    let long = "a".repeat(2048);
    let upper = sid.to_ascii_uppercase();
    for bad in [
        "lru",
        "exp",
        "tick",
        long.as_str(),
        "a b",
        "a\tb",
        "a\x7fb",
        upper.as_str(),
        &sid[1..],
    ] {
        let requests = [
            legacy("tools/list", Some(3), json!({}), Some(bad))
                .header("accept", "application/json"),
            Req::new("GET", "/mcp")
                .header("accept", "text/event-stream")
                .header("mcp-session-id", bad)
                .header("mcp-protocol-version", LEGACY),
            Req::new("DELETE", "/mcp").header("mcp-session-id", bad),
        ];
        for req in &requests {
            let r = s.send(req).await;
            assert!(
                matches!(r.status, 404 | 400),
                "{bad:?} {}: {} {}",
                req.method,
                r.status,
                String::from_utf8_lossy(&r.body)
            );
        }
    }
    assert_eq!(
        store.lookups.load(Ordering::SeqCst),
        lookups,
        "the store was asked"
    );
    s.stop().await;
}
