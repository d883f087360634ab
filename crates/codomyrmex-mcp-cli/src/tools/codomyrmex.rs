//! `codomyrmex.*`: the Python module's own tools, about the server's tools.

use std::sync::{Arc, Weak};

use codomyrmex_mcp::{McpToolRegistry, WithContent, mcp_tool, mcp_tools};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::ToolError;
use super::model_text::ModelText;

/// The `codomyrmex` tools. They hold the registry weakly (it holds them).
pub struct CodomyrmexTools {
    registry: Weak<McpToolRegistry>,
}

impl CodomyrmexTools {
    /// The tools about `registry`.
    pub fn new(registry: &Arc<McpToolRegistry>) -> Self {
        Self {
            registry: Arc::downgrade(registry),
        }
    }

    fn registry(&self) -> Result<Arc<McpToolRegistry>, ToolError> {
        self.registry
            .upgrade()
            .ok_or_else(|| ToolError::new(super::kinds::INTERNAL, "the registry is gone"))
    }
}

#[mcp_tools]
impl CodomyrmexTools {
    #[mcp_tool(
        name = "codomyrmex.list_registered_tools",
        title = "List registered tools",
        description = "Lists the invocation names of every tool this server provides, sorted.",
        read_only,
        idempotent,
        open_world = false,
        category = "codomyrmex",
        deny_unknown_arguments
    )]
    async fn list_registered_tools(&self) -> Result<WithContent<ListOutput>, ToolError> {
        Ok(ListOutput {
            tools: self.registry()?.list_tools(),
        }
        .for_model())
    }

    #[mcp_tool(
        name = "codomyrmex.get_tool_schema",
        title = "Get a tool's schema",
        description = "Returns the MCP definition of one tool: its description, input and \
                       output schemas and annotations.",
        read_only,
        idempotent,
        open_world = false,
        category = "codomyrmex",
        deny_unknown_arguments
    )]
    async fn get_tool_schema(
        &self,
        /// The tool's invocation name, e.g. `file_system.read`.
        tool_name: String,
    ) -> Result<SchemaOutput, ToolError> {
        let def = self.registry()?.get(&tool_name).ok_or_else(|| {
            ToolError::new(
                "ToolNotFound",
                format!(
                    "Unknown tool: {}",
                    tool_name.chars().take(128).collect::<String>()
                ),
            )
        })?;
        let object = |v: Value| match v {
            Value::Object(m) => Some(m),
            _ => None,
        };
        let annotations = serde_json::to_value(&def.annotations)
            .ok()
            .and_then(object)
            .filter(|m| !m.is_empty());
        Ok(SchemaOutput {
            name: def.name,
            title: def.title,
            description: def.description,
            input_schema: object(def.input_schema).unwrap_or_default(),
            output_schema: def.output_schema.and_then(object),
            annotations,
            meta: def.meta,
        })
    }
}

/// Result of `codomyrmex.list_registered_tools`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ListOutput {
    /// Invocation names, sorted.
    pub tools: Vec<String>,
}

/// Result of `codomyrmex.get_tool_schema`: an MCP `Tool` object.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchemaOutput {
    /// The invocation name.
    pub name: String,
    /// A display title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the arguments.
    pub input_schema: Map<String, Value>,
    /// The JSON Schema of the structured result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Map<String, Value>>,
    /// Behaviour hints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Map<String, Value>>,
    /// Extra metadata.
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::config::Profile;
    use crate::tools::test_support::*;

    #[tokio::test]
    async fn list_registered_tools_is_sorted_and_complete() {
        let fx = Fixture::new();
        let r = registry(&fx, Profile::Readonly);
        let v = call(&r, "codomyrmex.list_registered_tools", json!({})).await;
        let tools = v.data().unwrap()["tools"].as_array().unwrap().clone();
        let names: Vec<&str> = tools.iter().map(|t| t.as_str().unwrap()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        assert_eq!(names.len(), r.len());
        assert!(names.contains(&"codomyrmex.get_tool_schema"));
        assert!(names.contains(&"file_system.read"));
        assert!(!names.contains(&"shell.run"));
    }

    #[tokio::test]
    async fn get_tool_schema_returns_the_definition() {
        let fx = Fixture::new();
        let r = registry(&fx, Profile::Full);
        let v = call(
            &r,
            "codomyrmex.get_tool_schema",
            json!({"tool_name": "file_system.read"}),
        )
        .await;
        let d = v.data().unwrap();
        assert_eq!(d["name"], "file_system.read");
        assert_eq!(d["inputSchema"]["type"], "object");
        assert_eq!(d["inputSchema"]["required"], json!(["path"]));
        assert!(
            d["inputSchema"]["properties"]["start_line"]["description"]
                .as_str()
                .is_some()
        );
        assert_eq!(d["outputSchema"]["type"], "object");
        assert_eq!(d["annotations"]["readOnlyHint"], true);
        assert_eq!(d["_meta"]["category"], "file_system");
        let v = call(
            &r,
            "codomyrmex.get_tool_schema",
            json!({"tool_name": "shell.run"}),
        )
        .await;
        assert_eq!(v.data().unwrap()["annotations"]["readOnlyHint"], false);
        let e = call(
            &r,
            "codomyrmex.get_tool_schema",
            json!({"tool_name": "nope"}),
        )
        .await;
        assert_eq!(error_kind(&e), "ToolNotFound");
        let e = call(&r, "codomyrmex.get_tool_schema", json!({})).await;
        assert_eq!(error_kind(&e), "ValidationError");
    }
}
