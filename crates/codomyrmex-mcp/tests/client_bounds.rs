//! What a hostile server can make `McpClient` hold is bounded (issue #26): `list_all` ends a
//! cursor cycle, and too many items or bytes, with a clear error instead of growing; a flood
//! of server-to-client requests during one call is answered with refusals past the bound of
//! requests in flight, and the call still completes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use codomyrmex_mcp::Era;
use codomyrmex_mcp::client::{ClientError, McpClient};
use codomyrmex_mcp::client::{ClientHandlers, ClientLimits, ClientOptions};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

const GUARD: Duration = Duration::from_secs(60);

fn line(v: &Value) -> Vec<u8> {
    let mut b = v.to_string().into_bytes();
    b.push(b'\n');
    b
}

/// A hand-written stdio peer that reads and writes at once (a reader task and a writer
/// task): each of the client's messages goes to `reply`, which queues lines for the writer.
fn fake_server<F>(options: ClientOptions, reply: F) -> McpClient
where
    F: Fn(&Value, &mpsc::UnboundedSender<Vec<u8>>) + Send + 'static,
{
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (sr, mut sw) = tokio::io::split(server_io);
    let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
    tokio::spawn(async move {
        while let Some(out) = rx.recv().await {
            if sw.write_all(&out).await.is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        let mut lines = BufReader::new(sr).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&l) else {
                continue;
            };
            reply(&msg, &tx);
        }
    });
    let (cr, cw) = tokio::io::split(client_io);
    McpClient::connect_with(cr, cw, Era::Legacy, options)
}

/// The answer to the request `m`.
fn answer(m: &Value, result: Value) -> Vec<u8> {
    line(&json!({"jsonrpc": "2.0", "id": m["id"], "result": result}))
}

/// Finding 2: `tools/list` pages that cycle a → b → a with a long `ttlMs`. Before the fix the
/// client walked 10,000 pages (served from its cache after the third request), holding
/// every page's items, and only then said "too many pages"; now the repeated cursor ends the
/// walk at once, with an error that names the method and the cursor.
#[tokio::test]
async fn a_cursor_cycle_ends_list_all_at_once_with_a_clear_error() {
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let client = fake_server(ClientOptions::default(), move |m, tx| {
        if m["method"] != "tools/list" {
            return;
        }
        seen.fetch_add(1, Ordering::SeqCst);
        let next = match m["params"]["cursor"].as_str() {
            None | Some("b") => "a",
            Some(_) => "b",
        };
        let tools: Vec<Value> = (0..100)
            .map(|i| json!({"name": format!("t{i}"), "inputSchema": {"type": "object"}}))
            .collect();
        let _ = tx.send(answer(
            m,
            json!({"tools": tools, "nextCursor": next, "ttlMs": 3_600_000}),
        ));
    });
    let outcome = tokio::time::timeout(GUARD, client.list_all("tools/list", "tools"))
        .await
        .expect("no hang");
    let Err(ClientError::Protocol(why)) = outcome else {
        panic!("expected a protocol error, got {outcome:?}");
    };
    assert!(why.contains("tools/list"), "{why}");
    assert!(why.contains("cursor \"a\""), "{why}");
    assert_eq!(
        asked.load(Ordering::SeqCst),
        3,
        "first page, a, b; a again ends it"
    );
}

/// Distinct cursors forever, 20 items a page: the default item bound (10,000 per list) ends
/// the walk after 500 pages; before the fix it went on to the 10,000th page (200,000 items).
#[tokio::test]
async fn an_endless_list_ends_at_the_item_bound() {
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let client = fake_server(ClientOptions::default(), move |m, tx| {
        if m["method"] != "prompts/list" {
            return;
        }
        let n = seen.fetch_add(1, Ordering::SeqCst);
        let prompts: Vec<Value> = (0..20)
            .map(|i| json!({"name": format!("p{n}.{i}")}))
            .collect();
        let _ = tx.send(answer(
            m,
            json!({"prompts": prompts, "nextCursor": format!("c{n}")}),
        ));
    });
    let outcome = tokio::time::timeout(GUARD, client.list_prompts())
        .await
        .expect("no hang");
    let Err(ClientError::Limit(why)) = outcome else {
        panic!("expected a limit error, got {outcome:?}");
    };
    assert!(why.contains("prompts/list"), "{why}");
    assert!(why.contains("10000 items"), "{why}");
    assert_eq!(asked.load(Ordering::SeqCst), 501);
}

