//! `GET /metrics` through the real server (issue #16 item 7): the Prometheus text format,
//! requests by method and outcome (refusals of the policy layers included), the latency
//! histogram, calls in flight, sessions; and the same authentication rule as `/health`.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use codomyrmex_mcp::transport::http::{AuthConfig, HealthAccess, HttpConfig, StaticToken};
use http_support::*;
use serde_json::json;

async fn scrape(s: &TestServer, token: Option<&str>) -> (u16, String) {
    let mut req = Req::new("GET", "/metrics");
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let r = s.send(&req).await;
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

#[tokio::test]
async fn metrics_count_requests_by_method_and_outcome() {
    let s = start(config()).await;
    assert_eq!(
        s.send(&modern("tools/list", 1, json!({}))).await.status,
        200
    );
    let call = modern(
        "tools/call",
        2,
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    assert_eq!(s.send(&call).await.status, 200);
    let made_up = modern("no/such/method", 3, json!({}));
    assert_eq!(s.send(&made_up).await.status, 404);
    let _sid = s.legacy_session().await;
    // Refused by a policy layer (DNS-rebinding protection) before the endpoint.
    let foreign = modern("tools/list", 4, json!({})).header("host", "evil.example");
    assert_eq!(s.send(&foreign).await.status, 403);
    let (status, text) = scrape(&s, None).await;
    assert_eq!(status, 200, "{text}");
    let counted = |method: &str, outcome: &str| {
        value(
            &text,
            &format!("mcp_http_requests_total{{method=\"{method}\",outcome=\"{outcome}\"}}"),
        )
    };
    assert_eq!(counted("tools/list", "ok"), Some(1.0), "{text}");
    assert_eq!(counted("tools/call", "ok"), Some(1.0), "{text}");
    assert_eq!(counted("other", "client_error"), Some(1.0), "{text}");
    assert_eq!(counted("none", "unauthorized"), Some(1.0), "{text}");
    assert_eq!(counted("initialize", "ok"), Some(1.0), "{text}");
    assert_eq!(
        counted("notifications/initialized", "ok"),
        Some(1.0),
        "{text}"
    );
    // Six requests timed; the scrape itself is not counted.
    assert_eq!(
        value(&text, "mcp_http_request_duration_seconds_count"),
        Some(6.0),
        "{text}"
    );
    assert_eq!(value(&text, "mcp_http_sessions"), Some(1.0), "{text}");
    assert_eq!(
        value(&text, "mcp_http_calls_in_flight"),
        Some(0.0),
        "{text}"
    );
    assert_eq!(value(&text, "mcp_store_errors_total"), Some(0.0), "{text}");
    // Every refusal is counted by its reason (issue #26).
    assert_eq!(
        value(&text, "mcp_http_refusals_total{reason=\"host_origin\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        value(&text, "mcp_store_round_trips_total"),
        Some(0.0),
        "in memory, no round trips: {text}"
    );
    assert!(text.contains("# TYPE mcp_http_request_duration_seconds histogram"));
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    s.stop().await;
}

fn with_token(health: HealthAccess) -> HttpConfig {
    let mut auth = AuthConfig::default();
    auth.static_tokens.push(StaticToken::new("t", "secret"));
    HttpConfig {
        auth: Some(auth),
        health,
        ..config()
    }
}

#[tokio::test]
async fn metrics_follow_the_authentication_rule_of_health() {
    let s = start(with_token(HealthAccess::Authenticated)).await;
    assert_eq!(scrape(&s, None).await.0, 401);
    assert_eq!(s.send(&Req::new("GET", "/health")).await.status, 401);
    assert_eq!(scrape(&s, Some("secret")).await.0, 200);
    s.stop().await;

    let s = start(with_token(HealthAccess::Public)).await;
    assert_eq!(scrape(&s, None).await.0, 200);
    s.stop().await;

    let s = start(with_token(HealthAccess::Off)).await;
    assert_eq!(scrape(&s, Some("secret")).await.0, 404);
    s.stop().await;
}
