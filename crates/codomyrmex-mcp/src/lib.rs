//! # codomyrmex-mcp
//!
//! A Model Context Protocol (MCP) toolkit: the Codomyrmex `model_context_protocol` data model
//! in idiomatic Rust, a tool registry, and a server that speaks both protocol eras —
//! `2026-07-28` (stateless, per-request `_meta`, `server/discover`) and `2025-11-25` with
//! negotiation down to `2024-11-05` (`initialize`, sessions).
//!
//! ## What it is
//! - [`schema`]: the seed's types ([`McpErrorDetail`], [`McpToolCall`], [`McpToolResult`],
//!   [`McpMessage`]), whose JSON is interchangeable with the Python (Pydantic) models and
//!   whose invariants hold for every value that exists.
//! - [`registry`]: [`McpToolRegistry`], tools by invocation name with JSON Schema validation.
//! - [`engine`]: the protocol logic, with no I/O. It turns decoded messages into responses.
//! - [`transport`]: thin adapters around the engine: stdio and Streamable HTTP.
//! - [`McpServer`] and [`McpServerConfig`]: the pieces put together.
//! - [`McpClient`]: a small client for tests and tools.
//!
//! ## What it is not
//! - Not an LLM client or an agent framework: it serves tools to one.
//! - The engine is not a transport: it never reads or writes bytes, and a transport never
//!   decides protocol rules.
//!
//! ## Example
//! ```
//! use codomyrmex_mcp::{McpErrorDetail, McpToolCall, McpToolRegistry};
//! use serde_json::{Map, Value, json};
//!
//! # tokio_test_block_on(async {
//! let registry = McpToolRegistry::new();
//! registry.register(
//!     "math.add",
//!     json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
//!     |args: Map<String, Value>| -> Result<Value, McpErrorDetail> {
//!         Ok(json!(args["a"].as_f64().unwrap_or(0.0) + args["b"].as_f64().unwrap_or(0.0)))
//!     },
//! )?;
//! let call: McpToolCall = serde_json::from_value(json!({"tool_name": "math.add", "arguments": {"a": 2, "b": 3}}))?;
//! let result = registry.execute(&call).await;
//! assert_eq!(result.status(), "success");
//! assert_eq!(result.data().unwrap()["result"], json!(5.0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
//! # }
//! ```
#![warn(missing_docs)]

pub mod client;
pub mod config;
pub mod context;
pub mod engine;
#[doc(hidden)]
pub mod fuzzing;
mod portable_schema;
pub mod prompts;
pub mod registry;
pub mod resources;
pub mod schema;
pub mod server;
pub mod store;
mod tool_content;
mod tool_support;
pub mod transport;
pub mod uri_template;
mod util;
mod validation;
pub mod wire;

pub use client::{ClientError, McpClient};
pub use config::{CacheScope, McpServerConfig, RateLimit};
pub use context::{ClientRequestError, InputRequest, Principal, ToolContext};
pub use prompts::{
    McpPromptRegistry, PromptArgument, PromptDefinition, PromptMessage, PromptResult,
};
pub use registry::{
    McpRegistrationError, McpToolRegistry, TaskSupport, ToolDefinition, ToolOutput,
    ToolRegistration, ToolSettings,
};
pub use resources::{
    McpResourceRegistry, ResourceDefinition, ResourceLister, ResourceTemplateDefinition,
};
pub use schema::{ErrorDetails, McpErrorDetail, McpMessage, McpToolCall, McpToolResult};
pub use server::McpServer;
pub use tool_content::WithContent;
pub use wire::{ContentBlock, Era, LoggingLevel, ProtocolVersion};

pub use codomyrmex_mcp_macros::{mcp_prompt, mcp_resource, mcp_tool, mcp_tools};
#[doc(hidden)]
pub use tool_support::__private;
pub use tool_support::{FnRegistrationError, McpTools};

/// The crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
