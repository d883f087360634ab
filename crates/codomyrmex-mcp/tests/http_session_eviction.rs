//! A full legacy session table never locks new clients out (issue #16 item 4): the least
//! recently used idle session makes room, busy sessions (a call in flight, an open SSE
//! stream) are never evicted, and when every session is busy the refusal says when to retry.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use std::sync::atomic::Ordering;

use codomyrmex_mcp::transport::http::HttpConfig;
use http_support::*;
use serde_json::json;

fn capped(max: usize) -> HttpConfig {
    HttpConfig {
        max_sessions: max,
        ..config()
    }
}

async fn list(s: &TestServer, sid: &str) -> u16 {
    s.send(&legacy("tools/list", Some(7), json!({}), Some(sid)))
        .await
        .status
}

#[tokio::test]
async fn a_full_table_evicts_the_least_recently_used_idle_session() {
    let s = start(capped(2)).await;
    let a = s.legacy_session().await;
    let b = s.legacy_session().await;
    // `a` was used after `b`: `b` is the least recently used.
    assert_eq!(list(&s, &a).await, 200);
    // Abandoned sessions fill the table, yet a new client gets in.
    let c = s.legacy_session().await;
    assert_eq!(list(&s, &b).await, 404, "the evicted client re-initializes");
    assert_eq!(list(&s, &a).await, 200);
    assert_eq!(list(&s, &c).await, 200);
    // And again: many new clients, never a refusal.
    for _ in 0..5 {
        let _ = s.legacy_session().await;
    }
    assert_eq!(list(&s, &a).await, 404);
    s.stop().await;
}

#[tokio::test]
async fn a_session_with_an_open_get_stream_is_not_evicted() {
    let s = start(capped(2)).await;
    let a = s.legacy_session().await;
    let b = s.legacy_session().await;
    // `a` is the older, but its client listens on the standalone stream.
    let stream = s
        .open(
            &Req::new("GET", "/mcp")
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &a),
        )
        .await;
    assert_eq!(stream.status, 200);
    assert_eq!(list(&s, &b).await, 200);
    let _c = s.legacy_session().await;
    assert_eq!(list(&s, &b).await, 404, "the idle one went");
    assert_eq!(list(&s, &a).await, 200, "the listening one stayed");
    drop(stream);
    s.stop().await;
}

#[tokio::test]
async fn busy_sessions_are_never_evicted_and_the_refusal_says_when_to_retry() {
    let s = start(capped(2)).await;
    let mut calls = Vec::new();
    let mut sids = Vec::new();
    for i in 0..2 {
        let sid = s.legacy_session().await;
        // A JSON-answered call that runs until it is cancelled (or 30 s pass).
        let req = legacy(
            "tools/call",
            Some(10 + i),
            json!({"name": "wait_cancel", "arguments": {}}),
            Some(&sid),
        )
        .header("accept", "application/json");
        calls.push(s.spawn_send(req));
        sids.push(sid);
    }
    let probes = s.probes.clone();
    eventually("both calls run", || {
        probes.started.load(Ordering::SeqCst) == 2
    })
    .await;
    let r = s
        .send(&legacy("initialize", Some(1), initialize_body(), None))
        .await;
    assert_eq!(r.status, 503, "every session is busy");
    assert_eq!(r.error_code(), -32000);
    assert!(r.header("retry-after").is_some(), "{:?}", r.headers);
    // The refusal is counted by its reason (and logged, rate-limited).
    let metrics = s.send(&Req::new("GET", "/metrics")).await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(
        text.lines()
            .any(|l| l == "mcp_http_refusals_total{reason=\"sessions_busy\"} 1"),
        "{text}"
    );
    for sid in &sids {
        let n = s
            .send(&legacy(
                "notifications/cancelled",
                None,
                json!({"requestId": 10}),
                Some(sid),
            ))
            .await;
        assert_eq!(n.status, 202);
        let n = s
            .send(&legacy(
                "notifications/cancelled",
                None,
                json!({"requestId": 11}),
                Some(sid),
            ))
            .await;
        assert_eq!(n.status, 202);
    }
    for c in calls {
        let _ = c.await;
    }
    // Both sessions survived their busy time, and are idle now: one makes room.
    let _c = s.legacy_session().await;
    let alive = [list(&s, &sids[0]).await, list(&s, &sids[1]).await];
    assert!(alive.contains(&200) && alive.contains(&404), "{alive:?}");
    s.stop().await;
}
