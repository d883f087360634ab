//! Tests of the input spin: [`InputSpin::wait`] on real pipes, and the stdio transport with
//! the spin on its input pipe, which must answer exactly as without it: a slow client, end of
//! input during the spin, lines split across writes, big messages, many calls in flight.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::net::unix::pipe;

use super::*;
use crate::McpServerConfig;
use crate::engine::Engine;

/// A generous guard against hangs; never a performance assertion.
const HANG: Duration = Duration::from_secs(30);

/// The spins each behaviour is checked with: none, the default, the longest allowed.
const SPINS: [Duration; 3] = [
    Duration::ZERO,
    Duration::from_micros(100),
    McpServerConfig::MAX_STDIO_SPIN,
];

#[tokio::test]
async fn an_empty_pipe_is_polled_until_the_spin_has_passed() {
    let (_tx, rx) = pipe::pipe().unwrap();
    let spin = InputSpin::new(&rx, Duration::from_millis(1)).expect("a spin");
    assert_eq!(spin.wait(), Spun::Expired);
}

#[tokio::test]
async fn readable_input_ends_the_spin_and_is_left_unread() {
    let (mut tx, mut rx) = pipe::pipe().unwrap();
    let spin = InputSpin::new(&rx, McpServerConfig::MAX_STDIO_SPIN).expect("a spin");
    tx.write_all(b"x\n").await.unwrap();
    assert_eq!(spin.wait(), Spun::Ready);
    let mut got = [0u8; 2];
    tokio::io::AsyncReadExt::read_exact(&mut rx, &mut got)
        .await
        .unwrap();
    assert_eq!(&got, b"x\n", "the spin consumed nothing");
}

#[tokio::test]
async fn a_closed_input_ends_the_spin() {
    let (tx, rx) = pipe::pipe().unwrap();
    let spin = InputSpin::new(&rx, McpServerConfig::MAX_STDIO_SPIN).expect("a spin");
    drop(tx);
    assert_eq!(spin.wait(), Spun::Ready);
}

#[tokio::test]
async fn no_spin_while_a_call_is_in_flight_and_none_when_zero() {
    let (_tx, rx) = pipe::pipe().unwrap();
    let spin = InputSpin::new(&rx, Duration::from_millis(1)).expect("a spin");
    let call = spin.call_started();
    assert_eq!(spin.wait(), Spun::Skipped);
    drop(call);
    assert_eq!(spin.wait(), Spun::Expired);
    assert!(InputSpin::new(&rx, Duration::ZERO).is_none());
    assert_eq!(
        InputSpin::new(&rx, Duration::from_secs(3600)).map(|s| s.spin.bound()),
        Some(McpServerConfig::MAX_STDIO_SPIN),
        "capped"
    );
}

#[tokio::test]
async fn no_spin_after_overlapping_calls_and_a_spin_after_single_ones() {
    let (_tx, rx) = pipe::pipe().unwrap();
    let spin = InputSpin::new(&rx, Duration::from_millis(1)).expect("a spin");
    // One call at a time, the buffered-input guard overlapping it: a spin.
    let reading = spin.call_started();
    let call = spin.call();
    drop(reading);
    drop(call);
    assert_eq!(spin.wait(), Spun::Expired);
    // Two calls at once (a pipelining client): no spin when they are done...
    let (a, b) = (spin.call(), spin.call());
    drop(a);
    drop(b);
    assert_eq!(spin.wait(), Spun::Overlapped);
    // ...and the next spell is judged on its own.
    drop(spin.call());
    assert_eq!(spin.wait(), Spun::Expired);
}

struct Served {
    to_server: pipe::Sender,
    from_server: BufReader<DuplexStream>,
    done: tokio::task::JoinHandle<Result<(), super::super::StdioError>>,
}

fn serve(spin: Duration) -> Served {
    serve_watched(spin).0
}

/// [`serve`], and the spin, to see what it did.
fn serve_watched(spin: Duration) -> (Served, Option<Arc<InputSpin>>) {
    let registry = super::super::echo_registry();
    let config = McpServerConfig::default().with_rate_limit(None);
    let engine = Engine::new(config, registry);
    let (to_server, input) = pipe::pipe().unwrap();
    let (output, from_server) = tokio::io::duplex(256 * 1024);
    let spin = InputSpin::new(&input, spin).map(Arc::new);
    let watched = spin.clone();
    let done = tokio::spawn(super::super::serve_with(
        engine,
        input,
        output,
        Box::pin(std::future::pending()),
        spin,
    ));
    let served = Served {
        to_server,
        from_server: BufReader::new(from_server),
        done,
    };
    (served, watched)
}

fn call(id: u64, text: &str) -> Vec<u8> {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut line = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}, "_meta": meta}}))
    .unwrap();
    line.push(b'\n');
    line
}

async fn answer(from: &mut BufReader<DuplexStream>) -> Value {
    let mut line = String::new();
    let n = tokio::time::timeout(HANG, from.read_line(&mut line))
        .await
        .expect("an answer in time")
        .unwrap();
    assert!(n > 0, "the server closed its output");
    serde_json::from_str(&line).unwrap()
}

