//! Two HTTP server instances in one process sharing one Redis (sessions, SSE history, the
//! message bus), as `serve --store redis://` runs them: a 2025-11-25 stream cut off on one
//! instance resumes on the other with nothing lost or repeated; a client's answer to an
//! elicitation, or its cancellation, posted to the other instance reaches the waiting call.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../../codomyrmex-mcp/tests/http_support/mod.rs"]
mod http_support;
mod redis_support;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use codomyrmex_mcp::transport::http::HttpConfig;
use codomyrmex_mcp::{McpErrorDetail, ToolContext};
use codomyrmex_mcp_redis::{
    EventBounds, RedisBus, RedisConnection, RedisEventStore, RedisSessionStore,
};
use http_support::*;
use redis_support::*;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

/// The test tools plus `steps` (two progress notifications, a wait for `gate`, a third, then
/// its result) and `ask` (an elicitation, whose answer it returns).
fn tools(probes: &Arc<Probes>, gate: &Arc<Notify>) -> Arc<codomyrmex_mcp::McpToolRegistry> {
    let r = registry(probes);
    let gate = gate.clone();
    r.register(
        "steps",
        json!({"type": "object"}),
        move |_: Map<String, Value>, cx: ToolContext| {
            let gate = gate.clone();
            async move {
                cx.progress(1.0, Some(3.0), Some("one"));
                cx.progress(2.0, Some(3.0), Some("two"));
                gate.notified().await;
                cx.progress(3.0, Some(3.0), Some("three"));
                Ok::<Value, McpErrorDetail>(json!({"done": true}))
            }
        },
    )
    .unwrap();
    r.register(
        "ask",
        json!({"type": "object"}),
        |_: Map<String, Value>, cx: ToolContext| async move {
            let schema = json!({"type": "object", "properties": {"name": {"type": "string"}}});
            match cx.elicit("Your name?", schema).await {
                Ok(answer) => Ok::<Value, McpErrorDetail>(json!({"answer": answer})),
                Err(e) => Ok(json!({"failed": e.to_string()})),
            }
        },
    )
    .unwrap();
    r
}

struct Pair {
    a: TestServer,
    b: TestServer,
    gate: Arc<Notify>,
    redis: Option<Redis>,
    /// A's way to Redis: cut, A is gone as far as Redis and B can tell.
    relay: Relay,
}

/// Two instances on one Redis, each with its own connection, as two processes would be.
async fn pair() -> Pair {
    pair_with(Duration::from_secs(5)).await
}

/// [`pair`], with SSE readers that wait `step` for an event before they look again.
async fn pair_with(step: Duration) -> Pair {
    let redis = start_redis();
    let relay = Relay::start(redis.port).await;
    let gate = Arc::new(Notify::new());
    let mut servers = Vec::new();
    for port in [relay.port, redis.port] {
        let conn = RedisConnection::connect(&format!("redis://127.0.0.1:{port}/"))
            .await
            .unwrap()
            .with_prefix("inst");
        let config = HttpConfig {
            // Each instance checks Host against its own port: both names are allowed.
            ..config()
        }
        .with_session_store(Arc::new(RedisSessionStore::new(conn.clone())))
        .with_event_store(Arc::new(
            RedisEventStore::new(conn.clone(), EventBounds::default()).with_wait_step(step),
        ))
        .with_message_bus(Arc::new(RedisBus::join(conn).await.unwrap()));
        let probes = Arc::new(Probes::default());
        let registry = tools(&probes, &gate);
        servers.push(start_with(config, registry, probes).await);
    }
    let b = servers.pop().unwrap();
    let a = servers.pop().unwrap();
    Pair {
        a,
        b,
        gate,
        redis: Some(redis),
        relay,
    }
}

/// `initialize` on `server` declaring `capabilities`, then `notifications/initialized`.
async fn session_on(server: &TestServer, capabilities: Value) -> String {
    let mut init = initialize_body();
    init["capabilities"] = capabilities;
    let r = server
        .send(&legacy("initialize", Some(1), init, None))
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let sid = r.header("mcp-session-id").unwrap().to_owned();
    let n = server
        .send(&legacy(
            "notifications/initialized",
            None,
            json!({}),
            Some(&sid),
        ))
        .await;
    assert_eq!(n.status, 202);
    sid
}

