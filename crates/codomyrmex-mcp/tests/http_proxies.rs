//! Behind a reverse proxy (issue #16 item 6): the per-client limits key on the forwarded
//! client address only when the peer is a trusted proxy; from anyone else, `X-Forwarded-For`
//! and `Forwarded` are ignored.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use codomyrmex_mcp::RateLimit;
use codomyrmex_mcp::transport::http::{AuthConfig, HttpConfig, ProxyNet, StaticToken};
use http_support::*;
use serde_json::json;

/// Two requests per client, and (practically) no refill during a test.
fn two_per_client() -> Option<RateLimit> {
    Some(RateLimit {
        per_second: 0.001,
        burst: 2,
    })
}

fn limited(trusted: &[&str]) -> HttpConfig {
    HttpConfig {
        rate_limit: two_per_client(),
        ..config()
    }
    .with_trusted_proxies(trusted.iter().map(|t| t.parse::<ProxyNet>().unwrap()))
}

fn list_from(header: &str, value: &str) -> Req {
    modern("tools/list", 1, json!({})).header(header, value)
}

async fn statuses(s: &TestServer, reqs: &[Req]) -> Vec<u16> {
    let mut out = Vec::new();
    for r in reqs {
        out.push(s.send(r).await.status);
    }
    out
}

#[tokio::test]
async fn a_spoofed_forwarded_address_from_an_untrusted_peer_is_ignored() {
    // The test client (127.0.0.1) is no trusted proxy: the headers change nothing.
    let s = start(limited(&["10.0.0.0/8"])).await;
    let reqs = [
        list_from("x-forwarded-for", "1.1.1.1"),
        list_from("x-forwarded-for", "2.2.2.2"),
        list_from("forwarded", "for=3.3.3.3"),
    ];
    assert_eq!(statuses(&s, &reqs).await, [200, 200, 429]);
    s.stop().await;
}

#[tokio::test]
async fn a_trusted_proxy_separates_its_clients() {
    let s = start(limited(&["127.0.0.1"])).await;
    // Three clients behind the proxy, each within its own budget.
    let reqs = [
        list_from("x-forwarded-for", "1.1.1.1"),
        list_from("x-forwarded-for", "2.2.2.2"),
        list_from("forwarded", "for=\"[2001:db8::1]:443\""),
        list_from("x-forwarded-for", "1.1.1.1"),
    ];
    assert_eq!(statuses(&s, &reqs).await, [200, 200, 200, 200]);
    // The third request of one client is over its budget; another client is not.
    let reqs = [
        list_from("x-forwarded-for", "1.1.1.1"),
        // What the client wrote on the left is not who it is: the proxy appended 1.1.1.1.
        list_from("x-forwarded-for", "9.9.9.9, 1.1.1.1"),
        list_from("x-forwarded-for", "2.2.2.2"),
    ];
    assert_eq!(statuses(&s, &reqs).await, [429, 429, 200]);
    s.stop().await;
}

#[tokio::test]
async fn refused_authentications_are_budgeted_per_forwarded_client() {
    let mut auth = AuthConfig::default();
    auth.static_tokens.push(StaticToken::new("t", "secret"));
    let s = start(HttpConfig {
        auth: Some(auth),
        auth_failure_rate_limit: two_per_client(),
        ..limited(&["127.0.0.0/8"])
    })
    .await;
    let bad =
        |client: &str| list_from("x-forwarded-for", client).header("authorization", "Bearer x");
    let reqs = [
        bad("1.1.1.1"),
        bad("1.1.1.1"),
        bad("1.1.1.1"),
        bad("2.2.2.2"),
    ];
    assert_eq!(statuses(&s, &reqs).await, [401, 401, 429, 401]);
    s.stop().await;
}

#[tokio::test]
async fn without_rate_limits_turns_off_every_per_client_limit() {
    let mut auth = AuthConfig::default();
    auth.static_tokens.push(StaticToken::new("t", "secret"));
    let s = start(
        HttpConfig {
            auth: Some(auth),
            rate_limit: two_per_client(),
            auth_failure_rate_limit: two_per_client(),
            ..config()
        }
        .without_rate_limits(),
    )
    .await;
    let good = modern("tools/list", 1, json!({})).header("authorization", "Bearer secret");
    let bad = modern("tools/list", 1, json!({})).header("authorization", "Bearer x");
    let reqs = [
        good.clone(),
        good.clone(),
        good,
        bad.clone(),
        bad.clone(),
        bad,
    ];
    assert_eq!(statuses(&s, &reqs).await, [200, 200, 200, 401, 401, 401]);
    s.stop().await;
}
