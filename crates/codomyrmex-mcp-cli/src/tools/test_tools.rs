//! Test tools, off by default: what the cluster test needs from a real binary and the
//! built-ins do not offer. `CODOMYRMEX_MCP_TEST_TOOLS=1` registers them; nothing else does.
//!
//! - `test.sleep` `{seconds}`: waits that long (at most an hour) and says so. It may run as a
//!   task (`execution.taskSupport: optional`), so it is the long-running work a task test
//!   polls, cancels, or leaves running while its instance is killed. Cancelling it stops it.
//!
//! Not for production: they do nothing useful, and a client can keep a slot busy for an hour.

use std::time::Duration;

use codomyrmex_mcp::registry::{
    McpRegistrationError, McpToolRegistry, TaskSupport, ToolDefinition, ToolOutput,
    ToolRegistration, ToolSettings,
};
use codomyrmex_mcp::schema::JsonObject;
use codomyrmex_mcp::{ContentBlock, McpErrorDetail};
use serde_json::json;

/// The variable that turns the test tools on (`1`).
pub const ENV: &str = "CODOMYRMEX_MCP_TEST_TOOLS";

/// Whether the environment turns the test tools on.
pub fn enabled() -> bool {
    std::env::var_os(ENV).is_some_and(|v| v == "1")
}

/// Registers the test tools in `registry`.
pub fn register(registry: &McpToolRegistry) -> Result<(), McpRegistrationError> {
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
    registry.register_tool(ToolRegistration::new(definition, sleep).with_settings(
        ToolSettings {
            task_support: TaskSupport::Optional,
            ..ToolSettings::default()
        },
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_test_tools_register_and_run_as_tasks() {
        let registry = codomyrmex_mcp::McpToolRegistry::new();
        super::register(&registry).unwrap();
        let defs = registry.definitions();
        assert!(defs.iter().any(|d| d.name == "test.sleep"), "{defs:?}");
    }
}