fn call(id: i64, name: &str, sid: &str) -> Req {
    legacy(
        "tools/call",
        Some(id),
        json!({"name": name, "arguments": {}, "_meta": {"progressToken": "p"}}),
        Some(sid),
    )
}

async fn next(open: &mut Open) -> SseEvent {
    tokio::time::timeout(HANG, open.next_event())
        .await
        .expect("an event in time")
        .expect("the stream goes on")
}

#[tokio::test]
async fn a_stream_cut_on_one_instance_resumes_on_the_other() {
    let p = pair().await;
    let sid = session_on(&p.a, json!({})).await;
    let mut stream = p.a.open(&call(7, "steps", &sid)).await;
    assert_eq!(stream.status, 200);
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let e = next(&mut stream).await;
        if e.data.get("method").is_some() {
            seen.push(e);
        }
    }
    let last = seen[1].id.clone().expect("events carry ids");
    assert_eq!(seen[1].data["params"]["progress"], 2.0);
    // The connection to A is cut; the call goes on there.
    stream.close();
    p.gate.notify_one();
    let resume = |sid: &str, last: &str| {
        Req::new("GET", "/mcp")
            .header("accept", "text/event-stream")
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", LEGACY)
            .header("last-event-id", last)
    };
    let mut resumed = p.b.open(&resume(&sid, &last)).await;
    assert_eq!(resumed.status, 200, "B resumes A's stream");
    let third = next(&mut resumed).await;
    assert_eq!(third.data["params"]["progress"], 3.0, "{:?}", third.data);
    let result = next(&mut resumed).await;
    assert_eq!(result.data["id"], 7, "{:?}", result.data);
    assert_eq!(result.data["result"]["structuredContent"]["done"], true);
    assert!(
        tokio::time::timeout(HANG, resumed.next_event())
            .await
            .expect("the stream ends")
            .is_none(),
        "nothing after the response"
    );
    let ids: Vec<String> = [&seen[0], &seen[1], &third, &result]
        .iter()
        .map(|e| e.id.clone().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique, "no event twice");
    // Another session, or a stream the session never had, finds nothing.
    assert_eq!(p.b.send(&resume("nope", &last)).await.status, 404);
    assert_eq!(p.b.send(&resume(&sid, "999-1")).await.status, 404);
    p.a.stop().await;
    p.b.stop().await;
}

#[tokio::test]
async fn an_elicitation_answered_on_the_other_instance_reaches_the_call() {
    let p = pair().await;
    let sid = session_on(&p.a, json!({"elicitation": {}})).await;
    let mut stream = p.a.open(&call(3, "ask", &sid)).await;
    let request = loop {
        let e = next(&mut stream).await;
        if e.data["method"] == "elicitation/create" {
            break e.data;
        }
    };
    let id = request["id"].clone();
    // An answer to an id nobody asked is accepted and ignored.
    let stray = Req::new("POST", "/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", LEGACY)
        .json(&json!({"jsonrpc": "2.0", "id": "srv-nobody-1", "result": {}}));
    assert_eq!(p.b.send(&stray).await.status, 202);
    let answer = Req::new("POST", "/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", LEGACY)
        .json(&json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {"action": "accept", "content": {"name": "Ada"}},
        }));
    assert_eq!(p.b.send(&answer).await.status, 202, "B takes the answer");
    let result = loop {
        let e = next(&mut stream).await;
        if e.data.get("id") == Some(&json!(3)) {
            break e.data;
        }
    };
    let answer = &result["result"]["structuredContent"]["answer"];
    assert_eq!(answer["content"]["name"], "Ada", "{result}");
    p.a.stop().await;
    p.b.stop().await;
}