fn echoed(v: &Value) -> (u64, String) {
    (
        v["id"].as_u64().expect("an id"),
        v["result"]["content"][0]["text"]
            .as_str()
            .expect("a text block")
            .to_owned(),
    )
}

async fn end(s: Served) {
    drop(s.to_server);
    let outcome = tokio::time::timeout(HANG, s.done)
        .await
        .expect("serving ended in time");
    outcome.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_client_is_answered_after_the_spin_has_ended() {
    for spin in SPINS {
        let mut s = serve(spin);
        for id in 0..3 {
            s.to_server.write_all(&call(id, "slow")).await.unwrap();
            assert_eq!(
                echoed(&answer(&mut s.from_server).await),
                (id, "slow".into())
            );
            // Longer than any spin: the server has gone back to waiting (the scenario, not a
            // wait for a condition).
            tokio::time::sleep(McpServerConfig::MAX_STDIO_SPIN * 3).await;
        }
        end(s).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_of_input_during_the_spin_ends_serving() {
    for spin in SPINS {
        let mut s = serve(spin);
        s.to_server.write_all(&call(1, "x")).await.unwrap();
        assert_eq!(echoed(&answer(&mut s.from_server).await), (1, "x".into()));
        // At once, while the read loop is (with a spin) still polling.
        end(s).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_split_across_writes_are_read_whole() {
    for spin in SPINS {
        let mut s = serve(spin);
        let line = call(5, "split \"line\" é");
        for (i, piece) in line.chunks(7).enumerate() {
            s.to_server.write_all(piece).await.unwrap();
            s.to_server.flush().await.unwrap();
            if i % 3 == 0 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        assert_eq!(
            echoed(&answer(&mut s.from_server).await),
            (5, "split \"line\" é".into())
        );
        end(s).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_messages_and_a_too_long_line_are_answered_as_without_a_spin() {
    let big: String = "0123456789abcdef\"\\\n\u{1}é✓".repeat(20_000);
    for spin in SPINS {
        let mut s = serve(spin);
        let writer = {
            let big = big.clone();
            let mut to_server = s.to_server;
            tokio::spawn(async move {
                to_server.write_all(&call(1, &big)).await.unwrap();
                // Over the 4 MiB message limit: discarded and answered with -32600.
                let mut long = vec![b'x'; 5 * 1024 * 1024];
                long.push(b'\n');
                to_server.write_all(&long).await.unwrap();
                to_server.write_all(&call(2, "after")).await.unwrap();
                to_server
            })
        };
        // Answers to different requests may come in any order: the refusal is the read loop's
        // own, the calls' answers come from their tasks.
        let mut refusals = 0;
        let mut calls = Vec::new();
        for _ in 0..3 {
            let v = answer(&mut s.from_server).await;
            if v["id"].is_null() {
                assert_eq!(v["error"]["code"], -32600, "{v}");
                refusals += 1;
            } else {
                calls.push(echoed(&v));
            }
        }
        calls.sort();
        assert_eq!(refusals, 1);
        assert_eq!(calls, [(1, big.clone()), (2, "after".into())]);
        s.to_server = writer.await.unwrap();
        end(s).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_calls_in_flight_are_all_answered() {
    for spin in SPINS {
        let mut s = serve(spin);
        let mut lines = Vec::new();
        for id in 0..64 {
            lines.extend_from_slice(&call(id, &format!("c{id}")));
        }
        s.to_server.write_all(&lines).await.unwrap();
        let mut seen = BTreeSet::new();
        for _ in 0..64 {
            let (id, text) = echoed(&answer(&mut s.from_server).await);
            assert_eq!(text, format!("c{id}"));
            assert!(seen.insert(id), "answered twice: {id}");
        }
        assert_eq!(seen.len(), 64);
        end(s).await;
    }
}

/// A pipelining client's calls are answered one by one in the read loop (each finishes at its
/// first poll), never two in flight; they still overlap, so the writer does not spin after the
/// burst: a spin would hold a core that the client needs to send the next one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_spin_after_a_burst_of_calls_answered_in_the_read_loop() {
    let (mut s, spin) = serve_watched(McpServerConfig::MAX_STDIO_SPIN);
    let spin = spin.expect("a spin");
    let mut lines = Vec::new();
    for id in 0..64 {
        lines.extend_from_slice(&call(id, &format!("c{id}")));
    }
    s.to_server.write_all(&lines).await.unwrap();
    for _ in 0..64 {
        answer(&mut s.from_server).await;
    }
    // Longer than any spin: one that started has ended by now (the scenario, not a wait for a
    // condition).
    tokio::time::sleep(McpServerConfig::MAX_STDIO_SPIN * 3).await;
    let seen = &spin.spin.seen;
    assert_eq!(
        seen.count(Spun::Expired),
        0,
        "the writer spun after the burst"
    );
    assert!(
        seen.count(Spun::Overlapped) >= 1,
        "the burst was not seen to overlap"
    );
    end(s).await;
}
