//! `WithContent<T>`: text for the model, `T` as `structuredContent`, from `#[mcp_tool]` and
//! from a plain handler, through a server in both eras.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use codomyrmex_mcp::client::McpClient;
use codomyrmex_mcp::{
    Era, McpErrorDetail, McpServer, McpServerConfig, McpToolRegistry, WithContent, mcp_tool,
};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value, json};

const SOURCE: &str = "fn main() {\n    println!(\"hi\");\n}\n";

#[derive(Serialize, JsonSchema)]
struct Page {
    /// The text.
    content: String,
    /// Its length in bytes.
    bytes: u64,
}

/// Returns a source file.
#[mcp_tool(name = "demo.page")]
fn page(more: bool) -> Result<WithContent<Page>, McpErrorDetail> {
    let out = WithContent::text(
        SOURCE,
        Page {
            content: SOURCE.to_owned(),
            bytes: SOURCE.len() as u64,
        },
    );
    Ok(if more { out.and_text("[more]") } else { out })
}

/// The same structure, without `WithContent`.
#[mcp_tool(name = "demo.plain_page")]
fn plain_page() -> Page {
    Page {
        content: SOURCE.to_owned(),
        bytes: SOURCE.len() as u64,
    }
}

/// Returns an error.
#[mcp_tool(name = "demo.failing")]
fn failing() -> Result<WithContent<Page>, McpErrorDetail> {
    Err(McpErrorDetail::new("NOT_FOUND", "no page"))
}

fn server() -> McpServer {
    let registry = McpToolRegistry::new();
    registry.register_fn(page).unwrap();
    registry.register_fn(plain_page).unwrap();
    registry.register_fn(failing).unwrap();
    registry
        .register(
            "demo.handler",
            json!({"type": "object"}),
            |_: Map<String, Value>| -> Result<WithContent<Value>, McpErrorDetail> {
                Ok(WithContent::text("plain", json!({"n": 1})))
            },
        )
        .unwrap();
    McpServer::new(
        McpServerConfig::new("with-content", "1"),
        Arc::new(registry),
    )
}

fn texts(result: &Value) -> Vec<&str> {
    result["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap())
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn the_model_reads_the_text_and_programs_the_structure() {
    let server = server();
    for era in [Era::Legacy, Era::Modern] {
        let client = McpClient::in_memory(&server, era);
        client.initialize().await.unwrap();
        let tools = client.list_tools().await.unwrap();
        let schema = |name: &str| {
            tools
                .iter()
                .find(|t| t["name"] == name)
                .map(|t| t["outputSchema"].clone())
                .unwrap()
        };
        // The same output schema as the plain structure.
        assert_eq!(schema("demo.page"), schema("demo.plain_page"));
        assert_eq!(schema("demo.page")["type"], "object");

        let r = client
            .call_tool("demo.page", json!({"more": false}))
            .await
            .unwrap();
        assert_eq!(texts(&r), [SOURCE], "{r}");
        assert_eq!(
            r["structuredContent"],
            json!({"content": SOURCE, "bytes": SOURCE.len()})
        );
        let r = client
            .call_tool("demo.page", json!({"more": true}))
            .await
            .unwrap();
        assert_eq!(texts(&r), [SOURCE, "[more]"], "{r}");

        let r = client.call_tool("demo.failing", json!({})).await.unwrap();
        assert_eq!(r["isError"], true, "{r}");
        assert_eq!(texts(&r), ["NOT_FOUND: no page"], "{r}");

        let r = client.call_tool("demo.handler", json!({})).await.unwrap();
        assert_eq!(texts(&r), ["plain"], "{r}");
        assert_eq!(r["structuredContent"], json!({"n": 1}));
    }
}
