//! Streamable HTTP over real sockets: both protocol eras on one endpoint.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use codomyrmex_mcp::ToolOutput;
use codomyrmex_mcp::transport::http::{HealthAccess, HttpConfig};
use codomyrmex_mcp::{ContentBlock, McpErrorDetail};
use http_support::*;
use serde_json::{Map, Value, json};

fn tool_names(result: &Value) -> Vec<String> {
    result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn modern_tools_list_is_stateless_json() {
    let s = start(config()).await;
    let r = s.send(&modern("tools/list", 1, json!({}))).await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("application/json")
    );
    assert!(
        r.header("mcp-session-id").is_none(),
        "modern requests are stateless"
    );
    let v = r.json();
    assert_eq!(v["id"], 1);
    assert!(tool_names(&v["result"]).contains(&"echo".to_owned()), "{v}");
    s.stop().await;
}

#[tokio::test]
async fn modern_tools_call_answers_json() {
    let s = start(config()).await;
    let r = s
        .send(&modern(
            "tools/call",
            7,
            json!({"name": "echo", "arguments": {"text": "hello"}}),
        ))
        .await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["id"], 7);
    assert_ne!(v["result"]["isError"], json!(true), "{v}");
    assert!(v["result"].to_string().contains("hello"), "{v}");
    s.stop().await;
}

#[tokio::test]
async fn modern_tools_call_with_progress_streams_sse() {
    let s = start(config()).await;
    let req = modern(
        "tools/call",
        3,
        json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "p1"}}),
    );
    let r = s.send(&req).await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = r.events();
    let progress: Vec<&Value> = events
        .iter()
        .map(|e| &e.data)
        .filter(|d| d["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{events:?}");
    assert_eq!(progress[0]["params"]["progressToken"], "p1");
    assert_eq!(progress[2]["params"]["progress"], json!(3.0));
    let last = &events.last().unwrap().data;
    assert_eq!(last["id"], 3, "the response ends the stream: {last}");
    assert_eq!(last["result"]["structuredContent"]["done"], true, "{last}");
    s.stop().await;
}

#[tokio::test]
async fn header_mismatch_is_32020() {
    let s = start(config()).await;
    let mut req = modern(
        "tools/call",
        1,
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    for (k, v) in &mut req.headers {
        if k == "mcp-name" {
            *v = "whoami".into();
        }
    }
    let r = s.send(&req).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32020);
    let mut req = modern("tools/list", 2, json!({}));
    for (k, v) in &mut req.headers {
        if k == "mcp-method" {
            *v = "prompts/list".into();
        }
    }
    let r = s.send(&req).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32020);
    s.stop().await;
}

#[tokio::test]
async fn unknown_method_is_404() {
    let s = start(config()).await;
    let r = s.send(&modern("no/such/method", 1, json!({}))).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.error_code(), -32601);
    s.stop().await;
}

#[tokio::test]
async fn get_and_delete_without_session_are_405() {
    let s = start(config()).await;
    for method in ["GET", "DELETE"] {
        let r = s
            .send(&Req::new(method, "/mcp").header("accept", "text/event-stream"))
            .await;
        assert_eq!(r.status, 405, "{method}");
        assert!(r.header("allow").is_some());
        assert_eq!(r.error_code(), -32600);
    }
    s.stop().await;
}

#[tokio::test]
async fn legacy_initialize_mints_a_session() {
    let s = start(config()).await;
    let r = s
        .send(&legacy("initialize", Some(1), initialize_body(), None))
        .await;
    assert_eq!(r.status, 200);
    let sid = r
        .header("mcp-session-id")
        .expect("Mcp-Session-Id")
        .to_owned();
    assert!(sid.len() >= 32 && sid.chars().all(|c| c.is_ascii_hexdigit()));
    assert_eq!(r.json()["result"]["protocolVersion"], LEGACY);
    let n = s
        .send(&legacy(
            "notifications/initialized",
            None,
            json!({}),
            Some(&sid),
        ))
        .await;
    assert_eq!(n.status, 202);
    let r = s
        .send(&legacy("tools/list", Some(2), json!({}), Some(&sid)))
        .await;
    assert_eq!(r.status, 200);
    assert!(tool_names(&r.json()["result"]).contains(&"echo".to_owned()));
    let r = s
        .send(&legacy(
            "tools/call",
            Some(3),
            json!({"name": "echo", "arguments": {"text": "legacy"}}),
            Some(&sid),
        ))
        .await;
    assert_eq!(r.status, 200);
    assert!(r.json()["result"].to_string().contains("legacy"));
    s.stop().await;
}

