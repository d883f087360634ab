//! Limits over real sockets, each tried with an attacker's request: oversized bodies and
//! headers, slow headers and bodies (slowloris), idle connections, request floods (rate limit),
//! too many concurrent requests and too many connections.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use codomyrmex_mcp::RateLimit;
use codomyrmex_mcp::transport::http::HttpConfig;
use http_support::*;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedReadHalf;
use tokio::task::JoinHandle;

fn list() -> Req {
    modern("tools/list", 1, json!({}))
}

/// The status line's code in raw response bytes.
fn status_of(raw: &[u8]) -> Option<u16> {
    let text = String::from_utf8_lossy(raw);
    text.lines().next()?.split_whitespace().nth(1)?.parse().ok()
}

/// The head of a JSON POST to `/mcp` on `s` that announces `len` body bytes.
fn post_head(s: &TestServer, len: usize) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json\r\ncontent-length: {len}\r\n\r\n",
        s.host()
    )
}

/// Starts a request line on `stream`, then sends its headers a byte every 50 ms (800 bytes,
/// 40 s in all); `Ok(false)` once the server stops taking them, `Ok(true)` if it took them
/// all, `Err` if [`HANG`] passed first.
async fn trickle_head(stream: &mut TcpStream) -> Result<bool, tokio::time::error::Elapsed> {
    stream.write_all(b"POST /mcp HTTP/1.1\r\n").await.unwrap();
    let trickler = async {
        for _ in 0..800 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            if stream.write_all(b"x").await.is_err() {
                return false;
            }
        }
        true
    };
    tokio::time::timeout(HANG, trickler).await
}

/// Sends on `stream` the head of a POST of `len` body bytes ([`post_head`]), then, on a task of
/// its own, the body a byte every `gap`; the read half, and the task, which ends `true` if
/// the whole body was sent.
async fn trickle_body(
    s: &TestServer,
    mut stream: TcpStream,
    len: usize,
    gap: Duration,
) -> (OwnedReadHalf, JoinHandle<bool>) {
    stream
        .write_all(post_head(s, len).as_bytes())
        .await
        .unwrap();
    let (rd, mut wr) = stream.into_split();
    let writer = tokio::spawn(async move {
        for _ in 0..len {
            tokio::time::sleep(gap).await;
            if wr.write_all(b" ").await.is_err() {
                return false;
            }
        }
        true
    });
    (rd, writer)
}

fn body_of(raw: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(raw);
    let (_, body) = text.split_once("\r\n\r\n").expect("a response body");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body:?}"))
}

#[tokio::test]
async fn oversized_body_is_413() {
    let s = start(HttpConfig {
        max_body_bytes: 1024,
        ..config()
    })
    .await;
    let big = "x".repeat(4096);
    let r = s
        .send(&modern(
            "tools/call",
            1,
            json!({"name": "echo", "arguments": {"text": big}}),
        ))
        .await;
    assert_eq!(r.status, 413);
    assert_eq!(r.error_code(), -32600);
    // Declared length alone is enough to refuse, even before the bytes arrive.
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    stream
        .write_all(post_head(&s, 100_000_000).as_bytes())
        .await
        .unwrap();
    let (raw, _) = read_until_close(&mut stream, HANG).await;
    assert_eq!(status_of(&raw), Some(413));
    // A small body still works.
    assert_eq!(s.send(&list()).await.status, 200);
    s.stop().await;
}

#[tokio::test]
async fn oversized_headers_are_431() {
    let s = start(HttpConfig {
        max_header_bytes: 4096,
        ..config()
    })
    .await;
    // Over the limit: the layer answers with a JSON-RPC body.
    let r = s.send(&list().header("x-padding", "a".repeat(5000))).await;
    assert_eq!(r.status, 431);
    assert_eq!(r.error_code(), -32600);
    // Far over it: the parser's hard cap answers 431 (no body) or closes the connection.
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    let raw_req = list()
        .header("x-padding", "a".repeat(64 * 1024))
        .to_bytes(&s.host());
    let _ = stream.write_all(&raw_req).await;
    let (raw, closed) = read_until_close(&mut stream, HANG).await;
    assert!(closed, "the connection must not stay open");
    if let Some(code) = status_of(&raw) {
        assert_eq!(code, 431);
    }
    // Many small headers count too.
    let mut req = list();
    for i in 0..200 {
        req = req.header(&format!("x-h{i}"), "v");
    }
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    let _ = stream.write_all(&req.to_bytes(&s.host())).await;
    let (raw, _) = read_until_close(&mut stream, HANG).await;
    assert_eq!(status_of(&raw), Some(431));
    // The server is unharmed.
    assert_eq!(s.send(&list()).await.status, 200);
    s.stop().await;
}

