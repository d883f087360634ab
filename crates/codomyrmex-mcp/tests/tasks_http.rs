//! Tasks over Streamable HTTP on real sockets: the `io.modelcontextprotocol/tasks` extension
//! (2026-07-28) and the experimental tasks of 2025-11-25.
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_support;

use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::ToolOutput;
use codomyrmex_mcp::{
    ContentBlock, InputRequest, McpErrorDetail, McpToolRegistry, TaskSupport, ToolContext,
    ToolDefinition, ToolRegistration, ToolSettings,
};
use http_support::*;
use serde_json::{Map, Value, json};

const EXT: &str = "io.modelcontextprotocol/tasks";

fn text(t: impl Into<String>) -> ToolOutput {
    ToolOutput::content(vec![ContentBlock::text(t)])
}

fn task_tools() -> Arc<McpToolRegistry> {
    let r = McpToolRegistry::new();
    let with = |support| ToolSettings {
        task_support: support,
        ..ToolSettings::default()
    };
    let def = |name: &str| ToolDefinition::new(name, json!({"type": "object"}));
    r.register_tool(
        ToolRegistration::new(def("greet"), |_: Map<String, Value>| text("Hello!"))
            .with_settings(with(TaskSupport::Forbidden)),
    )
    .unwrap();
    r.register_tool(
        ToolRegistration::new(def("slow"), |a: Map<String, Value>| async move {
            let ms = a.get("ms").and_then(Value::as_u64).unwrap_or(100);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            text(format!("slept {ms}"))
        })
        .with_settings(with(TaskSupport::Optional)),
    )
    .unwrap();
    r.register_tool(
        ToolRegistration::new(def("required"), |_: Map<String, Value>| async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            ToolOutput::failure(McpErrorDetail::new("JobFailed", "always"))
        })
        .with_settings(with(TaskSupport::Required)),
    )
    .unwrap();
    r.register_tool(
        ToolRegistration::new(
            def("ask"),
            |_: Map<String, Value>, cx: ToolContext| async move {
                cx.start_task();
                let request = InputRequest::form("Name?", json!({"type": "object"}));
                match cx.input("name", request).await {
                    Ok(a) => text(format!(
                        "hi {}",
                        a["content"]["name"].as_str().unwrap_or("?")
                    )),
                    Err(e) => ToolOutput::failure(e.into()),
                }
            },
        )
        .with_settings(with(TaskSupport::Optional)),
    )
    .unwrap();
    Arc::new(r)
}

async fn server() -> TestServer {
    start_with(config(), task_tools(), Arc::new(Probes::default())).await
}

