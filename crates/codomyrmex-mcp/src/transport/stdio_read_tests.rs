//! Tests of the stdio read loop's line handling: a line that lies whole in the read buffer is
//! handled there, one that does not is gathered first, and both must read the same lines,
//! with the same limit, as a byte-at-a-time reader would.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

use super::{READ_BUFFER, serve};
use crate::McpServerConfig;
use crate::engine::Engine;

/// A generous guard against hangs; never a performance assertion.
const HANG: Duration = Duration::from_secs(30);

struct Served {
    to_server: DuplexStream,
    from_server: BufReader<DuplexStream>,
    done: tokio::task::JoinHandle<Result<(), super::StdioError>>,
}

fn start(max_message_size: usize) -> Served {
    let registry = super::echo_registry();
    let mut config = McpServerConfig::default().with_rate_limit(None);
    config.max_message_size = max_message_size;
    let engine = Engine::new(config, registry);
    let (to_server, input) = tokio::io::duplex(4 * READ_BUFFER);
    let (output, from_server) = tokio::io::duplex(4 * READ_BUFFER);
    let done = tokio::spawn(serve(engine, input, output));
    Served {
        to_server,
        from_server: BufReader::new(from_server),
        done,
    }
}

/// A `tools/call` of echo, padded with leading spaces to `len` bytes (newline not counted).
fn call(id: u64, text: &str, len: usize) -> Vec<u8> {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": text}, "_meta": meta}}))
    .unwrap();
    assert!(body.len() <= len, "{} > {len}", body.len());
    let mut line = vec![b' '; len - body.len()];
    line.extend_from_slice(&body);
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

async fn end(s: Served) {
    drop(s.to_server);
    let outcome = tokio::time::timeout(HANG, s.done)
        .await
        .expect("serving ended in time");
    outcome.unwrap().unwrap();
}

#[tokio::test]
async fn a_line_of_exactly_the_limit_is_handled_and_one_byte_more_is_refused() {
    const MAX: usize = 400;
    // Whole in one write (the line lies in the read buffer) and a byte at a time (it is
    // gathered across reads).
    for split in [false, true] {
        let mut s = start(MAX);
        let mut bytes = call(1, "at the limit", MAX);
        bytes.extend_from_slice(&call(2, "one over", MAX + 1));
        bytes.extend_from_slice(&call(3, "after", MAX));
        if split {
            for b in &bytes {
                s.to_server.write_all(&[*b]).await.unwrap();
            }
        } else {
            s.to_server.write_all(&bytes).await.unwrap();
        }
        let mut answers = BTreeMap::new();
        let mut refused = 0;
        for _ in 0..3 {
            let v = answer(&mut s.from_server).await;
            if v["id"].is_null() {
                assert_eq!(v["error"]["code"], -32600, "{v}");
                refused += 1;
            } else {
                let text = v["result"]["content"][0]["text"].as_str().unwrap();
                answers.insert(v["id"].as_u64().unwrap(), text.to_owned());
            }
        }
        assert_eq!(refused, 1, "split: {split}");
        let want = BTreeMap::from([(1, "at the limit".into()), (3, "after".into())]);
        assert_eq!(answers, want, "split: {split}");
        end(s).await;
    }
}

#[tokio::test]
async fn lines_across_the_read_buffer_boundary_are_each_read_once() {
    // Lines of many lengths, blank and whitespace-only lines between them, in one write of
    // several read buffers: some lines lie whole in the buffer, some straddle its end.
    let mut s = start(4 * 1024 * 1024);
    let mut bytes = Vec::new();
    let mut want = BTreeMap::new();
    let mut id = 0;
    while bytes.len() < 3 * READ_BUFFER + 1000 {
        let text = "x".repeat((id as usize * 7919) % 20_000);
        bytes.extend_from_slice(&call(id, &text, 300 + text.len()));
        bytes.extend_from_slice(if id % 3 == 0 { b"\n" } else { b" \t\r\n" });
        want.insert(id, text);
        id += 1;
    }
    let writer = {
        let mut to_server = s.to_server;
        tokio::spawn(async move {
            to_server.write_all(&bytes).await.unwrap();
            to_server
        })
    };
    let mut got = BTreeMap::new();
    for _ in 0..want.len() {
        let v = answer(&mut s.from_server).await;
        let id = v["id"].as_u64().expect("an answer to a call");
        let text = v["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            got.insert(id, text.to_owned()).is_none(),
            "answered twice: {id}"
        );
    }
    assert_eq!(got, want);
    s.to_server = writer.await.unwrap();
    end(s).await;
}
