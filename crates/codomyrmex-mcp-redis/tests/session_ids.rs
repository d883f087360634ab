//! Session ids from clients against the Redis session store: an id that is not of the form
//! the server mints, such as the names of the store's own keys (`P:s:lru`, `P:s:exp`,
//! `P:s:tick`), never reaches Redis. It gets `404`, as an unknown session does, never a
//! `503` with `Retry-After` (which would have its client retry forever), and no store error
//! is counted.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../codomyrmex-mcp/tests/http_support/mod.rs"]
mod http_support;
mod redis_support;

use std::sync::Arc;

use codomyrmex_mcp_redis::RedisSessionStore;
use http_support::*;
use redis_support::*;
use serde_json::json;

/// A number from the Prometheus text of `server`'s `/metrics`.
async fn metric(server: &TestServer, name: &str) -> f64 {
    let r = server.send(&Req::new("GET", "/metrics")).await;
    let text = String::from_utf8_lossy(&r.body).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

#[tokio::test]
async fn ids_naming_the_stores_own_keys_get_404_not_503() {
    let redis = start_redis();
    let conn = connect(&redis, "ids").await;
    let server = start(config().with_session_store(Arc::new(RedisSessionStore::new(conn)))).await;
    // A real session, so that the index keys exist.
    let sid = server.legacy_session().await;
    let list =
        legacy("tools/list", Some(2), json!({}), Some(&sid)).header("accept", "application/json");
    assert_eq!(server.send(&list).await.status, 200);
    let errors = metric(&server, "mcp_store_errors_total").await;
    let long = "0".repeat(2048);
    for bad in ["lru", "exp", "tick", long.as_str(), "a b", "a\tb", "a\x7fb"] {
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
            let r = server.send(req).await;
            assert!(
                matches!(r.status, 404 | 400),
                "{bad:?} {}: {} {}",
                req.method,
                r.status,
                String::from_utf8_lossy(&r.body)
            );
            assert!(r.header("retry-after").is_none(), "{bad:?}");
        }
    }
    assert_eq!(metric(&server, "mcp_store_errors_total").await, errors);
    // The real session is untouched.
    assert_eq!(server.send(&list).await.status, 200);
    server.stop().await;
}
