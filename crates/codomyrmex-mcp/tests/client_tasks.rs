//! Task-augmented calls through `McpClient` against our own server in both eras: the call
//! makes a task (2025-11-25 on request; 2026-07-28 when the tool first waits), and
//! `task_result` returns what the call would have returned; `get_task` and `cancel_task`
//! reach the same task.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::IntoToolHandler;
use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::client::TaskCall;
use codomyrmex_mcp::{
    ContentBlock, Era, McpServer, McpServerConfig, McpToolRegistry, TaskSupport, ToolContext,
    ToolDefinition, ToolOutput, ToolRegistration, ToolSettings,
};
use serde_json::{Map, Value, json};

const HANG: Duration = Duration::from_secs(20);

fn server() -> McpServer {
    let tools = McpToolRegistry::new();
    let handler = |args: Map<String, Value>, _cx: ToolContext| async move {
        let ms = args.get("ms").and_then(Value::as_u64).unwrap_or(50);
        tokio::time::sleep(Duration::from_millis(ms)).await;
        ToolOutput::content(vec![ContentBlock::text(format!("slept {ms}"))])
    };
    let definition = ToolDefinition::new("nap", json!({"type": "object"}));
    tools
        .register_tool(
            ToolRegistration::new(definition, handler.into_handler()).with_settings(ToolSettings {
                task_support: TaskSupport::Optional,
                ..ToolSettings::default()
            }),
        )
        .unwrap();
    McpServer::new(McpServerConfig::new("tasks", "0"), Arc::new(tools))
}

async fn client(era: Era) -> McpClient {
    let c = McpClient::in_memory(&server(), era);
    c.initialize().await.unwrap();
    c
}

#[tokio::test]
async fn a_task_call_and_its_result_in_both_eras() {
    for era in [Era::Legacy, Era::Modern] {
        let c = client(era).await;
        let made = tokio::time::timeout(HANG, c.call_tool_as_task("nap", json!({"ms": 50}), None))
            .await
            .unwrap()
            .unwrap();
        let TaskCall::Task(task) = made else {
            panic!("{era:?}: no task: {made:?}");
        };
        let id = task["taskId"].as_str().unwrap().to_owned();
        let got = c.get_task(&id).await.unwrap();
        assert_eq!(got["taskId"], id, "{era:?}");
        let result = tokio::time::timeout(HANG, c.task_result(&id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            result["content"][0]["text"], "slept 50",
            "{era:?}: {result}"
        );
    }
}

#[tokio::test]
async fn a_task_can_be_cancelled() {
    for era in [Era::Legacy, Era::Modern] {
        let c = client(era).await;
        let TaskCall::Task(task) = c
            .call_tool_as_task("nap", json!({"ms": 60_000}), None)
            .await
            .unwrap()
        else {
            panic!("{era:?}: no task");
        };
        let id = task["taskId"].as_str().unwrap();
        c.cancel_task(id).await.unwrap();
        let status = c.get_task(id).await.unwrap()["status"].clone();
        assert_eq!(status, "cancelled", "{era:?}");
        assert!(
            tokio::time::timeout(HANG, c.task_result(id))
                .await
                .unwrap()
                .is_err(),
            "{era:?}"
        );
    }
}

/// 2025-11-25 lists a session's tasks; the 2026-07-28 tasks extension has no `tasks/list`
/// (SEP-2663 removed it), so the client says so instead of asking.
#[tokio::test]
async fn tasks_are_listed_in_2025_11_25_and_the_modern_era_says_it_has_no_list() {
    let c = client(Era::Legacy).await;
    let TaskCall::Task(task) = c
        .call_tool_as_task("nap", json!({"ms": 50}), None)
        .await
        .unwrap()
    else {
        panic!("no task");
    };
    let listed = c.list_tasks().await.unwrap();
    assert!(
        listed.iter().any(|t| t["taskId"] == task["taskId"]),
        "{listed:?}"
    );

    let c = client(Era::Modern).await;
    let e = c.list_tasks().await.unwrap_err();
    let codomyrmex_mcp::client::ClientError::Era(hint) = &e else {
        panic!("not an era error: {e:?}");
    };
    assert!(hint.contains("tasks/list"), "{hint}");
    assert!(hint.contains("2026-07-28"), "{hint}");
}
