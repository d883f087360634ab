//! # codomyrmex-mcp-core
//!
//! The protocol core of codomyrmex-mcp: the Codomyrmex data model ([`McpToolCall`], [`McpToolResult`], ...), the MCP wire
//! format ([`wire`]), the tool, resource and prompt registries, and the dual-era protocol
//! [`engine`] — with no I/O of its own.
//!
//! ## What it is
//! - Protocol logic for both MCP eras (`2026-07-28` stateless, `2025-11-25` sessions):
//!   dispatch, negotiation, `requestState` sealing, task state, subscriptions, result shaping.
//! - Runtime-neutral: no tokio, hyper, axum or mio in its dependency tree (`getrandom` and
//!   `libc` only through `jsonschema`, never called here: randomness is the injected
//!   [`platform::Entropy`]; a test checks it, and that no `chrono` or `time` is either, and no tokio, hyper, axum or mio
//!   with the dev-dependencies: the core's tests run on a virtual clock of their own). Time
//!   comes in as a `now`
//!   ([`platform::Timestamp`], `Engine::handle_at`), or through the injected
//!   [`platform::TimeSource`] for work that runs later; randomness through [`platform`];
//!   clippy's `disallowed-methods` (this crate's `clippy.toml`) bans `Instant::now`,
//!   `SystemTime::now`, both `elapsed`, `thread::sleep` and `thread::spawn` here.
//!
//! ## Where to start
//! - The registries, what a server serves: [`McpToolRegistry`] (tools, validated against
//!   their JSON Schema), [`McpResourceRegistry`] (resources and URI templates),
//!   [`McpPromptRegistry`], [`skills::McpSkillRegistry`]; each has an example.
//! - The data model of the seed: [`McpToolCall`], [`McpToolResult`], [`McpErrorDetail`],
//!   [`McpMessage`]; the wire types (JSON-RPC, results, resource contents) in [`wire`].
//! - The engine: [`engine::Engine`], built with [`McpServerConfig`] and the registries, turns
//!   one decoded message into what to answer ([`engine::Handled`]); [`driver`] carries out
//!   the work it hands back (permits, deadlines, cancellation), generic over a small
//!   runtime trait.
//! - Extension points for several instances: [`store`] (sessions, replay logs, the message
//!   bus), [`task_store`], [`change_bus`].
//!
//! Every item has one public path. The root holds what a server is written with: the seed's
//! data model, the registries and what their handlers take and return ([`ToolContext`],
//! [`ToolOutput`], [`ContentBlock`], ...); the modules that define those are private. Every
//! other module owns its items, and no item is re-exported elsewhere.
//!
//! ## What it is not
//! - Not a transport or a server: `codomyrmex-mcp` builds the stdio and Streamable HTTP
//!   transports and `McpServer` on it, provides the tokio/OS [`platform::Platform`], and
//!   re-exports this crate's whole public tree at the same paths. Use that crate unless you
//!   write your own driver.
#![warn(missing_docs)]

pub mod apps;
pub mod authz;
pub mod change_bus;
pub mod client;
mod config;
mod context;
pub mod driver;
pub mod engine;
pub mod fuzzing;
pub mod invocation;
pub mod observe;
mod outbound;
pub mod platform;
pub mod policy;
mod portable_schema;
mod prompts;
mod registry;
mod resources;
mod round;
mod schema;
pub mod skills;
pub mod store;
pub mod sync;
pub mod task_store;
mod tool_content;
mod tool_support;
pub mod uri_template;
pub mod util;
mod validation;
pub mod wire;

// The root: the seed's data model, the registries and what a handler is written with
// (ARCHITECTURE.md, "One public path per item"). Each is public here only: the modules that
// define them are private, and no public module re-exports them.
pub use config::{CacheScope, McpServerConfig, RateLimit};
pub use context::{ClientRequestError, InputRequest, Principal, ToolContext};
pub use outbound::{MessageSink, NullSink, Outbound};
pub use prompts::{
    McpPromptRegistry, PromptArgument, PromptDefinition, PromptHandler, PromptMessage,
    PromptRequest, PromptResult,
};
pub use registry::resolve::{Resolution, ToolResolver};
pub use registry::{
    AsyncArgs, AsyncArgsContext, Direct, HeaderParam, IntoToolHandler, IntoToolOutput,
    MAX_TOOL_NAME_LEN, McpRegistrationError, McpToolRegistry, SyncArgs, SyncArgsContext,
    TaskSupport, ToolDefinition, ToolHandler, ToolOutput, ToolRegistration, ToolSettings,
    validate_tool_name,
};
pub use resources::{
    Completer, McpResourceRegistry, ResourceDefinition, ResourceError, ResourceEvent,
    ResourceLister, ResourceReader, ResourceRegistrationError, ResourceRequest,
    ResourceTemplateDefinition,
};
pub use schema::{
    ErrorDetails, JsonObject, McpErrorDetail, McpMessage, McpToolCall, McpToolResult,
    McpToolResultParts, SchemaError, status_indicates_failure,
};
pub use tool_content::WithContent;
pub use validation::CompiledSchema;
pub use wire::types::{ContentBlock, LoggingLevel};
pub use wire::version::{Era, ProtocolVersion};

/// What the `mcp_tool`/`mcp_tools`/`mcp_prompt`/`mcp_resource` macros' generated code names
/// (`codomyrmex_mcp::__private::…`): public because that code is compiled in the user's crate,
/// hidden because it is no API of its own and may change in any release.
#[doc(hidden)]
pub use tool_support::__private;
pub use tool_support::{FnRegistrationError, McpTools};

/// The crate's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

#[cfg(test)]
mod import_cycle_tests;
#[cfg(test)]
mod layering_tests;
#[cfg(test)]
mod public_paths_tests;
#[cfg(test)]
mod test_runtime;
#[cfg(test)]
mod walk_tests;