#[tokio::test]
async fn legacy_requests_need_a_known_session() {
    let s = start(config()).await;
    // No session and no modern `_meta`: refused.
    let r = s
        .send(&legacy("tools/list", Some(1), json!({}), None))
        .await;
    assert_eq!(r.status, 400);
    r.error_code();
    // An unknown session.
    let r = s
        .send(&legacy(
            "tools/list",
            Some(1),
            json!({}),
            Some("00000000000000000000000000000000"),
        ))
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(r.error_code(), -32600);
    // DELETE ends a session; it is unknown afterwards.
    let sid = s.legacy_session().await;
    let r = s
        .send(&Req::new("DELETE", "/mcp").header("mcp-session-id", &sid))
        .await;
    assert_eq!(r.status, 204);
    let r = s
        .send(&legacy("tools/list", Some(2), json!({}), Some(&sid)))
        .await;
    assert_eq!(r.status, 404);
    let r = s
        .send(&Req::new("DELETE", "/mcp").header("mcp-session-id", &sid))
        .await;
    assert_eq!(r.status, 404);
    s.stop().await;
}

#[tokio::test]
async fn legacy_protocol_version_header_accepts_any_legacy_revision() {
    let s = start(config()).await;
    let sid = s.legacy_session().await;
    let with_version = |v: &str| {
        Req::new("POST", "/mcp")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", v)
            .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}))
    };
    // An older legacy revision than the negotiated one is still a supported version.
    let r = s.send(&with_version("2025-03-26")).await;
    assert_eq!(r.status, 200);
    // Unknown versions, and the modern one without modern `_meta`, are refused.
    for bad in ["1999-01-01", "2026-07-28", ""] {
        let r = s.send(&with_version(bad)).await;
        assert_eq!(r.status, 400, "{bad:?}");
    }
    s.stop().await;
}

#[tokio::test]
async fn standalone_stream_hears_tool_list_changes() {
    let s = start(config()).await;
    let sid = s.legacy_session().await;
    let mut stream = s
        .open(
            &Req::new("GET", "/mcp")
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &sid)
                .header("mcp-protocol-version", LEGACY),
        )
        .await;
    assert_eq!(stream.status, 200);
    assert!(
        stream
            .header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    s.registry
        .register(
            "late",
            json!({"type": "object"}),
            |_: Map<String, Value>| -> Result<Value, McpErrorDetail> { Ok(json!({})) },
        )
        .unwrap();
    let event = tokio::time::timeout(HANG, stream.next_event())
        .await
        .expect("an event in time")
        .expect("an event");
    assert_eq!(event.data["method"], "notifications/tools/list_changed");
    assert!(event.id.is_some(), "standalone events are resumable");
    s.stop().await;
}

