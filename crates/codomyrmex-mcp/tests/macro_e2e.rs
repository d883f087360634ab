//! `#[mcp_tool]` tools called through a server, end to end, in both protocol eras.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::{
    Era, McpErrorDetail, McpServer, McpServerConfig, McpToolRegistry, ToolContext, mcp_tool,
    mcp_tools,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Names the thread it runs on.
#[mcp_tool(name = "thread.blocking", blocking)]
fn on_the_blocking_pool() -> String {
    format!("{:?}", std::thread::current().id())
}

/// Adds two integers.
#[mcp_tool(name = "math.add", read_only, idempotent)]
fn add(a: i64, #[arg(default = 10)] b: i64) -> i64 {
    a + b
}

#[derive(Deserialize, JsonSchema)]
struct Rectangle {
    width: f64,
    height: f64,
}

#[derive(Serialize, JsonSchema)]
struct Measures {
    area: f64,
    perimeter: f64,
}

/// Measures a rectangle.
#[mcp_tool(name = "geometry.measure")]
async fn measure(rectangle: Rectangle) -> Measures {
    Measures {
        area: rectangle.width * rectangle.height,
        perimeter: 2.0 * (rectangle.width + rectangle.height),
    }
}

/// Reads a file.
#[mcp_tool(name = "file_utility.read_file_content")]
fn read_file_content(path: String) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

#[mcp_tool(name = "checks.positive")]
fn positive(n: i64) -> Result<i64, String> {
    if n > 0 {
        Ok(n)
    } else {
        Err(format!("{n} is not positive"))
    }
}

/// Reports progress and echoes what the context says.
#[mcp_tool(name = "context.inspect")]
async fn inspect(cx: &ToolContext, steps: u32) -> Value {
    for step in 1..=steps {
        cx.progress(f64::from(step), Some(f64::from(steps)), Some("working"));
    }
    json!({
        "tool": cx.tool_name(),
        "era": format!("{:?}", cx.era()),
        "trace": cx.meta().get("trace"),
        "cancelled": cx.is_cancelled(),
    })
}

#[mcp_tool(name = "slow.sleep", timeout = "50ms")]
async fn sleep(cx: ToolContext) -> bool {
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs(30)) => true,
        () = cx.cancelled() => false,
    }
}

struct Ledger {
    total: AtomicU64,
}

#[mcp_tools]
impl Ledger {
    /// Adds to the ledger and returns the new total.
    #[mcp_tool(name = "ledger.deposit")]
    fn deposit(&self, amount: u64) -> Result<u64, McpErrorDetail> {
        if amount == 0 {
            return Err(McpErrorDetail::new("ValueError", "amount must be positive"));
        }
        Ok(self.total.fetch_add(amount, Ordering::SeqCst) + amount)
    }
}

fn server(ledger: Arc<Ledger>) -> McpServer {
    let registry = McpToolRegistry::discovered().unwrap();
    registry.register_methods(ledger).unwrap();
    McpServer::new(
        McpServerConfig::new("macro-e2e", "1.0.0"),
        Arc::new(registry),
    )
}

async fn connect(server: &McpServer, era: Era) -> McpClient {
    let client = McpClient::in_memory(server, era);
    client.initialize().await.unwrap();
    client
}

