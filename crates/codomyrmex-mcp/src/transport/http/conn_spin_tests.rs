//! Tests of the HTTP connection's input spin, on a served [`HttpServer`] whose [`Spin`] the
//! test holds: it counts every wait by outcome and every `poll(2)`, so what is checked is how
//! often the server spun and why it did not, never how long anything took.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::McpErrorDetail;
use crate::engine::Engine;
use crate::transport::http::conn_spin::{STREAK, ServerSpin};
use crate::transport::http::{HttpConfig, HttpServer};
use crate::transport::spin::{Spin, Spun};
use crate::{McpServerConfig, McpToolRegistry};

/// A generous guard against hangs; never a performance assertion.
const HANG: Duration = Duration::from_secs(30);

/// The longest spin, so that a client on a loaded machine still answers within it.
const BOUND: Duration = McpServerConfig::MAX_INPUT_SPIN;

struct Served {
    addr: std::net::SocketAddr,
    server: Arc<ServerSpin>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<()>,
}

impl Served {
    fn spin(&self) -> &Spin {
        &self.server.spin
    }

    /// Answers after which no spin was tried: other connections had recent calls.
    fn shared(&self) -> usize {
        self.server.shared.load(std::sync::atomic::Ordering::SeqCst)
    }

    async fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        s
    }

    fn waits(&self) -> usize {
        [
            Spun::Ready,
            Spun::Expired,
            Spun::Skipped,
            Spun::Overlapped,
            Spun::Elsewhere,
            Spun::Busy,
        ]
        .into_iter()
        .map(|o| self.spin().seen.count(o))
        .sum()
    }

    /// Until `n` waits have ended (polling, with a generous deadline).
    async fn until_waits(&self, n: usize) {
        let deadline = tokio::time::Instant::now() + HANG;
        while self.waits() < n || self.spin().is_spinning() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} of {n} waits",
                self.waits()
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Stops serving; the spin stays readable.
    async fn stop(&mut self) {
        drop(self.stop.take());
        tokio::time::timeout(HANG, &mut self.done)
            .await
            .expect("stopped in time")
            .unwrap();
    }
}

/// The server, with `echo` and `meet` (which returns once two calls are in it at once).
async fn serve(config: HttpConfig) -> Served {
    let registry = Arc::new(McpToolRegistry::new());
    registry
        .register(
            "echo",
            json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            |args: Map<String, Value>| -> Result<Value, McpErrorDetail> {
                Ok(json!({"echo": args.get("text").cloned().unwrap_or(Value::Null)}))
            },
        )
        .unwrap();
    let meeting = Arc::new(tokio::sync::Barrier::new(2));
    registry
        .register(
            "meet",
            json!({"type": "object"}),
            move |_: Map<String, Value>| {
                let meeting = meeting.clone();
                async move {
                    meeting.wait().await;
                    Ok::<Value, McpErrorDetail>(json!({"met": true}))
                }
            },
        )
        .unwrap();
    let engine = Engine::new(
        McpServerConfig::new("spin-tests", "0.0.0").with_rate_limit(None),
        registry,
    );
    let config = HttpConfig {
        bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        rate_limit: None,
        ..config
    };
    let server = HttpServer::new(engine, config);
    let listener = server.bind().await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server_spin = Arc::new(ServerSpin::new(Spin::new(BOUND).unwrap()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = server_spin.clone();
    let done = tokio::spawn(async move {
        server
            .serve_spinning(
                listener,
                async move {
                    let _ = stopped.await;
                },
                Some(serving),
            )
            .await
            .unwrap();
    });
    Served {
        addr,
        server: server_spin,
        stop: Some(stop),
        done,
    }
}

/// A 2026-07-28 `tools/call` POST.
fn call(addr: std::net::SocketAddr, id: u64, tool: &str, args: Value) -> Vec<u8> {
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
    "params": {"name": tool, "arguments": args, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }}}))
    .unwrap();
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\n\
         mcp-method: tools/call\r\nmcp-name: {tool}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    req
}