/// Sends the head of a POST with `len` body bytes, then trickles the body a byte at a time;
/// returns the raw response and whether the body was sent in full before the server answered.
async fn trickle(s: &TestServer, len: usize, gap: Duration) -> (Vec<u8>, bool) {
    let stream = TcpStream::connect(s.addr).await.unwrap();
    let (mut rd, writer) = trickle_body(s, stream, len, gap).await;
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let read = tokio::time::timeout(HANG, async {
        loop {
            match tokio::io::AsyncReadExt::read(&mut rd, &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    raw.extend_from_slice(&buf[..n]);
                    if raw.windows(4).any(|w| w == b"\r\n\r\n") {
                        // Got a head; the body (if any) is small and follows at once.
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        if let Ok(Ok(n)) = tokio::time::timeout(
                            Duration::from_millis(200),
                            tokio::io::AsyncReadExt::read(&mut rd, &mut buf),
                        )
                        .await
                        {
                            raw.extend_from_slice(&buf[..n]);
                        }
                        break;
                    }
                }
            }
        }
    })
    .await;
    assert!(read.is_ok(), "the server neither answered nor closed");
    let finished = writer.is_finished() && matches!(writer.await, Ok(true));
    (raw, finished)
}

#[tokio::test]
async fn slow_body_is_cut_off() {
    let s = start(HttpConfig {
        request_timeout: Duration::from_millis(300),
        ..config()
    })
    .await;
    // 400 bytes at one per 50 ms would take 20 s.
    let (raw, finished) = trickle(&s, 400, Duration::from_millis(50)).await;
    assert!(!finished, "the server waited for the whole slow body");
    match status_of(&raw) {
        Some(code) => {
            assert_eq!(code, 408);
            assert_eq!(body_of(&raw)["error"]["code"], -32600);
        }
        None => assert!(raw.is_empty(), "closed without a full answer"),
    }
    s.stop().await;
}

#[tokio::test]
async fn slow_headers_are_cut_off() {
    let s = start(HttpConfig {
        header_read_timeout: Duration::from_millis(300),
        ..config()
    })
    .await;
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    // Headers a byte at a time: would take 40 s.
    let finished = trickle_head(&mut stream).await;
    assert!(
        matches!(finished, Ok(false)),
        "the server kept a slowloris connection open"
    );
    s.stop().await;
}

/// Reads one response with a `Content-Length` body from a kept-alive connection.
async fn read_response(stream: &mut TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            let n = tokio::io::AsyncReadExt::read(stream, &mut buf)
                .await
                .unwrap();
            assert!(n > 0, "closed mid-response: {raw:?}");
            raw.extend_from_slice(&buf[..n]);
            if complete_response(&raw).is_some() {
                return raw;
            }
        }
    };
    tokio::time::timeout(HANG, read).await.expect("an answer")
}

