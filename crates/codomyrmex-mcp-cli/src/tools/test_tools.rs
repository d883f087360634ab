//! Test tools, off by default: what the cluster test needs from a real binary and the
//! built-ins do not offer. `CODOMYRMEX_MCP_TEST_TOOLS=1` registers them; nothing else does.
//!
//! - `test.sleep` `{seconds}`: waits that long (at most an hour) and says so. It may run as a
//!   task (`execution.taskSupport: optional`), so it is the long-running work a task test
//!   polls, cancels, or leaves running while its instance is killed. Cancelling it stops it.
//! - `test.announce` `{uri?, toggle_tool?}`: makes a change at run time, on this instance:
//!   announces that resource `uri` was updated, and with `toggle_tool` registers (or removes
//!   again) the tool `test.toggled`, a tools list change. Other instances sharing a change bus
//!   relay both to their listeners.
//!
//! Not for production: they do nothing useful, and a client can keep a slot busy for an hour.

use std::sync::Arc;
use std::time::Duration;

use codomyrmex_mcp::JsonObject;
use codomyrmex_mcp::McpResourceRegistry;
use codomyrmex_mcp::{ContentBlock, McpErrorDetail};
use codomyrmex_mcp::{
    McpRegistrationError, McpToolRegistry, TaskSupport, ToolDefinition, ToolOutput,
    ToolRegistration, ToolSettings,
};
use serde_json::json;

/// The variable that turns the test tools on (`1`).
pub const ENV: &str = "CODOMYRMEX_MCP_TEST_TOOLS";

/// Whether the environment turns the test tools on.
pub fn enabled() -> bool {
    std::env::var_os(ENV).is_some_and(|v| v == "1")
}

/// Registers the test tools in `registry`; `test.announce` changes `registry` and announces
/// updates of `resources`.
pub fn register(
    registry: &Arc<McpToolRegistry>,
    resources: &Arc<McpResourceRegistry>,
) -> Result<(), McpRegistrationError> {
    register_announce(registry, resources)?;
    let definition = ToolDefinition::new(
        "test.sleep",
        json!({
            "type": "object",
            "properties": {"seconds": {"type": "number", "minimum": 0, "maximum": 3600}},
            "required": ["seconds"],
            "additionalProperties": false
        }),
    )
    .with_description("Test tool: waits `seconds` (may run as a task). Off by default.");
    let sleep = |args: JsonObject| async move {
        let Some(seconds) = args.get("seconds").and_then(serde_json::Value::as_f64) else {
            return ToolOutput::failure(McpErrorDetail::new(
                "InvalidArguments",
                "seconds must be a number",
            ));
        };
        let wait = Duration::try_from_secs_f64(seconds.clamp(0.0, 3600.0)).unwrap_or_default();
        tokio::time::sleep(wait).await;
        ToolOutput::content(vec![ContentBlock::text(format!("slept {seconds} s"))])
    };
    registry.register_tool(
        ToolRegistration::new(definition, sleep).with_settings(ToolSettings {
            task_support: TaskSupport::Optional,
            ..ToolSettings::default()
        }),
    )
}

fn register_announce(
    registry: &Arc<McpToolRegistry>,
    resources: &Arc<McpResourceRegistry>,
) -> Result<(), McpRegistrationError> {
    let definition = ToolDefinition::new(
        "test.announce",
        json!({
            "type": "object",
            "properties": {
                "uri": {"type": "string", "maxLength": 4096},
                "toggle_tool": {"type": "boolean"}
            },
            "additionalProperties": false
        }),
    )
    .with_description(
        "Test tool: announces a resource update and/or toggles a tool. Off by default.",
    );
    // Weak: the registry holds this handler.
    let tools = Arc::downgrade(registry);
    let resources = Arc::downgrade(resources);
    let announce = move |args: JsonObject| {
        let (tools, resources) = (tools.clone(), resources.clone());
        async move {
            let mut done = Vec::new();
            if let Some(uri) = args.get("uri").and_then(serde_json::Value::as_str)
                && let Some(resources) = resources.upgrade()
            {
                resources.notify_updated(uri);
                done.push(format!("updated {uri}"));
            }
            if args.get("toggle_tool") == Some(&serde_json::Value::Bool(true))
                && let Some(tools) = tools.upgrade()
            {
                if tools.unregister("test.toggled") {
                    done.push("removed test.toggled".into());
                } else {
                    let definition = ToolDefinition::new("test.toggled", json!({"type": "object"}));
                    let handler = |_: JsonObject| async { ToolOutput::content(vec![]) };
                    if tools
                        .register_tool(ToolRegistration::new(definition, handler))
                        .is_ok()
                    {
                        done.push("registered test.toggled".into());
                    }
                }
            }
            ToolOutput::content(vec![ContentBlock::text(done.join("; "))])
        }
    };
    registry.register_tool(ToolRegistration::new(definition, announce))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_test_tools_register_and_run_as_tasks() {
        let registry = std::sync::Arc::new(codomyrmex_mcp::McpToolRegistry::new());
        let resources = std::sync::Arc::new(codomyrmex_mcp::McpResourceRegistry::new());
        super::register(&registry, &resources).unwrap();
        let defs = registry.definitions();
        assert!(defs.iter().any(|d| d.name == "test.sleep"), "{defs:?}");
        assert!(defs.iter().any(|d| d.name == "test.announce"), "{defs:?}");
    }
}