/// Reads one response (a `Content-Length` body or a chunked one); `(status line, body)`.
async fn response(stream: &mut TcpStream, pending: &mut Vec<u8>) -> (String, String) {
    loop {
        if let Some(head_end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&pending[..head_end]).to_ascii_lowercase();
            let start = head_end + 4;
            let end = if let Some(len) = head.lines().find_map(|l| {
                l.strip_prefix("content-length:")
                    .map(|v| v.trim().parse::<usize>().unwrap())
            }) {
                (pending.len() >= start + len).then_some(start + len)
            } else {
                assert!(head.contains("transfer-encoding: chunked"), "{head}");
                pending[start..]
                    .windows(5)
                    .position(|w| w == b"0\r\n\r\n")
                    .map(|p| start + p + 5)
            };
            if let Some(end) = end {
                let status = head.lines().next().unwrap().to_owned();
                let body = String::from_utf8_lossy(&pending[start..end]).into_owned();
                pending.drain(..end);
                return (status, body);
            }
        }
        let mut buf = [0u8; 8192];
        let n = tokio::time::timeout(HANG, stream.read(&mut buf))
            .await
            .expect("a response in time")
            .unwrap();
        assert!(n > 0, "the server closed the connection");
        pending.extend_from_slice(&buf[..n]);
    }
}

