//! Fault injection on the stdio server as a process (the `testbed` example): the client closes
//! the server's stdout, or both pipes, in the middle of calls that run long or write a lot.
//! The server must exit on its own with status 0, without a panic, and stop its calls.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};

/// A generous guard against hangs; never a performance assertion.
const HANG: Duration = Duration::from_secs(30);

/// The testbed example binary, next to this test's executable (`cargo test` builds it).
fn testbed() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    let path = profile_dir
        .join("examples")
        .join(format!("testbed{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.is_file(),
        "build the testbed example first: cargo build -p codomyrmex-mcp --example testbed"
    );
    path
}

fn spawn() -> Child {
    Command::new(testbed())
        .args(["--grace-ms", "200"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

async fn send(stdin: &mut ChildStdin, v: Value) -> bool {
    let mut line = serde_json::to_vec(&v).unwrap();
    line.push(b'\n');
    stdin.write_all(&line).await.is_ok() && stdin.flush().await.is_ok()
}

async fn start_calls(stdin: &mut ChildStdin) {
    assert!(send(stdin, json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "faults", "version": "0"}}})).await);
    assert!(
        send(
            stdin,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .await
    );
    for id in 1..=4 {
        assert!(send(stdin, json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "sleep", "arguments": {"ms": 600_000}}})).await);
    }
    // Calls that write a lot, modern and legacy.
    for id in 10..20 {
        let mut params = json!({"name": "big", "arguments": {"n": 200_000}});
        if id % 2 == 0 {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            });
        }
        assert!(
            send(
                stdin,
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
            )
            .await
        );
    }
}

/// Waits for the exit and returns the status code and stderr.
async fn finish(mut child: Child) -> (Option<i32>, String) {
    let mut stderr = child.stderr.take().unwrap();
    let status = tokio::time::timeout(HANG, child.wait())
        .await
        .expect("the server exited on its own")
        .unwrap();
    let mut text = String::new();
    stderr.read_to_string(&mut text).await.unwrap();
    (status.code(), text)
}

#[tokio::test]
async fn closing_stdout_mid_call_stops_the_server_cleanly() {
    let mut child = spawn();
    let mut stdin = child.stdin.take().unwrap();
    // Nobody reads the output, from the start.
    drop(child.stdout.take());
    start_calls(&mut stdin).await;
    // Keep stdin open and busy until the server notices and exits.
    let pinger = tokio::spawn(async move {
        for id in 100..10_000 {
            if !send(
                &mut stdin,
                json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
            )
            .await
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let (code, stderr) = finish(child).await;
    pinger.abort();
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    // The sleeping calls were stopped, not left to run.
    assert!(
        stderr.contains("stopped early") || stderr.contains("saw cancellation"),
        "stderr: {stderr}"
    );
}

#[tokio::test]
async fn a_client_that_vanishes_mid_call_stops_the_server_cleanly() {
    let mut child = spawn();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    start_calls(&mut stdin).await;
    // Read a little of the output, then close both pipes at once.
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(HANG, stdout.read(&mut buf))
        .await
        .expect("some output")
        .unwrap();
    assert!(n > 0);
    drop(stdout);
    drop(stdin);
    let (code, stderr) = finish(child).await;
    assert_eq!(code, Some(0), "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    assert!(
        stderr.contains("stopped early") || stderr.contains("saw cancellation"),
        "stderr: {stderr}"
    );
}
