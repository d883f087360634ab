//! `McpClient` over Streamable HTTP: our own server in both eras, and hand-written servers
//! for what ours never does (expired sessions, broken SSE streams, redirects), checking what
//! the client sends: DELETE on close, `Last-Event-ID`, no token to another origin.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use codomyrmex_mcp::Era;
use codomyrmex_mcp::client::http::HttpTarget;
use codomyrmex_mcp::client::{CallOptions, ClientHandlers, ClientOptions, EraPreference};
use codomyrmex_mcp::client::{ClientError, McpClient};
use http_support::{HANG, config, eventually, start};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn connect(url: &str, token: Option<&str>) -> McpClient {
    let target = HttpTarget {
        url: url.to_owned(),
        headers: vec![],
        token: token.map(str::to_owned),
        ca_file: None,
    };
    McpClient::connect_http(target, ClientOptions::default()).unwrap()
}

#[tokio::test]
async fn our_server_in_both_eras() {
    let server = start(config()).await;
    let url = format!("http://{}/mcp", server.host());
    for (preference, era) in [
        (EraPreference::Legacy, Era::Legacy),
        (EraPreference::Auto, Era::Modern),
        (EraPreference::Modern, Era::Modern),
    ] {
        let c = connect(&url, None);
        tokio::time::timeout(HANG, c.negotiate(preference, HANG))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(c.era(), era);
        let tools = c.list_tools().await.unwrap();
        assert!(tools.iter().any(|t| t["name"] == "echo"), "{tools:?}");
        let r = c.call_tool("echo", json!({"text": "hi"})).await.unwrap();
        assert!(r["isError"] != true, "{era:?}: {r}");
        c.ping().await.unwrap();
        c.close(HANG).await;
    }
    server.stop().await;
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let c = connect(&format!("http://{addr}/mcp"), None);
    let e = c.negotiate(EraPreference::Legacy, HANG).await.unwrap_err();
    assert!(
        matches!(e, ClientError::Transport { status: None, ref message } if message.contains("cannot connect")),
        "{e:?}"
    );
    assert!(!e.to_string().contains("-32099"), "{e}");
}

/// One recorded request.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Log = Arc<Mutex<Vec<Seen>>>;

async fn read_request(s: &mut TcpStream) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).await.ok()? == 0 {
            return None;
        }
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).ok()?;
    let mut lines = head.split("\r\n");
    let method = lines.next()?.split(' ').next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.ok()?;
    Some(Seen {
        method,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// A server answering each request with `reply(request, log so far)`: raw response bytes.
async fn fake<F>(reply: F) -> (String, Log)
where
    F: Fn(&Seen, &[Seen]) -> Vec<u8> + Send + Sync + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let log: Log = Arc::default();
    let reply = Arc::new(reply);
    let l = log.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let log = l.clone();
            let reply = reply.clone();
            tokio::spawn(async move {
                let Some(seen) = read_request(&mut s).await else {
                    return;
                };
                let bytes = {
                    let mut log = log.lock().unwrap();
                    let out = reply(&seen, &log);
                    log.push(seen);
                    out
                };
                let _ = s.write_all(&bytes).await;
                let _ = s.shutdown().await;
            });
        }
    });
    (url, log)
}

fn json_response(headers: &str, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn status(code: u16, extra: &str) -> Vec<u8> {
    format!("HTTP/1.1 {code} X\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n")
        .into_bytes()
}

fn init_result(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "fake", "version": "1"}}})
}

/// A legacy server: sessions `s1`, `s2`, ... (a new one per initialize); `expired` sessions
/// get 404.
fn legacy_server(
    expired: &'static [&'static str],
) -> impl Fn(&Seen, &[Seen]) -> Vec<u8> + Send + Sync {
    move |seen, log| {
        let session = seen.header("mcp-session-id").map(str::to_owned);
        if let Some(s) = &session
            && expired.contains(&s.as_str())
        {
            return status(404, "");
        }
        match (seen.method.as_str(), seen.body["method"].as_str()) {
            ("POST", Some("initialize")) => {
                let n = log
                    .iter()
                    .filter(|s| s.body["method"] == "initialize")
                    .count()
                    + 1;
                json_response(
                    &format!("Mcp-Session-Id: s{n}\r\n"),
                    &init_result(&seen.body["id"]),
                )
            }
            ("POST", Some("ping")) => json_response(
                "",
                &json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": {}}),
            ),
            ("GET", _) => status(405, ""),
            _ => status(202, ""),
        }
    }
}