/// 40 pages of one 1 MiB resource each: past the default byte bound (16 MiB per list) the
/// walk ends with an error; before the fix all 40 MiB were returned.
#[tokio::test]
async fn a_list_past_the_byte_bound_is_an_error() {
    let client = fake_server(ClientOptions::default(), move |m, tx| {
        if m["method"] != "resources/list" {
            return;
        }
        let n: usize = m["params"]["cursor"]
            .as_str()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let mut page = json!({"resources": [{"uri": "x:/big", "name": "x".repeat(1 << 20)}]});
        if n < 39 {
            page["nextCursor"] = json!((n + 1).to_string());
        }
        let _ = tx.send(answer(m, page));
    });
    let outcome = tokio::time::timeout(GUARD, client.list_resources())
        .await
        .expect("no hang");
    let Err(ClientError::Limit(why)) = outcome else {
        panic!("expected a limit error, got {:?}", outcome.map(|v| v.len()));
    };
    assert!(why.contains("resources/list"), "{why}");
    assert!(why.contains("16777216 bytes"), "{why}");
}

/// The bounds are the client's options: smaller ones end a list sooner, and a list within
/// them comes back whole.
#[tokio::test]
async fn the_list_bounds_are_configurable() {
    let options = ClientOptions {
        limits: ClientLimits {
            list_items: 5,
            list_bytes: 10_000,
            list_pages: 3,
            ..ClientLimits::default()
        },
        ..ClientOptions::default()
    };
    let client = fake_server(options, move |m, tx| {
        let n: usize = m["params"]["cursor"]
            .as_str()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let (key, per_page, pages) = match m["method"].as_str() {
            Some("tools/list") => ("tools", 2, 10),
            Some("prompts/list") => ("prompts", 1, 10),
            Some("resources/list") => ("resources", 1, 1),
            Some("resources/templates/list") => ("resourceTemplates", 1, 2),
            _ => return,
        };
        let items: Vec<Value> = (0..per_page)
            .map(|i| json!({"name": format!("i{n}.{i}"), "uri": "x:/", "uriTemplate": "x:/{a}", "inputSchema": {"type": "object"}}))
            .collect();
        let mut page = json!({ key: items });
        if n + 1 < pages {
            page["nextCursor"] = json!((n + 1).to_string());
        }
        if key == "resources" {
            page[key][0]["name"] = json!("y".repeat(20_000));
        }
        let _ = tx.send(answer(m, page));
    });
    let items = client.list_tools().await.unwrap_err();
    assert!(
        matches!(&items, ClientError::Limit(w) if w.contains("5 items")),
        "{items:?}"
    );
    let pages = client.list_prompts().await.unwrap_err();
    assert!(
        matches!(&pages, ClientError::Limit(w) if w.contains("3 pages")),
        "{pages:?}"
    );
    let bytes = client.list_resources().await.unwrap_err();
    assert!(
        matches!(&bytes, ClientError::Limit(w) if w.contains("10000 bytes")),
        "{bytes:?}"
    );
    assert_eq!(client.list_resource_templates().await.unwrap().len(), 2);
}

/// Counts the `roots/list` handlers running, and the most ever running at once.
struct Running {
    now: AtomicUsize,
    most: AtomicUsize,
}