async fn echo_calls(s: &Served, stream: &mut TcpStream, ids: std::ops::Range<u64>) {
    let mut pending = Vec::new();
    for id in ids {
        let text = format!("t{id}");
        stream
            .write_all(&call(s.addr, id, "echo", json!({"text": text})))
            .await
            .unwrap();
        let (status, body) = response(stream, &mut pending).await;
        assert!(status.starts_with("http/1.1 200"), "{status} {body}");
        assert!(body.contains(&format!("\"echo\":\"{text}\"")), "{body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_spins_once_and_an_idle_connection_stops_polling() {
    let mut s = serve(HttpConfig::default()).await;
    let mut stream = s.connect().await;
    // Until the server's last STREAK calls all came over this connection, no spin is tried;
    // the first answer after that spins.
    echo_calls(&s, &mut stream, 1..STREAK).await;
    echo_calls(&s, &mut stream, STREAK..STREAK + 1).await;
    // Its spin finds no request (the client sends nothing): it ends by its bound.
    s.until_waits(1).await;
    assert_eq!(s.spin().seen.count(Spun::Expired), 1, "{:?}", s.spin().seen);
    // The answers before asked and did not spin (fewer when the client's next request was
    // already there as hyper read again: then there is nothing to ask).
    assert!(s.shared() < STREAK as usize, "{}", s.shared());
    let polls = s.spin().seen.polls();
    assert!(polls > 0);
    // Idle, the connection open, for several bounds (the scenario, not a wait for a
    // condition): no poll, no wait.
    tokio::time::sleep(BOUND * 5).await;
    assert_eq!((s.waits(), s.spin().seen.polls()), (1, polls));
    // Busy again, one call at a time: at most one spin per answer, never an overlap.
    echo_calls(&s, &mut stream, STREAK + 1..STREAK + 21).await;
    s.until_waits(2).await;
    drop(stream);
    s.stop().await;
    assert!(s.waits() <= 21, "{:?}", s.spin().seen);
    assert!(s.shared() < STREAK as usize, "{}", s.shared());
    assert_eq!(s.spin().seen.count(Spun::Overlapped), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_spin_after_streamed_answers() {
    let mut s = serve(HttpConfig {
        always_sse: true,
        ..HttpConfig::default()
    })
    .await;
    let mut stream = s.connect().await;
    let mut pending = Vec::new();
    for id in 1..6 {
        stream
            .write_all(&call(s.addr, id, "echo", json!({"text": "sse"})))
            .await
            .unwrap();
        let (status, body) = response(&mut stream, &mut pending).await;
        assert!(status.starts_with("http/1.1 200"), "{status}");
        assert!(body.contains("data: "), "an SSE answer: {body}");
    }
    // Each answer was a stream (no known size): the reads that followed did not spin, nor
    // asked whether to.
    tokio::time::sleep(BOUND * 2).await;
    assert_eq!((s.waits(), s.spin().seen.polls(), s.shared()), (0, 0, 0));
    drop(stream);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_several_connections_do_not_spin_until_one_runs_alone() {
    let mut s = serve(HttpConfig::default()).await;
    let (mut a, mut b) = (s.connect().await, s.connect().await);
    // Two calls that return only once both are in flight at once...
    a.write_all(&call(s.addr, 1, "meet", json!({})))
        .await
        .unwrap();
    b.write_all(&call(s.addr, 2, "meet", json!({})))
        .await
        .unwrap();
    let (mut pa, mut pb) = (Vec::new(), Vec::new());
    for (stream, pending) in [(&mut a, &mut pa), (&mut b, &mut pb)] {
        let (status, body) = response(stream, pending).await;
        assert!(body.contains("\"met\":true"), "{status} {body}");
    }
    // ...then the two connections one call at a time in turn, as many clients would be.
    for id in 0..2 * STREAK {
        let stream = if id % 2 == 0 { &mut a } else { &mut b };
        echo_calls(&s, stream, 10 + id..11 + id).await;
    }
    // The last answer, with its client idle, certainly asks (and is refused: the call before
    // came over the other connection); those before it asked too unless their next request
    // was already there.
    let deadline = tokio::time::Instant::now() + HANG;
    while s.shared() == 0 {
        assert!(tokio::time::Instant::now() < deadline, "no answer asked");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // No answer was followed by a spin, or a poll.
    assert_eq!((s.waits(), s.spin().seen.polls()), (0, 0));
    // One connection alone for STREAK calls: the first answer that may spin finds the
    // overlap of the meeting calls (no idle moment came since), the next one spins again.
    echo_calls(&s, &mut a, 100..100 + STREAK).await;
    s.until_waits(1).await;
    assert_eq!(
        s.spin().seen.count(Spun::Overlapped),
        1,
        "{:?}",
        s.spin().seen
    );
    echo_calls(&s, &mut a, 200..201).await;
    s.until_waits(2).await;
    assert!(
        s.spin().seen.count(Spun::Ready) + s.spin().seen.count(Spun::Expired) >= 1,
        "{:?}",
        s.spin().seen
    );
    drop((a, b));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_and_a_close_during_the_spin_are_served_as_without_it() {
    let mut s = serve(HttpConfig::default()).await;
    let mut stream = s.connect().await;
    // Three requests in one write: hyper reads the later ones from its buffer.
    let mut all = Vec::new();
    for id in 1..4 {
        all.extend(call(s.addr, id, "echo", json!({"text": format!("p{id}")})));
    }
    stream.write_all(&all).await.unwrap();
    let mut pending = Vec::new();
    for id in 1..4 {
        let (status, body) = response(&mut stream, &mut pending).await;
        assert!(status.starts_with("http/1.1 200"), "{status}");
        assert!(body.contains(&format!("\"echo\":\"p{id}\"")), "{body}");
    }
    // Closed at once, while the server may still be polling the socket.
    drop(stream);
    let mut again = s.connect().await;
    echo_calls(&s, &mut again, 4..6).await;
    drop(again);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_already_read_is_no_wait_for_the_next() {
    let mut s = serve(HttpConfig::default()).await;
    let (mut a, mut b) = (s.connect().await, s.connect().await);
    // One call short of the streak, one at a time.
    echo_calls(&s, &mut a, 1..STREAK).await;
    // The streak's last call and a call that waits for another connection, in one write:
    // after the first answer hyper finds the second request in its buffer, not a read that
    // would block, so the answer's spin never comes; while the second call waits, hyper
    // reads the socket to notice a client that went away, and that read is no wait for a
    // request either.
    let mut both = call(s.addr, STREAK, "echo", json!({"text": "last"}));
    both.extend(call(s.addr, STREAK + 1, "meet", json!({})));
    a.write_all(&both).await.unwrap();
    let mut pa = Vec::new();
    let (status, body) = response(&mut a, &mut pa).await;
    assert!(body.contains("\"echo\":\"last\""), "{status} {body}");
    // The waiting call is in flight: give hyper's reads time to happen (the scenario, not a
    // wait for a condition), then count.
    tokio::time::sleep(BOUND * 5).await;
    assert_eq!(s.waits(), 0, "{:?}", s.spin().seen);
    // The meeting ends both calls.
    b.write_all(&call(s.addr, 1, "meet", json!({})))
        .await
        .unwrap();
    let mut pb = Vec::new();
    for (stream, pending) in [(&mut a, &mut pa), (&mut b, &mut pb)] {
        let (status, body) = response(stream, pending).await;
        assert!(body.contains("\"met\":true"), "{status} {body}");
    }
    drop((a, b));
    s.stop().await;
    assert_eq!(s.spin().seen.count(Spun::Skipped), 0, "{:?}", s.spin().seen);
}

#[test]
fn the_configured_spin_and_its_environment_override() {
    let of = |configured: Duration, env: Option<&str>| {
        super::super::spin_of(configured, env).map(|s| s.bound())
    };
    let default = McpServerConfig::default().http_spin;
    assert_eq!(of(default, None), Some(Duration::from_micros(100)));
    // Zero, configured or from the environment, builds no spin: nothing ever polls.
    assert_eq!(of(Duration::ZERO, None), None);
    assert_eq!(of(default, Some("0")), None);
    assert_eq!(
        of(Duration::ZERO, Some("250")),
        Some(Duration::from_micros(250))
    );
    assert_eq!(of(default, Some("1.5")), Some(default), "ignored");
    assert_eq!(of(default, Some("999999999")), Some(BOUND), "capped");
}

/// The streak rule on its own, without a server: a connection spins after its answer only
/// when its last [`STREAK`] calls were the server's last calls, none of another connection
/// in between or since.
#[test]
fn a_connection_spins_only_while_its_calls_are_the_servers_latest() {
    use crate::transport::http::conn_spin::ConnSpin;
    let (_tx, rx) = std::os::unix::net::UnixStream::pair().unwrap();
    let server = Arc::new(ServerSpin::new(
        Spin::new(Duration::from_millis(1)).unwrap(),
    ));
    let (a, b) = (ConnSpin::new(server.clone()), ConnSpin::new(server.clone()));
    let answer = |c: &ConnSpin| {
        c.call_started();
        c.call_ended();
        c.response_ready(true);
    };
    let shared = || server.shared.load(std::sync::atomic::Ordering::SeqCst);
    for _ in 1..STREAK {
        answer(&a);
        a.read_pending(&rx, true);
    }
    assert_eq!(
        (shared(), server.spin.seen.polls()),
        (STREAK as usize - 1, 0)
    );
    answer(&a);
    a.read_pending(&rx, true);
    assert_eq!(
        server.spin.seen.count(Spun::Expired),
        1,
        "the streak's call spins"
    );
    // Another connection's call since this one's last: no spin.
    answer(&a);
    answer(&b);
    a.read_pending(&rx, true);
    assert_eq!(shared(), STREAK as usize, "b called after a's last call");
    // In between: the streak starts again.
    answer(&a);
    a.read_pending(&rx, true);
    assert_eq!(shared(), STREAK as usize + 1);
    for _ in 1..STREAK {
        answer(&a);
    }
    a.read_pending(&rx, true);
    assert_eq!(server.spin.seen.count(Spun::Expired), 2);
}
