//! Which runtime thread carries the calls of one keep-alive connection, in both eras: at one
//! call at a time they stay on one worker instead of crossing to the other on every call
//! (hyper's connection wakes itself while reading a body; tokio would hand a task woken
//! that way to another worker).
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use codomyrmex_mcp::McpErrorDetail;
use http_support::*;
use serde_json::{Map, Value, json};

const CALLS: usize = 100;

/// One response read from a blocking socket: its head and body.
fn read_response(stream: &mut std::net::TcpStream) -> (String, String) {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "closed mid-response");
        raw.extend_from_slice(&buf[..n]);
        if let Some(response) = complete_response(&raw) {
            return response;
        }
    }
}

/// How often the `thread` tool ran on another thread than for the call before, over
/// [`CALLS`] calls on one connection, made from a plain OS thread (not the runtime's).
async fn thread_changes(legacy_era: bool) -> usize {
    let probes = Arc::default();
    let registry = registry(&probes);
    let seen: Arc<Mutex<Vec<ThreadId>>> = Arc::default();
    let record = seen.clone();
    registry
        .register(
            "thread",
            json!({"type": "object"}),
            move |_: Map<String, Value>| -> Result<Value, McpErrorDetail> {
                record.lock().unwrap().push(std::thread::current().id());
                Ok(json!({}))
            },
        )
        .unwrap();
    let s = start_with(config(), registry, probes).await;
    let (addr, host) = (s.addr, s.host());
    let client = std::thread::spawn(move || {
        let mut stream = std::net::TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        let mut session = None;
        if legacy_era {
            let init = legacy("initialize", Some(0), initialize_body(), None);
            stream.write_all(&init.to_bytes(&host)).unwrap();
            let (head, _) = read_response(&mut stream);
            let sid = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("mcp-session-id")
                        .then(|| v.trim().to_owned())
                })
                .expect("a session id");
            let note = legacy("notifications/initialized", None, json!({}), Some(&sid));
            stream.write_all(&note.to_bytes(&host)).unwrap();
            read_response(&mut stream);
            session = Some(sid);
        }
        for id in 1..=CALLS as i64 {
            let params = json!({"name": "thread", "arguments": {}});
            let req = match &session {
                Some(sid) => legacy("tools/call", Some(id), params, Some(sid)),
                None => modern("tools/call", id, params),
            };
            stream.write_all(&req.to_bytes(&host)).unwrap();
            let (head, body) = read_response(&mut stream);
            assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
        }
    });
    tokio::task::spawn_blocking(move || client.join().unwrap())
        .await
        .unwrap();
    s.stop().await;
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), CALLS);
    seen.windows(2).filter(|w| w[0] != w[1]).count()
}

/// Two workers, as on the 2-core machines the benchmarks run on. Before, about every other
/// call moved to the other worker; a few moves remain possible (the worker that waits on the
/// I/O driver may change when both park), so the bound is a tenth of the calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connections_calls_stay_on_one_worker_in_both_eras() {
    for legacy_era in [false, true] {
        let changes = thread_changes(legacy_era).await;
        assert!(
            changes <= CALLS / 10,
            "legacy: {legacy_era}: {changes} of {CALLS} calls ran on another worker than the call before"
        );
    }
}