struct RunningGuard(Arc<Running>);

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Finding 3: during one call the server sends 100,000 `roots/list` requests, and the
/// client's handler never answers. Before the fix each got a task kept in a map with no
/// bound (100,000 handlers running, nothing refused); now at most 64 run at once, every
/// other one is refused at once with a JSON-RPC error the server receives, and the call
/// still completes.
#[tokio::test]
async fn a_flood_of_server_requests_is_refused_past_the_bound() {
    const FLOOD: usize = 100_000;
    let running = Arc::new(Running {
        now: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
    });
    let counted = running.clone();
    let handlers = ClientHandlers::new().roots_with(move |_| {
        let n = counted.now.fetch_add(1, Ordering::SeqCst) + 1;
        counted.most.fetch_max(n, Ordering::SeqCst);
        let guard = RunningGuard(counted.clone());
        async move {
            let _guard = guard;
            std::future::pending::<()>().await;
            Ok(json!({"roots": []}))
        }
    });
    let refused = Arc::new(AtomicUsize::new(0));
    let (all_refused_tx, mut all_refused) = mpsc::unbounded_channel::<()>();
    let count = refused.clone();
    let options = ClientOptions {
        handlers,
        ..ClientOptions::default()
    };
    let client = fake_server(options, move |m, tx| {
        if m["method"] == "tools/call" {
            for i in 0..FLOOD {
                let _ = tx.send(line(
                    &json!({"jsonrpc": "2.0", "id": format!("r{i}"), "method": "roots/list"}),
                ));
            }
            let _ = tx.send(answer(
                m,
                json!({"content": [{"type": "text", "text": "done"}]}),
            ));
        } else if m["error"]["code"] == -32000
            && count.fetch_add(1, Ordering::SeqCst) + 1 == FLOOD - 64
        {
            let _ = all_refused_tx.send(());
        }
    });
    let result = tokio::time::timeout(GUARD, client.call_tool("flood", json!({})))
        .await
        .expect("no hang")
        .unwrap();
    assert_eq!(result["content"][0]["text"], "done", "{result}");
    let got = tokio::time::timeout(GUARD, all_refused.recv()).await;
    let most = running.most.load(Ordering::SeqCst);
    assert!(most <= 64, "{most} handlers ran at once");
    assert!(
        got.is_ok(),
        "refusals received: {} of {}",
        refused.load(Ordering::SeqCst),
        FLOOD - 64
    );
    assert_eq!(most, 64);
    assert_eq!(refused.load(Ordering::SeqCst), FLOOD - 64);
}

/// Notifications nobody takes are kept up to a bound in count and in bytes: during one
/// request the server sends 5,000 log messages of 10 KB, and the client never asks for
/// them until the answer came. Before the bound in bytes the queue kept 4,096 of them
/// (40 MB; 256 GiB with messages of the line limit); now at most 16 MiB.
#[tokio::test]
async fn notifications_not_taken_are_bounded_in_bytes() {
    let client = fake_server(ClientOptions::default(), move |m, tx| {
        if m["method"] != "ping" {
            return;
        }
        let note = line(
            &json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x".repeat(10_000)}}),
        );
        for _ in 0..5000 {
            let _ = tx.send(note.clone());
        }
        let _ = tx.send(answer(m, json!({})));
    });
    tokio::time::timeout(GUARD, client.request("ping", json!({})))
        .await
        .expect("no hang")
        .unwrap();
    let (mut kept, mut bytes) = (0usize, 0usize);
    while let Ok(Some(note)) =
        tokio::time::timeout(Duration::from_millis(500), client.next_notification()).await
    {
        assert_eq!(note["method"], "notifications/message");
        kept += 1;
        bytes += note.to_string().len();
    }
    assert!(kept > 1000, "{kept}");
    assert!(
        bytes <= ClientLimits::default().notification_bytes,
        "{kept} kept, {bytes} bytes"
    );
}

/// A 2026-07-28 task that asks for input at every poll: `task_result` answers 16 rounds,
/// then ends with an error. Before the bound it answered and polled forever.
#[tokio::test]
async fn a_task_that_keeps_asking_for_input_ends() {
    let updates = Arc::new(AtomicUsize::new(0));
    let counted = updates.clone();
    let options = ClientOptions {
        handlers: ClientHandlers::new().roots(vec![json!({"uri": "file:///r"})]),
        ..ClientOptions::default()
    };
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (sr, mut sw) = tokio::io::split(server_io);
    tokio::spawn(async move {
        let mut lines = BufReader::new(sr).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            let m: Value = serde_json::from_str(&l).unwrap();
            let result = match m["method"].as_str() {
                Some("tasks/get") => json!({
                    "taskId": "t1",
                    "status": "input_required",
                    "inputRequests": {"k": {"method": "roots/list", "params": {}}},
                }),
                Some("tasks/update") => {
                    counted.fetch_add(1, Ordering::SeqCst);
                    json!({})
                }
                _ => continue,
            };
            if sw.write_all(&answer(&m, result)).await.is_err() {
                return;
            }
        }
    });
    let (cr, cw) = tokio::io::split(client_io);
    let client = McpClient::connect_with(cr, cw, Era::Modern, options);
    let outcome = tokio::time::timeout(Duration::from_secs(20), client.task_result("t1"))
        .await
        .expect("no endless input loop");
    let Err(ClientError::Protocol(why)) = outcome else {
        panic!("{outcome:?}");
    };
    assert!(why.contains("after 16 rounds"), "{why}");
    assert_eq!(updates.load(Ordering::SeqCst), 16);
}