#[tokio::test]
async fn last_event_id_resumes_a_stream() {
    let s = start(config()).await;
    let sid = s.legacy_session().await;
    let req = legacy(
        "tools/call",
        Some(5),
        json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "tok"}}),
        Some(&sid),
    );
    let mut stream = s.open(&req).await;
    assert_eq!(stream.status, 200);
    let first = tokio::time::timeout(HANG, stream.next_event())
        .await
        .unwrap()
        .expect("a first event");
    assert_eq!(first.data["method"], "notifications/progress");
    assert_eq!(first.data["params"]["progress"], json!(1.0));
    let id = first.id.clone().expect("an event id");
    stream.close();
    // Reconnect after the first event: the rest is replayed from the log.
    let mut resumed = s
        .open(
            &Req::new("GET", "/mcp")
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &sid)
                .header("mcp-protocol-version", LEGACY)
                .header("last-event-id", &id),
        )
        .await;
    assert_eq!(resumed.status, 200);
    let mut seen = Vec::new();
    while let Some(e) = tokio::time::timeout(HANG, resumed.next_event())
        .await
        .unwrap()
    {
        let done = e.data.get("result").is_some();
        seen.push(e.data);
        if done {
            break;
        }
    }
    let progress: Vec<f64> = seen
        .iter()
        .filter(|d| d["method"] == "notifications/progress")
        .map(|d| d["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [2.0, 3.0], "only events after {id}: {seen:?}");
    let last = seen.last().unwrap();
    assert_eq!(last["id"], 5);
    // An unknown stream cannot be resumed.
    let r = s
        .send(
            &Req::new("GET", "/mcp")
                .header("accept", "text/event-stream")
                .header("mcp-session-id", &sid)
                .header("last-event-id", "999-1"),
        )
        .await;
    assert_eq!(r.status, 404);
    s.stop().await;
}

#[tokio::test]
async fn idle_sessions_are_reclaimed() {
    let s = start(HttpConfig {
        max_sessions: 2,
        session_idle_timeout: Duration::from_millis(300),
        health: HealthAccess::Public,
        ..config()
    })
    .await;
    let a = s.legacy_session().await;
    let _b = s.legacy_session().await;
    let mut sessions = u64::MAX;
    let deadline = tokio::time::Instant::now() + HANG;
    while sessions != 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "sessions never reclaimed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let h = s.send(&Req::new("GET", "/health")).await;
        sessions = h.json()["sessions"].as_u64().unwrap();
    }
    let r = s
        .send(&legacy("tools/list", Some(2), json!({}), Some(&a)))
        .await;
    assert_eq!(r.status, 404, "an expired session is gone");
    // Both places are free again.
    let _c = s.legacy_session().await;
    let _d = s.legacy_session().await;
    s.stop().await;
}

#[tokio::test]
async fn closing_a_modern_stream_cancels_the_tool() {
    let s = start(config()).await;
    let req = modern(
        "tools/call",
        9,
        json!({"name": "wait_cancel", "arguments": {}, "_meta": {"progressToken": 1}}),
    );
    let mut stream = s.open(&req).await;
    assert_eq!(stream.status, 200);
    let first = tokio::time::timeout(HANG, stream.next_event())
        .await
        .unwrap()
        .expect("the tool's progress");
    assert_eq!(first.data["method"], "notifications/progress");
    assert_eq!(s.probes.cancelled.load(Ordering::SeqCst), 0);
    stream.close();
    let probes = s.probes.clone();
    eventually("the tool saw its cancellation", || {
        probes.cancelled.load(Ordering::SeqCst) == 1
    })
    .await;
    s.stop().await;
}

#[tokio::test]
async fn subscriptions_listen_streams_list_changes() {
    let s = start(config()).await;
    let req = modern(
        "subscriptions/listen",
        11,
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut stream = s.open(&req).await;
    assert_eq!(stream.status, 200);
    assert!(
        stream
            .header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let ack = tokio::time::timeout(HANG, stream.next_event())
        .await
        .unwrap()
        .expect("an acknowledgement");
    assert_eq!(
        ack.data["method"],
        "notifications/subscriptions/acknowledged"
    );
    s.registry
        .register(
            "late2",
            json!({"type": "object"}),
            |_: Map<String, Value>| ToolOutput::content(vec![ContentBlock::text("x")]),
        )
        .unwrap();
    let e = tokio::time::timeout(HANG, stream.next_event())
        .await
        .unwrap()
        .expect("a change");
    assert_eq!(e.data["method"], "notifications/tools/list_changed");
    // Without SSE in Accept a subscription cannot be served.
    let mut req = modern("subscriptions/listen", 12, json!({"notifications": {}}));
    for (k, v) in &mut req.headers {
        if k == "accept" {
            *v = "application/json".into();
        }
    }
    let r = s.send(&req).await;
    assert_eq!(r.status, 406);
    s.stop().await;
}

#[tokio::test]
async fn graceful_shutdown_lets_an_in_flight_call_finish() {
    let mut s = start(config()).await;
    let call = s.spawn_send(modern(
        "tools/call",
        1,
        json!({"name": "slow", "arguments": {"ms": 800}}),
    ));
    let probes = s.probes.clone();
    eventually("the call is in flight", || {
        probes.slow_started.load(Ordering::SeqCst) == 1
    })
    .await;
    assert_eq!(probes.finished.load(Ordering::SeqCst), 0);
    s.begin_shutdown();
    let r = tokio::time::timeout(HANG, call).await.unwrap().unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["structuredContent"]["slept"], 800);
    assert_eq!(probes.finished.load(Ordering::SeqCst), 1);
    let out = tokio::time::timeout(HANG, &mut s.handle).await.unwrap();
    assert!(out.unwrap().is_ok());
    // No longer accepting.
    assert!(tokio::net::TcpStream::connect(s.addr).await.is_err());
}

#[tokio::test]
async fn health_reports_name_versions_and_tools() {
    let s = start(config()).await;
    let r = s.send(&Req::new("GET", "/health")).await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["name"], "http-tests");
    assert!(
        v["protocolVersions"]
            .as_array()
            .unwrap()
            .contains(&json!(MODERN))
    );
    assert_eq!(v["tools"], 5);
    s.stop().await;
}