/// A modern POST; `ext` declares the tasks extension; `name` is the `Mcp-Name` header.
fn request(method: &str, id: i64, mut params: Value, ext: bool, name: Option<&str>) -> Req {
    let mut caps = json!({"elicitation": {}});
    if ext {
        caps["extensions"] = json!({EXT: {}});
    }
    if !params["_meta"].is_object() {
        params["_meta"] = json!({});
    }
    params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(MODERN);
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = caps;
    let mut req = Req::new("POST", "/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method)
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    if let Some(n) = name {
        req = req.header("mcp-name", n);
    }
    req
}

async fn call(s: &TestServer, tool: &str, args: Value) -> Value {
    let r = s
        .send(&request(
            "tools/call",
            1,
            json!({"name": tool, "arguments": args}),
            true,
            Some(tool),
        ))
        .await;
    assert_eq!(r.status, 200);
    r.json()["result"].clone()
}

async fn get(s: &TestServer, id: &str) -> Value {
    let r = s
        .send(&request(
            "tasks/get",
            2,
            json!({"taskId": id}),
            true,
            Some(id),
        ))
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    r.json()["result"].clone()
}

async fn until(s: &TestServer, id: &str, status: &str) -> Value {
    let deadline = tokio::time::Instant::now() + HANG;
    loop {
        let task = get(s, id).await;
        if task["status"] == status {
            return task;
        }
        assert!(tokio::time::Instant::now() < deadline, "{task}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_task_outlives_its_request_and_inlines_its_result() {
    let s = server().await;
    let d = s
        .send(&request("server/discover", 1, json!({}), false, None))
        .await
        .json();
    assert_eq!(d["result"]["capabilities"]["extensions"][EXT], json!({}));
    let created = call(&s, "slow", json!({"ms": 200})).await;
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(get(&s, &id).await["status"], "working");
    let done = until(&s, &id, "completed").await;
    assert_eq!(done["resultType"], "complete");
    assert_eq!(done["result"]["content"][0]["text"], "slept 200");
    let ack = s
        .send(&request(
            "tasks/cancel",
            3,
            json!({"taskId": id}),
            true,
            Some(&id),
        ))
        .await;
    assert_eq!(ack.json()["result"]["resultType"], "complete");
    s.stop().await;
}

#[tokio::test]
async fn a_streamed_call_becomes_a_task_too() {
    let s = server().await;
    let params = json!({"name": "slow", "arguments": {"ms": 100}, "_meta": {"progressToken": "p"}});
    let r = s
        .send(&request("tools/call", 5, params, true, Some("slow")))
        .await;
    assert_eq!(r.status, 200);
    assert!(
        r.header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let last = r.events().last().unwrap().data.clone();
    assert_eq!(last["result"]["resultType"], "task", "{last}");
    let id = last["result"]["taskId"].as_str().unwrap().to_owned();
    until(&s, &id, "completed").await;
    s.stop().await;
}

#[tokio::test]
async fn tasks_requests_carry_the_task_id_in_mcp_name() {
    let s = server().await;
    let created = call(&s, "slow", json!({"ms": 60_000})).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    for name in [Some("some-other-task"), None] {
        let r = s
            .send(&request("tasks/get", 2, json!({"taskId": id}), true, name))
            .await;
        assert_eq!(r.status, 400);
        assert_eq!(r.error_code(), -32020);
    }
    s.send(&request(
        "tasks/cancel",
        3,
        json!({"taskId": id}),
        true,
        Some(&id),
    ))
    .await;
    assert_eq!(get(&s, &id).await["status"], "cancelled");
    s.stop().await;
}

#[tokio::test]
async fn without_the_extension_tasks_are_refused_with_32021() {
    let s = server().await;
    let r = s
        .send(&request(
            "tasks/get",
            1,
            json!({"taskId": "x"}),
            false,
            Some("x"),
        ))
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.error_code(), -32021);
    let r = s
        .send(&request(
            "tools/call",
            2,
            json!({"name": "required"}),
            false,
            Some("required"),
        ))
        .await;
    assert_eq!(r.status, 400);
    let v = r.json();
    assert_eq!(v["error"]["code"], -32021);
    assert_eq!(
        v["error"]["data"]["requiredCapabilities"]["extensions"][EXT],
        json!({})
    );
    // A task-supporting tool runs synchronously.
    let r = s
        .send(&request(
            "tools/call",
            3,
            json!({"name": "slow", "arguments": {"ms": 5}}),
            false,
            Some("slow"),
        ))
        .await;
    assert_eq!(r.json()["result"]["resultType"], "complete");
    s.stop().await;
}

#[tokio::test]
async fn input_required_then_tasks_update() {
    let s = server().await;
    let created = call(&s, "ask", json!({})).await;
    let id = created["taskId"].as_str().unwrap().to_owned();
    let parked = until(&s, &id, "input_required").await;
    assert_eq!(
        parked["inputRequests"]["name"]["method"],
        "elicitation/create"
    );
    let update = json!({"taskId": id, "inputResponses": {"name": {"action": "accept", "content": {"name": "Lin"}}}});
    let ack = s
        .send(&request("tasks/update", 4, update, true, Some(&id)))
        .await;
    assert_eq!(ack.status, 200);
    assert_eq!(ack.json()["result"]["resultType"], "complete");
    let done = until(&s, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "hi Lin");
    s.stop().await;
}

#[tokio::test]
async fn experimental_tasks_on_a_2025_11_25_session() {
    let s = server().await;
    let init = s
        .send(&legacy("initialize", Some(1), initialize_body(), None))
        .await;
    assert_eq!(
        init.json()["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
        json!({})
    );
    let sid = init.header("mcp-session-id").unwrap().to_owned();
    s.send(&legacy(
        "notifications/initialized",
        None,
        json!({}),
        Some(&sid),
    ))
    .await;
    let created = s
        .send(&legacy(
            "tools/call",
            Some(2),
            json!({"name": "slow", "arguments": {"ms": 50}, "task": {"ttl": 60_000}}),
            Some(&sid),
        ))
        .await
        .json();
    let id = created["result"]["task"]["taskId"].clone();
    assert_eq!(created["result"]["task"]["status"], "working", "{created}");
    let result = s
        .send(&legacy(
            "tasks/result",
            Some(3),
            json!({"taskId": id}),
            Some(&sid),
        ))
        .await
        .json();
    assert_eq!(result["result"]["content"][0]["text"], "slept 50");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    let list = s
        .send(&legacy("tasks/list", Some(4), json!({}), Some(&sid)))
        .await
        .json();
    assert_eq!(list["result"]["tasks"][0]["status"], "completed");
    s.stop().await;
}