#[tokio::test]
async fn a_cancellation_on_the_other_instance_cancels_the_call() {
    let p = pair().await;
    let sid = session_on(&p.a, json!({})).await;
    let mut stream = p.a.open(&call(5, "wait_cancel", &sid)).await;
    next(&mut stream).await;
    while p.a.probes.started.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    let cancel = legacy(
        "notifications/cancelled",
        None,
        json!({"requestId": 5, "reason": "test"}),
        Some(&sid),
    );
    assert_eq!(p.b.send(&cancel).await.status, 202);
    let deadline = Instant::now() + HANG;
    while p.a.probes.cancelled.load(Ordering::SeqCst) == 0 {
        assert!(
            Instant::now() < deadline,
            "the call on A was never cancelled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    p.a.stop().await;
    p.b.stop().await;
}

#[tokio::test]
async fn redis_going_away_ends_open_streams_and_gets_503_not_a_hang() {
    let mut p = pair().await;
    let sid = session_on(&p.a, json!({})).await;
    let mut stream = p.a.open(&call(9, "steps", &sid)).await;
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let e = next(&mut stream).await;
        if e.data.get("method").is_some() {
            seen.push(e);
        }
    }
    drop(p.redis.take());
    // The open stream ends (its client would resume): it does not wait forever.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "the stream never ended");
        match tokio::time::timeout(Duration::from_secs(60), stream.next_event()).await {
            Ok(None) => break,
            Ok(Some(_)) => {}
            Err(_) => panic!("the stream neither ended nor sent anything"),
        }
    }
    let resume = Req::new("GET", "/mcp")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", LEGACY)
        .header("last-event-id", seen[1].id.clone().unwrap());
    let r = p.b.send(&resume).await;
    assert_eq!(r.status, 503, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.header("retry-after").is_some());
    let r = p.a.send(&call(10, "steps", &sid)).await;
    assert_eq!(r.status, 503);
    p.gate.notify_one();
    p.a.stop().await;
    p.b.stop().await;
}