#[tokio::test]
async fn a_session_is_deleted_on_close() {
    let (url, log) = fake(legacy_server(&[])).await;
    let c = connect(&url, Some("tok"));
    c.negotiate(EraPreference::Legacy, HANG).await.unwrap();
    c.ping().await.unwrap();
    c.close(HANG).await;
    let log = log.lock().unwrap();
    let delete = log.iter().find(|s| s.method == "DELETE").expect("a DELETE");
    assert_eq!(delete.header("mcp-session-id"), Some("s1"));
    assert_eq!(delete.header("authorization"), Some("Bearer tok"));
    let ping = log.iter().find(|s| s.body["method"] == "ping").unwrap();
    assert_eq!(ping.header("mcp-session-id"), Some("s1"));
    assert_eq!(ping.header("mcp-protocol-version"), Some("2025-11-25"));
}

#[tokio::test]
async fn an_expired_session_is_initialized_again() {
    let (url, log) = fake(legacy_server(&["s1"])).await;
    let c = connect(&url, None);
    c.negotiate(EraPreference::Legacy, HANG).await.unwrap();
    c.ping().await.unwrap();
    let log = log.lock().unwrap();
    let pings: Vec<_> = log.iter().filter(|s| s.body["method"] == "ping").collect();
    assert_eq!(pings.len(), 2, "{log:?}");
    assert_eq!(pings[1].header("mcp-session-id"), Some("s2"));
    assert!(
        log.iter()
            .any(|s| s.body["method"] == "notifications/initialized"
                && s.header("mcp-session-id") == Some("s2"))
    );
}

#[tokio::test]
async fn a_broken_event_stream_is_resumed_with_last_event_id() {
    let (url, log) = fake(|seen, _| match (seen.method.as_str(), seen.body["method"].as_str()) {
        ("POST", Some("initialize")) => json_response("Mcp-Session-Id: s1\r\n", &init_result(&seen.body["id"])),
        ("POST", Some("tools/call")) => {
            // A priming event with an id and a retry, then the stream ends before the answer.
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nid: e1\r\nretry: 10\r\ndata:\r\n\r\n".to_vec()
        }
        ("GET", _) if seen.header("last-event-id") == Some("e1") => {
            let answer = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [], "resumed": true}});
            format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nid: e2\r\ndata: {answer}\r\n\r\n").into_bytes()
        }
        ("GET", _) => status(405, ""),
        _ => status(202, ""),
    })
    .await;
    let c = connect(&url, None);
    c.negotiate(EraPreference::Legacy, HANG).await.unwrap();
    let r = tokio::time::timeout(HANG, c.call_tool("t", json!({})))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r["resumed"], true);
    let log = log.lock().unwrap();
    assert!(
        log.iter()
            .any(|s| s.method == "GET" && s.header("last-event-id") == Some("e1"))
    );
}

#[tokio::test]
async fn a_stream_cut_without_an_event_id_fails_clearly() {
    let (url, _) = fake(|seen, _| match seen.body["method"].as_str() {
        Some("initialize") => json_response("", &init_result(&seen.body["id"])),
        Some("ping") => b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: {\"jsonrpc\":".to_vec(),
        _ => status(202, ""),
    })
    .await;
    let c = connect(&url, None);
    c.negotiate(EraPreference::Legacy, HANG).await.unwrap();
    let e = tokio::time::timeout(HANG, c.ping())
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(e, ClientError::Transport { ref message, .. } if message.contains("ended before the response")),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_redirect_is_not_followed_and_the_token_stays_home() {
    let elsewhere = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let other = format!("http://{}/steal", elsewhere.local_addr().unwrap());
    let (url, _) = fake(move |_, _| status(307, &format!("Location: {other}\r\n"))).await;
    let c = connect(&url, Some("secret"));
    let e = c.negotiate(EraPreference::Legacy, HANG).await.unwrap_err();
    assert!(
        matches!(
            e,
            ClientError::Transport {
                status: Some(307),
                ..
            }
        ),
        "{e:?}"
    );
    // Nobody connected to the other origin.
    let accepted = tokio::time::timeout(Duration::from_millis(200), elsewhere.accept()).await;
    assert!(accepted.is_err(), "the client followed the redirect");
}

#[tokio::test]
async fn a_legacy_http_server_makes_auto_fall_back() {
    // A legacy server refuses the modern request with 400 and a non-modern body.
    let (url, _) = fake(|seen, log| {
        if seen.body["method"] == "server/discover" {
            let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32000, "message": "Bad Request: Server not initialized"}});
            let body = body.to_string();
            return format!("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes();
        }
        legacy_server(&[])(seen, log)
    })
    .await;
    let c = connect(&url, None);
    let r = c.negotiate(EraPreference::Auto, HANG).await.unwrap();
    assert_eq!(r["serverInfo"]["name"], "fake");
    assert_eq!(c.era(), Era::Legacy);
    c.ping().await.unwrap();
}

