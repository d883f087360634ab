//! Where the stdio read loop runs a call (`stdio_inline.rs`): in place when it finishes at its
//! first poll, on a task of its own when it waits, and on tasks of their own for a spell after
//! one held the loop too long. Each tool answers the id of the tokio task it ran on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::inline::{INLINE_BUDGET, SPAWN_SPELL};
use super::serve;
use crate::engine::Engine;
use crate::{ContentBlock, McpServerConfig, McpToolRegistry, ToolOutput};

/// A generous guard against hangs; never a performance assertion.
const HANG: Duration = Duration::from_secs(30);

/// The id of the task the tool runs on, as its text.
fn task_id() -> ToolOutput {
    let id = tokio::task::try_id().map_or("none".to_owned(), |id| id.to_string());
    ToolOutput::content(vec![ContentBlock::text(id)])
}

fn registry() -> Arc<McpToolRegistry> {
    let registry = Arc::new(McpToolRegistry::new());
    let schema = json!({"type": "object"});
    // Finishes at its first poll.
    registry
        .register("at_once", schema.clone(), |_: Map<String, Value>| task_id())
        .unwrap();
    // Waits on the runtime's timer: pending at its first poll, then woken through the waker
    // of its own task's poll (the first poll's is no waker at all).
    registry
        .register("waits", schema.clone(), |_: Map<String, Value>| async {
            tokio::time::sleep(Duration::from_millis(1)).await;
            task_id()
        })
        .unwrap();
    // Computes (here: sleeps its thread) past the budget without being marked blocking.
    registry
        .register("holds", schema, |_: Map<String, Value>| {
            std::thread::sleep(INLINE_BUDGET * 5);
            task_id()
        })
        .unwrap();
    registry
}

/// Calls `tool` and returns the id of the task it ran on.
async fn ran_on(
    to: &mut tokio::io::DuplexStream,
    from: &mut BufReader<tokio::io::DuplexStream>,
    id: u64,
    tool: &str,
) -> String {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut line = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": meta}}))
    .unwrap();
    line.push(b'\n');
    to.write_all(&line).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(HANG, from.read_line(&mut answer))
        .await
        .expect("an answer in time")
        .unwrap();
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["id"], json!(id), "{answer}");
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {answer}"))
        .to_owned()
}

#[tokio::test]
async fn calls_that_finish_at_once_run_in_the_read_loop_and_others_on_tasks() {
    let engine = Engine::new(McpServerConfig::default().with_rate_limit(None), registry());
    let (mut to, input) = tokio::io::duplex(64 * 1024);
    let (output, from) = tokio::io::duplex(64 * 1024);
    let mut from = BufReader::new(from);
    let done = tokio::spawn(serve(engine, input, output));

    // The read loop's task: every call that finishes at once runs on it.
    let read_loop = ran_on(&mut to, &mut from, 1, "at_once").await;
    assert_ne!(read_loop, "none");
    for id in 2..6 {
        assert_eq!(ran_on(&mut to, &mut from, id, "at_once").await, read_loop);
    }
    // A call that waits is answered from a task of its own.
    let waited = ran_on(&mut to, &mut from, 6, "waits").await;
    assert_ne!(waited, read_loop);
    assert_ne!(waited, "none");
    assert_eq!(ran_on(&mut to, &mut from, 7, "at_once").await, read_loop);

    // One that holds the loop past the budget runs there (its first poll is where that shows),
    // and the call after it goes to a task of its own.
    assert_eq!(ran_on(&mut to, &mut from, 8, "holds").await, read_loop);
    let after = ran_on(&mut to, &mut from, 9, "at_once").await;
    assert_ne!(after, read_loop);
    assert_ne!(after, "none");

    // Once the spell is over, the read loop runs them again.
    tokio::time::sleep(SPAWN_SPELL + Duration::from_millis(20)).await;
    assert_eq!(ran_on(&mut to, &mut from, 10, "at_once").await, read_loop);

    drop(to);
    tokio::time::timeout(HANG, done)
        .await
        .expect("serving ended in time")
        .unwrap()
        .unwrap();
}