/// A number from the Prometheus text of `server`'s `/metrics`.
async fn metric(server: &TestServer, name: &str) -> f64 {
    let r = server.send(&Req::new("GET", "/metrics")).await;
    let text = String::from_utf8_lossy(&r.body).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// With a message bus, requests on a session this instance holds live refresh its record at
/// most once a second, not once each; a `DELETE` on the other instance reaches this one over
/// the bus, which drops its live state at once rather than at its next touch.
#[tokio::test]
async fn a_live_session_costs_no_round_trip_per_request_and_a_delete_elsewhere_ends_it_here() {
    let p = pair().await;
    let sid = session_on(&p.a, json!({})).await;
    let ping = legacy("ping", Some(7), json!({}), Some(&sid)).header("accept", "application/json");
    assert_eq!(p.a.send(&ping).await.status, 200);
    let before = metric(&p.a, "mcp_store_round_trips_total").await;
    for _ in 0..20 {
        assert_eq!(p.a.send(&ping).await.status, 200);
    }
    let spent = metric(&p.a, "mcp_store_round_trips_total").await - before;
    assert!(spent < 10.0, "20 pings cost {spent} round trips");
    assert_eq!(metric(&p.a, "mcp_http_sessions").await, 1.0);

    let r =
        p.b.send(&Req::new("DELETE", "/mcp").header("mcp-session-id", &sid))
            .await;
    assert_eq!(r.status, 204);
    // No request reaches A: only the broadcast can end its live copy.
    let deadline = Instant::now() + HANG;
    while metric(&p.a, "mcp_http_sessions").await != 0.0 {
        assert!(
            Instant::now() < deadline,
            "A still holds the session B deleted"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(p.a.send(&ping).await.status, 404);
}

/// The GET for a session's standalone stream on `server`, resuming after `last` if given.
fn standalone(sid: &str, last: Option<&str>) -> Req {
    let req = Req::new("GET", "/mcp")
        .header("accept", "text/event-stream")
        .header("mcp-session-id", sid)
        .header("mcp-protocol-version", LEGACY);
    match last {
        Some(last) => req.header("last-event-id", last),
        None => req,
    }
}

/// Registers tool `name` on `server` at run time: a `tools/list_changed` for its sessions.
fn add_tool(server: &TestServer, name: &str) {
    server
        .registry
        .register(
            name,
            json!({"type": "object"}),
            |_: Map<String, Value>, _cx: ToolContext| async move {
                Ok::<Value, McpErrorDetail>(json!({}))
            },
        )
        .unwrap();
}

/// A 2025-11-25 session's standalone GET stream gets events on A, is cut, and resumes with
/// `Last-Event-ID` on B: the event sent while it was cut comes first, then the ones sent
/// after, none lost and none twice (each id once).
#[tokio::test]
async fn the_standalone_stream_cut_on_one_instance_resumes_on_the_other() {
    let p = pair().await;
    let sid = session_on(&p.a, json!({})).await;
    let mut get = p.a.open(&standalone(&sid, None)).await;
    assert_eq!(get.status, 200);
    add_tool(&p.a, "one");
    let first = next(&mut get).await;
    add_tool(&p.a, "two");
    let second = next(&mut get).await;
    for e in [&first, &second] {
        assert_eq!(
            e.data["method"], "notifications/tools/list_changed",
            "{:?}",
            e.data
        );
    }
    let last = second.id.clone().expect("events carry ids");
    get.close();
    // Sent while no stream is open: kept in the store's history.
    add_tool(&p.a, "three");
    let mut resumed = p.b.open(&standalone(&sid, Some(&last))).await;
    assert_eq!(resumed.status, 200, "B resumes A's standalone stream");
    let third = next(&mut resumed).await;
    // B delivers the session's notifications now that its stream is there; a change is
    // heard on both (between `serve` instances the change bridge relays it).
    add_tool(&p.a, "four");
    add_tool(&p.b, "four");
    let fourth = next(&mut resumed).await;
    for e in [&third, &fourth] {
        assert_eq!(
            e.data["method"], "notifications/tools/list_changed",
            "{:?}",
            e.data
        );
    }
    let ids: Vec<String> = [&first, &second, &third, &fourth]
        .iter()
        .map(|e| e.id.clone().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 4, "no event twice: {ids:?}");
    p.a.stop().await;
    p.b.stop().await;
}

/// A change both instances hear (here registered on both; between `serve` instances the
/// change bridge relays it) reaches a session live on both once: only the instance that
/// took the session last (restored it, or opened its GET stream) delivers its notifications.
#[tokio::test]
async fn a_change_reaches_a_session_live_on_two_instances_once() {
    let p = pair().await;
    let sid = session_on(&p.a, json!({})).await;
    let other = session_on(&p.a, json!({})).await;
    let mut get = p.a.open(&standalone(&sid, None)).await;
    assert_eq!(get.status, 200);
    // B takes the session live too (and with it its notifications).
    let ping = legacy("ping", Some(7), json!({}), Some(&sid)).header("accept", "application/json");
    assert_eq!(p.b.send(&ping).await.status, 200);
    // A barrier: A hears what B announces in order, so once A drops `other` (deleted on B),
    // it has heard that B took `sid`.
    let before = metric(&p.a, "mcp_http_sessions").await;
    let r =
        p.b.send(&Req::new("DELETE", "/mcp").header("mcp-session-id", &other))
            .await;
    assert_eq!(r.status, 204);
    let deadline = Instant::now() + HANG;
    while metric(&p.a, "mcp_http_sessions").await >= before {
        assert!(
            Instant::now() < deadline,
            "A never heard of the DELETE on B"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    add_tool(&p.a, "one");
    add_tool(&p.b, "one");
    let first = next(&mut get).await;
    assert_eq!(first.data["method"], "notifications/tools/list_changed");
    // A second copy would follow at once; give it a generous second (this can only pass
    // wrongly, never fail wrongly).
    let again = tokio::time::timeout(Duration::from_secs(1), get.next_event()).await;
    assert!(
        again.is_err(),
        "the change came twice: {:?}",
        again.map(|e| e.map(|e| e.data))
    );
    p.a.stop().await;
    p.b.stop().await;
}

/// A `DELETE` on B whose broadcast A missed (A's pub/sub connection was cut, and is back)
/// still ends the session on A: after a reconnect A checks a live session's record again
/// before serving it, instead of trusting it for up to a second.
#[tokio::test]
async fn a_delete_whose_broadcast_was_missed_still_ends_the_session_elsewhere() {
    let p = pair().await;
    let sid = session_on(&p.a, json!({})).await;
    let ping = legacy("ping", Some(7), json!({}), Some(&sid)).header("accept", "application/json");
    assert_eq!(p.a.send(&ping).await.status, 200);
    let mut admin = redis::Client::open(format!(
        "redis://127.0.0.1:{}/",
        p.redis.as_ref().unwrap().port
    ))
    .unwrap()
    .get_multiplexed_async_connection()
    .await
    .unwrap();
    let subscribed = |admin: &mut redis::aio::MultiplexedConnection| {
        let mut admin = admin.clone();
        async move {
            let clients: String = redis::cmd("CLIENT")
                .arg("LIST")
                .arg("TYPE")
                .arg("pubsub")
                .query_async(&mut admin)
                .await
                .unwrap();
            clients.lines().count()
        }
    };
    let listening = subscribed(&mut admin).await;
    assert_eq!(listening, 2, "one pub/sub connection per instance");
    // Cut both instances' pub/sub connections: B's DELETE is published to nobody.
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("pubsub")
        .query_async(&mut admin)
        .await
        .unwrap();
    let r =
        p.b.send(&Req::new("DELETE", "/mcp").header("mcp-session-id", &sid))
            .await;
    assert_eq!(r.status, 204);
    // Both reconnect by themselves.
    let deadline = Instant::now() + HANG;
    while subscribed(&mut admin).await < listening {
        assert!(Instant::now() < deadline, "the instances never reconnected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        p.a.send(&ping).await.status,
        404,
        "A served a session B deleted while A was not listening"
    );
}

/// A client's answer to a request of an instance that died (its claim names an instance
/// nobody listens for) gets a clear error, not a silent `202`.
#[tokio::test]
async fn an_answer_for_an_instance_that_died_gets_a_clear_error() {
    let p = pair().await;
    let sid = session_on(&p.a, json!({"elicitation": {}})).await;
    let mut admin = redis::Client::open(format!(
        "redis://127.0.0.1:{}/",
        p.redis.as_ref().unwrap().port
    ))
    .unwrap()
    .get_multiplexed_async_connection()
    .await
    .unwrap();
    // The claim a dead instance `i999` left for its request `"srv-i999-1"`.
    let _: () = redis::cmd("SET")
        .arg(format!("inst:bus:c:{sid}:\"srv-i999-1\""))
        .arg("i999")
        .query_async(&mut admin)
        .await
        .unwrap();
    let answer = Req::new("POST", "/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &sid)
        .header("mcp-protocol-version", LEGACY)
        .json(&json!({"jsonrpc": "2.0", "id": "srv-i999-1", "result": {"action": "decline"}}));
    let r = p.b.send(&answer).await;
    assert_eq!(r.status, 410, "{}", String::from_utf8_lossy(&r.body));
    let body = r.json();
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("gone")),
        "{body}"
    );
    // The session itself goes on.
    let ping = legacy("ping", Some(7), json!({}), Some(&sid)).header("accept", "application/json");
    assert_eq!(p.b.send(&ping).await.status, 200);
}

/// How long the readers of [`pair_with`] wait for an event before they look again, in the
/// tests of a stream whose writer is gone.
const STEP: Duration = Duration::from_millis(250);

/// Reads `stream` (a `steps` call) up to its second progress notification; returns its id.
async fn second_progress(stream: &mut Open) -> String {
    loop {
        let e = next(stream).await;
        if e.data["params"]["progress"] == 2.0 {
            return e.id.expect("events carry ids");
        }
    }
}

/// A client following the stream of a call whose instance died (cut off from Redis, which
/// is what Redis sees of a SIGKILL), resumed on the other instance, gets an error response
/// for its request saying so, and the stream ends: it does not wait for an answer that
/// cannot come. A later resumption replays the same end.
#[tokio::test]
async fn a_stream_whose_instance_died_ends_elsewhere_with_an_error_for_its_call() {
    let p = pair_with(STEP).await;
    let sid = session_on(&p.a, json!({})).await;
    let mut stream = p.a.open(&call(7, "steps", &sid)).await;
    assert_eq!(stream.status, 200);
    let last = second_progress(&mut stream).await;
    stream.close();
    p.relay.cut();
    for _ in 0..2 {
        let mut resumed = p.b.open(&standalone(&sid, Some(&last))).await;
        assert_eq!(resumed.status, 200);
        let end = next(&mut resumed).await;
        assert_eq!(end.data["id"], 7, "{:?}", end.data);
        assert!(
            end.data["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("stopped")),
            "{:?}",
            end.data
        );
        assert!(
            tokio::time::timeout(HANG, resumed.next_event())
                .await
                .expect("the stream ends")
                .is_none(),
            "nothing after the error"
        );
    }
    p.b.stop().await;
}

/// The same stream, resumed on B while A lives and its call is slow (it waits), is not
/// ended: B finds A listening at every look, and the call's last events and its answer
/// arrive when it goes on.
#[tokio::test]
async fn a_slow_call_on_a_live_instance_keeps_its_stream_elsewhere() {
    let p = pair_with(STEP).await;
    let sid = session_on(&p.a, json!({})).await;
    let mut stream = p.a.open(&call(7, "steps", &sid)).await;
    assert_eq!(stream.status, 200);
    let last = second_progress(&mut stream).await;
    stream.close();
    let mut resumed = p.b.open(&standalone(&sid, Some(&last))).await;
    assert_eq!(resumed.status, 200);
    // Twelve steps without an event: B looks at A again and again (this can only pass
    // wrongly, on a machine so slow that B looked fewer than twice).
    let quiet = tokio::time::timeout(STEP * 12, resumed.next_event()).await;
    assert!(
        quiet.is_err(),
        "the stream of a live call ended: {:?}",
        quiet.map(|e| e.map(|e| e.data))
    );
    p.gate.notify_one();
    let third = next(&mut resumed).await;
    assert_eq!(third.data["params"]["progress"], 3.0, "{:?}", third.data);
    let result = next(&mut resumed).await;
    assert_eq!(result.data["id"], 7, "{:?}", result.data);
    assert_eq!(result.data["result"]["structuredContent"]["done"], true);
    p.a.stop().await;
    p.b.stop().await;
}

/// The instance delivering a session's notifications (A: it took the session live last)
/// dies while the client's GET stream is open on B: B finds A silent on the bus and takes
/// the notifications back, so the open stream gets the next change, without the client
/// opening it again.
#[tokio::test]
async fn a_get_stream_gets_notifications_again_when_the_instance_delivering_them_dies() {
    let p = pair_with(STEP).await;
    let sid = session_on(&p.b, json!({})).await;
    let other = session_on(&p.b, json!({})).await;
    let mut get = p.b.open(&standalone(&sid, None)).await;
    assert_eq!(get.status, 200);
    // A takes the session live, and with it its notifications.
    let ping = legacy("ping", Some(7), json!({}), Some(&sid)).header("accept", "application/json");
    assert_eq!(p.a.send(&ping).await.status, 200);
    // A barrier: B hears what A announces in order, so once B drops `other` (deleted on A),
    // it has heard that A took `sid`.
    let before = metric(&p.b, "mcp_http_sessions").await;
    let r =
        p.a.send(&Req::new("DELETE", "/mcp").header("mcp-session-id", &other))
            .await;
    assert_eq!(r.status, 204);
    let deadline = Instant::now() + HANG;
    while metric(&p.b, "mcp_http_sessions").await >= before {
        assert!(
            Instant::now() < deadline,
            "B never heard of the DELETE on A"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    p.relay.cut();
    // Changes on B, until B delivers one: it takes the notifications back within a few
    // steps of A going silent.
    let deadline = Instant::now() + HANG;
    let mut n = 0;
    let event = loop {
        add_tool(&p.b, &format!("t{n}"));
        n += 1;
        if let Ok(e) = tokio::time::timeout(STEP * 2, get.next_event()).await {
            break e.expect("the stream goes on");
        }
        assert!(
            Instant::now() < deadline,
            "B never delivered the session's notifications again"
        );
    };
    assert_eq!(
        event.data["method"], "notifications/tools/list_changed",
        "{:?}",
        event.data
    );
    p.b.stop().await;
}