#[tokio::test]
async fn the_get_stream_carries_server_messages() {
    let (url, _) = fake(|seen, log| {
        if seen.method == "GET" {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "from the GET stream"}});
            return format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nretry: 60000\r\ndata: {note}\r\n\r\n").into_bytes();
        }
        legacy_server(&[])(seen, log)
    })
    .await;
    let c = connect(&url, None);
    c.negotiate(EraPreference::Legacy, HANG).await.unwrap();
    let note = tokio::time::timeout(HANG, c.next_notification())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(note["params"]["data"], "from the GET stream", "{note}");
    c.close(HANG).await;
}

/// 2026-07-28 has no request ids to cancel by: closing a call's POST stream is its
/// cancellation. Dropping the call must close the stream, so the server sees it and stops
/// the tool.
#[tokio::test]
async fn dropping_a_modern_call_closes_its_post_stream() {
    use std::sync::atomic::Ordering;
    let server = start(config()).await;
    let url = format!("http://{}/mcp", server.host());
    let c = connect(&url, None);
    c.negotiate(EraPreference::Modern, HANG).await.unwrap();
    assert_eq!(c.era(), Era::Modern);
    let (started_tx, mut started_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let options = codomyrmex_mcp::client::CallOptions {
        progress: Some(Arc::new(move |_| {
            let _ = started_tx.send(());
        })),
        timeout: None,
        log: None,
        input: None,
    };
    {
        let call = c.call_tool_with("wait_cancel", json!({}), &options);
        tokio::pin!(call);
        tokio::select! {
            r = &mut call => panic!("the call ended first: {r:?}"),
            _ = started_rx.recv() => {}
        }
        // The call is dropped here, with its stream open.
    }
    eventually("the server saw the call cancelled", || {
        server.probes.cancelled.load(Ordering::SeqCst) != 0
    })
    .await;
    c.close(HANG).await;
    server.stop().await;
}

/// A server request that arrives on a call's POST stream is answered by that call's own
/// handlers ([`CallOptions::input`]), not the client's.
#[tokio::test]
async fn a_server_request_on_a_calls_stream_is_answered_by_its_own_handlers() {
    let (url, log) = fake(|seen, log| {
        if seen.body["method"] == "tools/call" {
            let ask = json!({"jsonrpc": "2.0", "id": "srv1", "method": "roots/list"});
            let done = json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": {"content": []}});
            return format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: {ask}\r\n\r\ndata: {done}\r\n\r\n").into_bytes();
        }
        legacy_server(&[])(seen, log)
    })
    .await;
    let target = HttpTarget {
        url: url.clone(),
        headers: vec![],
        token: None,
        ca_file: None,
    };
    let roots = |uri: &str| vec![json!({"uri": uri, "name": "r"})];
    let options = ClientOptions {
        handlers: ClientHandlers::new().roots(roots("file:///client")),
        ..ClientOptions::default()
    };
    let c = McpClient::connect_http(target, options).unwrap();
    c.negotiate(EraPreference::Legacy, HANG).await.unwrap();
    let own = CallOptions {
        input: Some(ClientHandlers::new().roots(roots("file:///own"))),
        ..CallOptions::default()
    };
    c.call_tool_with("t", json!({}), &own).await.unwrap();
    let deadline = tokio::time::Instant::now() + HANG;
    let answer = loop {
        let found = log
            .lock()
            .unwrap()
            .iter()
            .find(|s| s.body["id"] == "srv1")
            .map(|s| s.body.clone());
        if let Some(a) = found {
            break a;
        }
        assert!(tokio::time::Instant::now() < deadline, "never answered");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        answer["result"]["roots"][0]["uri"], "file:///own",
        "{answer}"
    );
    c.close(HANG).await;
}