/// The header and body deadlines share one timer per connection, armed for the first and
/// re-armed only when it fires: after requests that each set a later deadline, a slow head
/// and a slow body on the same connection are still cut off.
#[tokio::test]
async fn deadlines_hold_on_a_kept_alive_connection() {
    let s = start(HttpConfig {
        header_read_timeout: Duration::from_millis(300),
        request_timeout: Duration::from_millis(300),
        ..config()
    })
    .await;
    let kept_alive = || async {
        let mut stream = TcpStream::connect(s.addr).await.unwrap();
        // Spaced out, so that each request's deadlines fall after the first's, which
        // passes while they run.
        for _ in 0..4 {
            stream.write_all(&list().to_bytes(&s.host())).await.unwrap();
            assert_eq!(status_of(&read_response(&mut stream).await), Some(200));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        stream
    };
    // A slow head.
    let mut stream = kept_alive().await;
    let finished = trickle_head(&mut stream).await;
    assert!(
        matches!(finished, Ok(false)),
        "the server kept a slow head open on a kept-alive connection"
    );
    // A slow body: 400 bytes at one per 50 ms would take 20 s.
    let stream = kept_alive().await;
    let (mut rd, writer) = trickle_body(&s, stream, 400, Duration::from_millis(50)).await;
    let mut head = [0u8; 12];
    let got = tokio::time::timeout(
        HANG,
        tokio::io::AsyncReadExt::read_exact(&mut rd, &mut head),
    )
    .await
    .expect("the server neither answered nor closed");
    assert!(got.is_ok(), "closed without an answer");
    assert_eq!(
        status_of(&head),
        Some(408),
        "{:?}",
        String::from_utf8_lossy(&head)
    );
    writer.abort();
    s.stop().await;
}

#[tokio::test]
async fn idle_connections_are_closed() {
    let s = start(HttpConfig {
        idle_timeout: Duration::from_millis(300),
        keep_alive: Duration::from_millis(100),
        header_read_timeout: Duration::from_secs(60),
        ..config()
    })
    .await;
    // A connection that never sends anything.
    let mut silent = TcpStream::connect(s.addr).await.unwrap();
    let (_, closed) = read_until_close(&mut silent, HANG).await;
    assert!(closed, "an idle connection stayed open");
    // A kept-alive connection, idle after one request.
    let mut stream = TcpStream::connect(s.addr).await.unwrap();
    let req = list().to_bytes(&s.host());
    stream.write_all(&req).await.unwrap();
    let (raw, closed) = read_until_close(&mut stream, HANG).await;
    assert_eq!(status_of(&raw), Some(200));
    assert!(closed, "an idle keep-alive connection stayed open");
    // A live SSE stream is not idle: keep-alive comments flow while the tool runs.
    let mut open = s
        .open(&modern(
            "tools/call",
            2,
            json!({"name": "slow", "arguments": {"ms": 1200}, "_meta": {"progressToken": 1}}),
        ))
        .await;
    assert_eq!(open.status, 200);
    let e = tokio::time::timeout(HANG, open.next_event())
        .await
        .unwrap()
        .expect("the response survives the idle timeout");
    assert_eq!(e.data["result"]["structuredContent"]["slept"], 1200);
    s.stop().await;
}

#[tokio::test]
async fn request_floods_get_429() {
    let s = start(HttpConfig {
        rate_limit: Some(RateLimit {
            per_second: 0.01,
            burst: 3,
        }),
        ..config()
    })
    .await;
    for _ in 0..3 {
        assert_eq!(s.send(&list()).await.status, 200);
    }
    let r = s.send(&list()).await;
    assert_eq!(r.status, 429);
    let after: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!(after >= 1);
    assert_eq!(r.error_code(), -32000);
    s.stop().await;
}

#[tokio::test]
async fn too_many_concurrent_requests_get_503() {
    let s = start(HttpConfig {
        max_concurrent_requests: 1,
        ..config()
    })
    .await;
    let first = s.spawn_send(modern(
        "tools/call",
        1,
        json!({"name": "slow", "arguments": {"ms": 1500}}),
    ));
    eventually("the first call is in flight", || {
        s.probes.slow_started.load(Ordering::SeqCst) != 0
    })
    .await;
    let r = s.send(&list()).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.error_code(), -32000);
    let first = tokio::time::timeout(HANG, first).await.unwrap().unwrap();
    assert_eq!(first.status, 200);
    assert_eq!(s.send(&list()).await.status, 200, "the slot is free again");
    s.stop().await;
}

#[tokio::test]
async fn connections_beyond_the_cap_wait() {
    let s = start(HttpConfig {
        max_connections: 1,
        ..config()
    })
    .await;
    // The first connection holds the only slot (kept alive after a request).
    let mut a = TcpStream::connect(s.addr).await.unwrap();
    a.write_all(&list().to_bytes(&s.host())).await.unwrap();
    let mut buf = [0u8; 4096];
    let n = tokio::io::AsyncReadExt::read(&mut a, &mut buf)
        .await
        .unwrap();
    assert_eq!(status_of(&buf[..n]), Some(200));
    // The second waits in the backlog: no answer while the first is open.
    let mut b = TcpStream::connect(s.addr).await.unwrap();
    b.write_all(&list().to_bytes(&s.host())).await.unwrap();
    let early = tokio::time::timeout(
        Duration::from_millis(300),
        tokio::io::AsyncReadExt::read(&mut b, &mut buf),
    )
    .await;
    assert!(early.is_err(), "served beyond the connection cap");
    drop(a);
    let n = tokio::time::timeout(HANG, tokio::io::AsyncReadExt::read(&mut b, &mut buf))
        .await
        .expect("served once the slot is free")
        .unwrap();
    assert_eq!(status_of(&buf[..n]), Some(200));
    s.stop().await;
}
