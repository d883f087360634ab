//! Tests of the client's answer spin on loopback sockets: the spin counts every wait by
//! outcome, so what is checked is when the client spun and why it did not, never how long
//! anything took.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read as _, Write as _};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use super::*;

/// A loopback connection: the client's end wrapped on `spin`, and the server's end.
async fn pair(spin: &Arc<AnswerSpin>) -> (SpinningTcp, TcpStream) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap())
        .await
        .unwrap();
    let (server, _) = listener.accept().await.unwrap();
    (SpinningTcp::new(client, Some(spin.clone())), server)
}

/// One read of `s`, polled once: `None` when it would block.
async fn read_once(s: &mut SpinningTcp) -> Option<usize> {
    std::future::poll_fn(|cx| {
        let mut bytes = [0u8; 64];
        let mut buf = ReadBuf::new(&mut bytes);
        match Pin::new(&mut *s).poll_read(cx, &mut buf) {
            Poll::Ready(r) => Poll::Ready(r.map(|()| Some(buf.filled().len())).unwrap()),
            Poll::Pending => Poll::Ready(None),
        }
    })
    .await
}

async fn request(s: &mut SpinningTcp) {
    s.write_all(b"ping").await.unwrap();
    s.flush().await.unwrap();
}

fn waits(spin: &AnswerSpin) -> [usize; 5] {
    [
        Spun::Ready,
        Spun::Expired,
        Spun::Skipped,
        Spun::Overlapped,
        Spun::Elsewhere,
    ]
    .map(|o| spin.seen().count(o))
}

#[tokio::test]
async fn a_flushed_requests_answer_is_spun_for_once() {
    let spin = AnswerSpin::new(crate::McpServerConfig::MAX_INPUT_SPIN).unwrap();
    let (mut client, server) = pair(&spin).await;
    // The server answers from a thread of its own, while the client's thread spins.
    let mut server = server.into_std().unwrap();
    server.set_nonblocking(false).unwrap();
    let peer = std::thread::spawn(move || {
        let mut got = [0u8; 4];
        server.read_exact(&mut got).unwrap();
        server.write_all(b"pong").unwrap();
        server
    });
    request(&mut client).await;
    let first = read_once(&mut client).await;
    let mut answer = [0u8; 4];
    let _server = peer.join().unwrap();
    if first.is_none() {
        client.read_exact(&mut answer).await.unwrap();
        assert_eq!(&answer, b"pong");
    }
    let [ready, expired, skipped, overlapped, elsewhere] = waits(&spin);
    // The answer came first (no wait), or the one wait ended when it came or at the bound
    // (a loaded machine): either way never skipped, and at most once per request.
    assert_eq!((skipped, overlapped, elsewhere), (0, 0, 0));
    assert_eq!(ready + expired, usize::from(first.is_none()));
    // Nothing was written since: a read that would block now is no answer awaited.
    assert_eq!(read_once(&mut client).await, None);
    assert_eq!(waits(&spin).iter().sum::<usize>(), ready + expired);
}

#[tokio::test]
async fn no_spin_while_another_call_of_the_client_is_in_flight() {
    let spin = AnswerSpin::new(crate::McpServerConfig::MAX_INPUT_SPIN).unwrap();
    let (mut a, _a_server) = pair(&spin).await;
    let (mut b, mut b_server) = pair(&spin).await;
    request(&mut a).await;
    request(&mut b).await;
    assert_eq!(read_once(&mut a).await, None);
    assert_eq!(
        waits(&spin),
        [0, 0, 1, 0, 0],
        "skipped: two calls in flight"
    );
    // b's answer arrives: b is no longer in flight. Its read may still find the socket not
    // yet readable (the runtime has not seen the event), and then waits once too: skipped,
    // a being in flight.
    b_server.write_all(b"pong").await.unwrap();
    let mut answer = [0u8; 4];
    b.read_exact(&mut answer).await.unwrap();
    let after_b = waits(&spin);
    assert!(
        after_b == [0, 0, 1, 0, 0] || after_b == [0, 0, 2, 0, 0],
        "{after_b:?}"
    );
    // a has been waited for once: reading it again is no new wait.
    assert_eq!(read_once(&mut a).await, None);
    assert_eq!(waits(&spin), after_b, "one wait per request");
    // The next request, alone now, is told the calls overlapped (the busy spell that ended
    // had two); the one after that spins.
    let (mut c, mut c_server) = pair(&spin).await;
    drop(a);
    let skipped = after_b[2];
    for expected in [[0, 0, skipped, 1, 0], [0, 1, skipped, 1, 0]] {
        request(&mut c).await;
        assert_eq!(read_once(&mut c).await, None);
        assert_eq!(waits(&spin), expected);
        c_server.write_all(b"pong").await.unwrap();
        c.read_exact(&mut answer).await.unwrap();
    }
}

/// A request the server answers only after the client's read would have blocked.
async fn late_exchange(client: &mut SpinningTcp, server: &mut TcpStream) {
    request(client).await;
    assert_eq!(read_once(client).await, None);
    let mut got = [0u8; 4];
    server.read_exact(&mut got).await.unwrap();
    server.write_all(b"pong").await.unwrap();
    client.read_exact(&mut got).await.unwrap();
    assert_eq!(&got, b"pong");
}

#[tokio::test]
async fn after_an_unanswered_spin_the_next_requests_are_not_spun_for() {
    let spin = AnswerSpin::new(Duration::from_micros(200)).unwrap();
    let (mut client, mut server) = pair(&spin).await;
    late_exchange(&mut client, &mut server).await;
    assert_eq!(
        waits(&spin),
        [0, 1, 0, 0, 0],
        "nothing came: the spin expired"
    );
    for _ in 0..REST_AFTER_EXPIRED {
        late_exchange(&mut client, &mut server).await;
    }
    assert_eq!(waits(&spin), [0, 1, 0, 0, 0], "resting");
    late_exchange(&mut client, &mut server).await;
    assert_eq!(waits(&spin), [0, 2, 0, 0, 0], "spun again");
}
