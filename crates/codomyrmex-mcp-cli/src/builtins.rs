//! Built-in tools. The `codomyrmex` module holds the Python module's own tools.

use std::sync::{Arc, Weak};

use codomyrmex_mcp::wire::ToolAnnotations;
use codomyrmex_mcp::{
    McpErrorDetail, McpRegistrationError, McpToolRegistry, ToolDefinition, ToolRegistration,
};
use serde_json::{Map, Value, json};

fn read_only() -> ToolAnnotations {
    ToolAnnotations {
        read_only_hint: Some(true),
        open_world_hint: Some(false),
        ..ToolAnnotations::default()
    }
}

/// Registers every built-in tool.
pub fn register(registry: &Arc<McpToolRegistry>) -> Result<(), McpRegistrationError> {
    let weak: Weak<McpToolRegistry> = Arc::downgrade(registry);
    let list = weak.clone();
    registry.register_tool(ToolRegistration::new(
        ToolDefinition::new(
            "codomyrmex.list_registered_tools",
            json!({"type": "object", "properties": {}}),
        )
        .with_title("List registered tools")
        .with_description("Lists the invocation names of every tool this server provides, sorted.")
        .with_annotations(read_only()),
        move |_: Map<String, Value>| -> Result<Value, McpErrorDetail> {
            let registry = list
                .upgrade()
                .ok_or_else(|| McpErrorDetail::new("Unavailable", "the registry is gone"))?;
            Ok(json!({"tools": registry.list_tools()}))
        },
    ))?;
    registry.register_tool(ToolRegistration::new(
        ToolDefinition::new(
            "codomyrmex.get_tool_schema",
            json!({
                "type": "object",
                "properties": {"tool_name": {"type": "string", "description": "The tool's invocation name"}},
                "required": ["tool_name"],
            }),
        )
        .with_title("Get a tool's schema")
        .with_description("Returns the MCP definition of one tool: its description and input schema.")
        .with_annotations(read_only()),
        move |args: Map<String, Value>| -> Result<Value, McpErrorDetail> {
            let registry = weak.upgrade().ok_or_else(|| McpErrorDetail::new("Unavailable", "the registry is gone"))?;
            let name = args.get("tool_name").and_then(Value::as_str).unwrap_or_default();
            let def = registry.get(name).ok_or_else(|| {
                McpErrorDetail::new("ToolNotFound", format!("Unknown tool: {name}"))
            })?;
            serde_json::to_value(def).map_err(|e| McpErrorDetail::new("InternalError", e.to_string()))
        },
    ))?;
    Ok(())
}