const ERAS: [Era; 2] = [Era::Legacy, Era::Modern];

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test(flavor = "current_thread")]
async fn listed_tools_carry_the_derived_definitions() {
    let server = server(Arc::new(Ledger {
        total: AtomicU64::new(0),
    }));
    for era in ERAS {
        let client = connect(&server, era).await;
        let tools = client.list_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(
            names,
            [
                "checks.positive",
                "context.inspect",
                "file_utility.read_file_content",
                "geometry.measure",
                "ledger.deposit",
                "math.add",
                "slow.sleep",
                "thread.blocking",
            ],
            "{era:?}"
        );
        let add = tools.iter().find(|t| t["name"] == "math.add").unwrap();
        assert_eq!(add["description"], "Adds two integers.");
        assert_eq!(
            add["inputSchema"],
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX},
                    "b": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX, "default": 10},
                },
                "required": ["a"],
            })
        );
        assert_eq!(
            add["outputSchema"],
            json!({
                "type": "object",
                "properties": {"result": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX}},
                "required": ["result"],
            })
        );
        assert_eq!(
            add["annotations"],
            json!({"readOnlyHint": true, "idempotentHint": true})
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn results_arrive_as_structured_content() {
    let server = server(Arc::new(Ledger {
        total: AtomicU64::new(0),
    }));
    for era in ERAS {
        let client = connect(&server, era).await;
        let sum = client
            .call_tool("math.add", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert_eq!(sum["structuredContent"], json!({"result": 5}), "{era:?}");
        assert_eq!(sum.get("isError"), None);
        assert_eq!(text(&sum), r#"{"result":5}"#);

        let defaulted = client.call_tool("math.add", json!({"a": 2})).await.unwrap();
        assert_eq!(defaulted["structuredContent"], json!({"result": 12}));

        let measures = client
            .call_tool(
                "geometry.measure",
                json!({"rectangle": {"width": 2.0, "height": 3.0}}),
            )
            .await
            .unwrap();
        assert_eq!(
            measures["structuredContent"],
            json!({"area": 6.0, "perimeter": 10.0})
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn errors_become_tool_failures() {
    let server = server(Arc::new(Ledger {
        total: AtomicU64::new(0),
    }));
    let missing = std::env::temp_dir().join("codomyrmex-mcp-macro-e2e-no-such-file");
    for era in ERAS {
        let client = connect(&server, era).await;
        let io = client
            .call_tool(
                "file_utility.read_file_content",
                json!({"path": missing.to_string_lossy()}),
            )
            .await
            .unwrap();
        assert_eq!(io["isError"], true, "{era:?}: {io}");
        assert!(text(&io).starts_with("FileNotFoundError: "), "{io}");
        assert!(text(&io).contains("\"errno\""), "{io}");

        let refused = client
            .call_tool("checks.positive", json!({"n": -1}))
            .await
            .unwrap();
        assert_eq!(refused["isError"], true);
        assert_eq!(text(&refused), "ToolError: -1 is not positive");

        let rejected = client
            .call_tool("ledger.deposit", json!({"amount": 0}))
            .await
            .unwrap();
        assert_eq!(rejected["isError"], true);
        assert_eq!(text(&rejected), "ValueError: amount must be positive");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn arguments_that_cannot_be_read_name_the_parameter() {
    let server = server(Arc::new(Ledger {
        total: AtomicU64::new(0),
    }));
    for era in ERAS {
        let client = connect(&server, era).await;
        // Valid against the schema (an integer), but not readable as an i64.
        let overflow = client
            .call_tool("math.add", json!({"a": 1.0, "b": 1}))
            .await
            .unwrap();
        assert_eq!(overflow["isError"], true, "{era:?}: {overflow}");
        let message = text(&overflow);
        assert!(
            message.starts_with("ValidationError: Argument \"a\" is invalid"),
            "{message}"
        );
        assert!(message.contains(r#""parameter":"a""#), "{message}");

        // Invalid against the schema: the registry refuses it before the tool runs.
        let missing = client.call_tool("math.add", json!({"b": 1})).await.unwrap();
        assert_eq!(missing["isError"], true);
        assert!(text(&missing).starts_with("ValidationError: "), "{missing}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_context_reaches_the_tool() {
    let server = server(Arc::new(Ledger {
        total: AtomicU64::new(0),
    }));
    for era in ERAS {
        let client = connect(&server, era).await;
        let result = client
            .request(
                "tools/call",
                json!({
                    "name": "context.inspect",
                    "arguments": {"steps": 2},
                    "_meta": {"progressToken": "p-1", "trace": "abc"},
                }),
            )
            .await
            .unwrap();
        assert_eq!(
            result["structuredContent"],
            json!({"result": {
                "tool": "context.inspect",
                "era": format!("{era:?}"),
                "trace": "abc",
                "cancelled": false,
            }}),
            "{era:?}"
        );
        for step in [1, 2] {
            let note = client.next_notification().await.unwrap();
            assert_eq!(note["method"], "notifications/progress", "{note}");
            assert_eq!(note["params"]["progressToken"], "p-1");
            assert_eq!(note["params"]["progress"], f64::from(step));
            assert_eq!(note["params"]["total"], 2.0);
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_timeout_argument_bounds_the_call() {
    let server = server(Arc::new(Ledger {
        total: AtomicU64::new(0),
    }));
    for era in ERAS {
        let client = connect(&server, era).await;
        let started = std::time::Instant::now();
        let result = client.call_tool("slow.sleep", json!({})).await.unwrap();
        assert_eq!(result["isError"], true, "{era:?}: {result}");
        assert!(text(&result).starts_with("TIMEOUT: "), "{result}");
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}

#[tokio::test(flavor = "current_thread")]
async fn methods_serve_their_state() {
    let ledger = Arc::new(Ledger {
        total: AtomicU64::new(0),
    });
    let server = server(ledger.clone());
    for (era, expected) in ERAS.into_iter().zip([5, 10]) {
        let client = connect(&server, era).await;
        let total = client
            .call_tool("ledger.deposit", json!({"amount": 5}))
            .await
            .unwrap();
        assert_eq!(total["structuredContent"], json!({"result": expected}));
    }
    assert_eq!(ledger.total.load(Ordering::SeqCst), 10);
}

/// `#[mcp_tool(blocking)]` runs the body on the blocking pool: on a current-thread runtime
/// an ordinary sync tool runs on the test's own thread, this one never does.
#[tokio::test(flavor = "current_thread")]
async fn blocking_tools_run_on_the_blocking_pool() {
    let registration = codomyrmex_mcp::ToolRegistration::of(on_the_blocking_pool).unwrap();
    assert!(registration.settings.blocking);
    assert!(
        !codomyrmex_mcp::ToolRegistration::of(add)
            .unwrap()
            .settings
            .blocking
    );
    let here = format!("{:?}", std::thread::current().id());
    let server = server(Arc::new(Ledger {
        total: AtomicU64::new(0),
    }));
    for era in ERAS {
        let client = connect(&server, era).await;
        let r = client
            .call_tool("thread.blocking", json!({}))
            .await
            .unwrap();
        let there = r["structuredContent"]["result"].as_str().unwrap();
        assert!(there.starts_with("ThreadId("), "{r}");
        assert_ne!(there, here, "{era:?}");
    }
}
