//! `McpToolRegistry::execute`, the direct call (the Python package's), runs under the one
//! execution policy: the driver's deadline, unwind guard and blocking pool, on tokio.

use std::time::Duration;

use codomyrmex_mcp::{McpToolCall, McpToolRegistry, ToolDefinition, ToolOutput};
use codomyrmex_mcp::{ToolRegistration, ToolSettings};
use serde_json::{Map, json};

fn registry(name: &str, settings: ToolSettings, handler: fn() -> ToolOutput) -> McpToolRegistry {
    let tools = McpToolRegistry::new();
    let definition = ToolDefinition::new(name, json!({"type": "object"}));
    let registration = ToolRegistration::new(
        definition,
        move |_: Map<String, serde_json::Value>| async move { handler() },
    )
    .with_settings(settings);
    assert!(tools.register_tool(registration).is_ok());
    tools
}

fn call(name: &str) -> McpToolCall {
    McpToolCall::new(name, Map::new())
}

/// A tool that never answers ends at its timeout with `TIMEOUT`, instead of holding its
/// caller forever.
#[tokio::test(start_paused = true)]
async fn execute_ends_a_call_at_its_deadline() {
    let tools = McpToolRegistry::new();
    let hang =
        |_: Map<String, serde_json::Value>| async { std::future::pending::<ToolOutput>().await };
    tools
        .register_tool(
            ToolRegistration::new(ToolDefinition::new("hang", json!({"type": "object"})), hang)
                .with_settings(ToolSettings {
                    timeout: Some(Duration::from_secs(2)),
                    ..ToolSettings::default()
                }),
        )
        .unwrap();
    let result = tokio::time::timeout(Duration::from_secs(3600), tools.execute(&call("hang")))
        .await
        .expect("execute ended the call at the tool's timeout");
    let error = result.error().expect("a failure");
    assert_eq!(error.error_type, "TIMEOUT", "{error:?}");
    assert!(error.error_message.contains("2000 ms"), "{error:?}");
}

/// Without a timeout of its own, a call gets the default `tool_timeout` (60 s).
#[tokio::test(start_paused = true)]
async fn execute_applies_the_default_tool_timeout() {
    let tools = McpToolRegistry::new();
    let hang =
        |_: Map<String, serde_json::Value>| async { std::future::pending::<ToolOutput>().await };
    tools
        .register_tool(ToolRegistration::new(
            ToolDefinition::new("hang", json!({"type": "object"})),
            hang,
        ))
        .unwrap();
    let started = tokio::time::Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(3600), tools.execute(&call("hang")))
        .await
        .expect("execute ended the call at the default timeout");
    assert_eq!(
        result.error().map(|e| e.error_type.as_str()),
        Some("TIMEOUT")
    );
    assert_eq!(started.elapsed(), Duration::from_secs(60));
}

/// A panicking handler, blocking or not, still gives an `InternalError` failure, and the
/// registry goes on serving.
#[tokio::test]
async fn execute_turns_a_panic_into_a_failure() {
    for blocking in [false, true] {
        let tools = registry(
            "boom",
            ToolSettings {
                blocking,
                ..ToolSettings::default()
            },
            || panic!("boom"),
        );
        let result = tools.execute(&call("boom")).await;
        let error = result.error().expect("a failure");
        assert_eq!(error.error_type, "InternalError", "{error:?}");
        assert_eq!(
            error.error_message,
            "Tool boom failed with an internal error"
        );
        let again = tools.execute(&call("boom")).await;
        assert!(again.is_failure(), "the registry still answers");
    }
}

/// A blocking tool runs on tokio's blocking pool, not on the caller's thread.
#[tokio::test(flavor = "current_thread")]
async fn execute_runs_a_blocking_tool_off_the_callers_thread() {
    static RAN_ON: std::sync::Mutex<Option<std::thread::ThreadId>> = std::sync::Mutex::new(None);
    let tools = registry(
        "block",
        ToolSettings {
            blocking: true,
            ..ToolSettings::default()
        },
        || {
            *RAN_ON.lock().unwrap() = Some(std::thread::current().id());
            ToolOutput::content(Vec::new())
        },
    );
    let result = tools.execute(&call("block")).await;
    assert!(!result.is_failure(), "{result:?}");
    let ran_on = RAN_ON.lock().unwrap().expect("the tool ran");
    assert_ne!(ran_on, std::thread::current().id(), "on the blocking pool");
}