/// The JSON-RPC error in a response, whether a JSON body or an SSE stream carried it.
fn error_of(r: &Resp) -> Value {
    let is_sse = r
        .header("content-type")
        .is_some_and(|c| c.starts_with("text/event-stream"));
    if is_sse {
        let events = r.events();
        events
            .into_iter()
            .map(|e| e.data)
            .find(|d| d.get("error").is_some())
            .unwrap_or_else(|| panic!("no error on the stream: {r:?}"))
    } else {
        r.json()
    }
}

#[tokio::test]
async fn calls_still_running_when_the_grace_ends_get_a_shutting_down_error() {
    for always_sse in [false, true] {
        let mut s = start(HttpConfig {
            shutdown_grace: Duration::from_millis(100),
            always_sse,
            ..config()
        })
        .await;
        let sid = s.legacy_session().await;
        let slow = json!({"name": "slow", "arguments": {"ms": 600_000}});
        let modern_call = s.spawn_send(modern("tools/call", 1, slow.clone()));
        let legacy_call = s.spawn_send(legacy("tools/call", Some(2), slow, Some(&sid)));
        let probes = s.probes.clone();
        eventually("both calls are in flight", || {
            probes.slow_started.load(Ordering::SeqCst) == 2
        })
        .await;
        s.begin_shutdown();
        for (call, id) in [(modern_call, 1), (legacy_call, 2)] {
            let r = tokio::time::timeout(HANG, call).await.unwrap().unwrap();
            let e = error_of(&r);
            assert_eq!(e["id"], id, "always_sse {always_sse}: {e}");
            assert_eq!(e["error"]["code"], -32000, "always_sse {always_sse}: {e}");
        }
        assert_eq!(probes.finished.load(Ordering::SeqCst), 0);
        let out = tokio::time::timeout(HANG, &mut s.handle).await.unwrap();
        assert!(out.unwrap().is_ok());
    }
}

#[tokio::test]
async fn resuming_before_evicted_events_gets_410_and_the_session_lives_on() {
    let s = start(HttpConfig {
        replay_events: 1,
        ..config()
    })
    .await;
    let sid = s.legacy_session().await;
    let call = legacy(
        "tools/call",
        Some(7),
        json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "t"}}),
        Some(&sid),
    );
    let post = s.open(&call).await;
    assert_eq!(post.status, 200);
    // The priming event names the stream; the body ends when the call is done (or when
    // this reader fell behind what the one-event history keeps).
    let text = tokio::time::timeout(HANG, post.body()).await.unwrap();
    let stream = text
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .and_then(|id| id.split_once('-'))
        .map(|(s, _)| s.to_owned())
        .expect("a priming event id");
    let resume = |id: String| {
        Req::new("GET", "/mcp")
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", LEGACY)
            .header("last-event-id", id)
    };
    // Event 1 (the first progress notification) is gone: no silent gap, a 410.
    let r = s.send(&resume(format!("{stream}-0"))).await;
    assert_eq!(r.status, 410, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.error_code(), -32600);
    // After the last progress notification, the response is still there.
    let mut resumed = s.open(&resume(format!("{stream}-3"))).await;
    assert_eq!(resumed.status, 200);
    let e = tokio::time::timeout(HANG, resumed.next_event())
        .await
        .unwrap()
        .expect("the response");
    assert_eq!(e.data["id"], 7);
    // The session is untouched.
    let r = s
        .send(&legacy("ping", Some(8), json!({}), Some(&sid)))
        .await;
    assert_eq!(r.status, 200);
    s.stop().await;
}
