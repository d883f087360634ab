//! # codomyrmex-mcp
//!
//! A Model Context Protocol (MCP) toolkit: the Codomyrmex `model_context_protocol` data model
//! in idiomatic Rust, a tool registry, and a server that speaks both protocol eras —
//! `2026-07-28` (stateless, per-request `_meta`, `server/discover`) and `2025-11-25` with
//! negotiation down to `2024-11-05` (`initialize`, sessions).
//!
//! ## Where to start
//! 1. **A tool**: [`macro@mcp_tool`] on a function (its schema comes from the signature), or
//!    [`McpToolRegistry::register`] with a schema and a closure. Resources and prompts:
//!    [`McpResourceRegistry`], [`McpPromptRegistry`], [`macro@mcp_resource`],
//!    [`macro@mcp_prompt`]; Skills: [`skills`]; MCP Apps: [`apps`].
//! 2. **A server**: [`McpServer::new`] with a [`McpServerConfig`], then
//!    [`McpServer::serve_stdio`] or [`McpServer::serve_http`] (its options:
//!    [`transport::http::HttpConfig`]; authentication: [`transport::http::AuthConfig`]).
//! 3. **A client**: [`client::McpClient`], over stdio, Streamable HTTP or in memory, which is
//!    also how tests drive a server ([`client::McpClient::in_memory`]).
//! 4. **Several instances**: the store traits in [`store`] and [`task_store`]; the Redis
//!    implementations are the `codomyrmex-mcp-redis` crate.
//!
//! The user guide is the mdBook under `docs/` in the repository (`mdbook build docs`): a
//! chapter per task (`tools.md`, `resources.md`, `prompts.md`, `completion.md`, `input.md`,
//! `tasks.md`, `skills-and-apps.md`, `transports.md`, `security.md`, `client.md`,
//! `deployment.md`, `troubleshooting.md`), each sample of which compiles in CI. The
//! examples tree (`crates/codomyrmex-mcp/examples/`) holds complete servers and clients:
//! `guide.rs` (every sample of the chapters on writing a server), `echo.rs`,
//! `everything.rs`, `apps_server.rs`, `input_roundtrips.rs`.
//!
//! ## What it is
//! Every item has one public path (the crate's rustdoc shows each once):
//! - **The root**: what a server is written with. The seed's types ([`McpErrorDetail`],
//!   [`McpToolCall`], [`McpToolResult`], [`McpMessage`]), whose JSON is interchangeable with
//!   the Python (Pydantic) models and whose invariants hold for every value that exists; the
//!   registries ([`McpToolRegistry`], tools by invocation name with JSON Schema validation,
//!   [`McpResourceRegistry`], [`McpPromptRegistry`]) with what a handler takes and returns
//!   ([`ToolContext`], [`ToolOutput`], [`PromptRequest`], [`ResourceRequest`], ...);
//!   [`McpServer`] and [`McpServerConfig`], the pieces put together; the macros.
//! - **The modules**: the machinery under it, each item in the module that owns it.
//!   [`engine`]: the protocol logic, with no I/O, which turns decoded messages into
//!   responses; [`wire`]: the JSON-RPC and MCP wire format. Both live in the
//!   `codomyrmex-mcp-core` crate (no tokio, no HTTP, no clock), whose whole public tree is
//!   re-exported here at the same paths.
//!   [`runtime`]: the tokio/OS [`platform::Platform`] the engine runs on (spawning, timers,
//!   the blocking pool, the clock, `getrandom`), registered as the default.
//!   [`transport`]: thin adapters around the engine: stdio and Streamable HTTP.
//!   [`client`]: [`client::McpClient`], a small client for tests and tools, with its options.
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
//!
//! ## Tools, prompts and resources from functions
//! `#[mcp_tool]`, `#[mcp_tools]`, `#[mcp_prompt]` and `#[mcp_resource]` turn functions into
//! registrations ([`macro@mcp_tool`] has the rules), and each registry's `discovered()` holds
//! every one linked into the program. A complete server ([`McpToolRegistry::discovered`]):
//!
//! ```standalone_crate,no_run
//! use codomyrmex_mcp::{McpServer, McpServerConfig, McpToolRegistry, mcp_tool};
//!
//! /// Says hello.
//! #[mcp_tool(read_only)]
//! fn hello(name: Option<String>) -> String {
//!     format!("Hello, {}!", name.as_deref().unwrap_or("world"))
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let registry = McpToolRegistry::discovered()?;
//!     let config = McpServerConfig::new("hello", "1.0.0");
//!     Ok(McpServer::new(config, registry.into()).serve_stdio().await?)
//! }
//! ```
//!
//! Discovery sees exactly the tools linked into the program:
//!
//! ```standalone_crate
//! use codomyrmex_mcp::{McpToolRegistry, mcp_tool};
//!
//! #[mcp_tool(name = "text.shout")]
//! fn shout(text: String) -> String {
//!     text.to_uppercase()
//! }
//!
//! let registry = McpToolRegistry::discovered()?;
//! assert_eq!(registry.list_tools(), ["text.shout"]);
//! # Ok::<(), codomyrmex_mcp::McpRegistrationError>(())
//! ```
//!
//! A type whose methods are tools ([`McpTools`], [`McpToolRegistry::register_methods`]):
//!
//! ```standalone_crate
//! use std::sync::Arc;
//! use codomyrmex_mcp::{McpToolRegistry, mcp_tool, mcp_tools};
//!
//! struct Greeter {
//!     greeting: String,
//! }
//!
//! #[mcp_tools]
//! impl Greeter {
//!     /// Greets someone.
//!     #[mcp_tool(read_only)]
//!     fn greet(&self, name: String) -> String {
//!         format!("{}, {name}!", self.greeting)
//!     }
//! }
//!
//! let registry = McpToolRegistry::new();
//! registry.register_methods(Arc::new(Greeter { greeting: "Hello".into() }))?;
//! assert_eq!(registry.list_tools(), ["greet"]);
//! # Ok::<(), codomyrmex_mcp::McpRegistrationError>(())
//! ```
//!
//! A result that says what the model reads and what programs get ([`WithContent`]):
//!
//! ```standalone_crate
//! use codomyrmex_mcp::{McpErrorDetail, WithContent, mcp_tool};
//!
//! #[derive(serde::Serialize, schemars::JsonSchema)]
//! struct Greeting {
//!     /// The greeting.
//!     text: String,
//!     /// Its length in bytes.
//!     len: usize,
//! }
//!
//! /// Greets someone.
//! #[mcp_tool(name = "greet")]
//! fn greet(name: String) -> Result<WithContent<Greeting>, McpErrorDetail> {
//!     let text = format!("Hello, {name}!");
//!     let len = text.len();
//!     Ok(WithContent::text(text.clone(), Greeting { text, len }))
//! }
//! ```
//!
//! Prompts ([`McpPromptRegistry::discovered`]):
//!
//! ```standalone_crate
//! use codomyrmex_mcp::{ContentBlock, McpPromptRegistry, PromptMessage, mcp_prompt};
//!
//! /// Asks for a review.
//! #[mcp_prompt(name = "review")]
//! fn review(code: String, focus: Option<String>) -> Vec<PromptMessage> {
//!     let focus = focus.unwrap_or_else(|| "anything".into());
//!     vec![PromptMessage::user(ContentBlock::text(format!("Review for {focus}:\n{code}")))]
//! }
//!
//! let registry = McpPromptRegistry::discovered()?;
//! assert_eq!(registry.names(), ["review"]);
//! # Ok::<(), codomyrmex_mcp::FnRegistrationError>(())
//! ```
//!
//! Resources and templates ([`McpResourceRegistry::discovered`]):
//!
//! ```standalone_crate
//! use codomyrmex_mcp::{McpResourceRegistry, mcp_resource};
//!
//! /// A greeting.
//! #[mcp_resource(uri = "greeting://hello", mime_type = "text/plain")]
//! fn hello() -> String {
//!     "Hello!".into()
//! }
//!
//! /// A user's profile.
//! #[mcp_resource(uri_template = "users://{id}/profile", name = "profile")]
//! fn profile(id: String) -> String {
//!     format!("user {id}")
//! }
//!
//! let registry = McpResourceRegistry::discovered()?;
//! assert_eq!(registry.resources()[0].uri, "greeting://hello");
//! assert_eq!(registry.templates()[0].uri_template, "users://{id}/profile");
//! # Ok::<(), codomyrmex_mcp::FnRegistrationError>(())
//! ```
#![warn(missing_docs)]

pub mod apps;
pub mod client;
#[cfg(unix)]
pub mod confine;
pub mod fuzzing;
pub mod runtime;
#[cfg(unix)]
mod serve_directory;
mod server;
#[cfg(unix)]
pub mod skills;
pub mod transport;

// The protocol core: its whole public tree, each item at the path it has there (its root:
// the seed's data model, the registries and what a handler is written with; its modules:
// the engine, the wire format, the stores, ...). This crate's own modules of the same name
// (`apps`, `client`, `fuzzing`, `skills`) take the core's place and re-export its items
// (ARCHITECTURE.md, "One public path per item").
pub use codomyrmex_mcp_core::*;

#[cfg(unix)]
pub use serve_directory::ServeDirectory;
pub use server::McpServer;

pub use codomyrmex_mcp_macros::{mcp_prompt, mcp_resource, mcp_tool, mcp_tools};

/// The crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
