//! # codomyrmex-mcp-py
//!
//! The native half (`codomyrmex_mcp._core`) of the Python package `codomyrmex_mcp`: the
//! Codomyrmex `model_context_protocol` API for Python programmers, backed by this workspace's
//! Rust registry, engine and transports.
//!
//! ## What it is
//! - [`ToolRegistry`](registry::ToolRegistry): a [`codomyrmex_mcp::McpToolRegistry`] whose
//!   handlers are Python callables. Names, schemas, conflicts and argument validation are the
//!   Rust registry's; only the tool body runs in Python.
//! - [`Server`](server::Server): a [`codomyrmex_mcp::McpServer`] over that registry (plus
//!   resources and prompts) served over stdio or Streamable HTTP, both protocol eras, with the
//!   Rust server's security defaults and limits.
//! - [`Client`](client::Client): the library's [`codomyrmex_mcp::client::McpClient`] over a stdio
//!   child or Streamable HTTP (with OAuth), both eras, blocking with the GIL released or
//!   reporting to an asyncio callback; compatibility mode's `MCPClient` is built on it.
//!
//! ## What it is not
//! - Not the public Python API: `python/codomyrmex_mcp/` wraps these classes with the seed's
//!   names, the Pydantic models and `@mcp_tool`. Values cross the boundary as JSON text, so
//!   the Rust side never holds Python objects other than the callables it invokes.
//! - Not a second engine: every protocol rule is the library's.
#![warn(missing_docs)]

use pyo3::prelude::*;

// The client (issue #28): McpClient for Python.
pub mod client;
mod client_oauth;

mod errors;
mod loopback;
pub mod registry;
mod runtime;
pub mod server;
// The core's JSON Schema validator, for compatibility mode's quality.validation (issue #28).
pub mod validate;
// The library's confinement (Unix), for compatibility mode's file tools (issue #28).
#[cfg(unix)]
pub mod confined;

pub use errors::{ClientRequestFailed, InputRequired, MCPRegistrationError};

/// The extension module `codomyrmex_mcp._core`.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<registry::ToolRegistry>()?;
    m.add_class::<registry::CallState>()?;
    m.add_class::<server::Server>()?;
    m.add_class::<server::Stop>()?;
    m.add(
        "MCPRegistrationError",
        m.py().get_type::<MCPRegistrationError>(),
    )?;
    m.add("InputRequired", m.py().get_type::<InputRequired>())?;
    m.add(
        "ClientRequestFailed",
        m.py().get_type::<ClientRequestFailed>(),
    )?;
    // The client (issue #28).
    m.add_class::<client::Client>()?;
    m.add_class::<client::Pending>()?;
    m.add("ClientFailure", m.py().get_type::<client::ClientFailure>())?;

    // The core's JSON Schema validator (compatibility mode, issue #28).
    m.add_function(wrap_pyfunction!(validate::schema_violations, m)?)?;
    #[cfg(unix)]
    m.add_class::<confined::ConfinedRoot>()?;
    m.add("__version__", codomyrmex_mcp::VERSION)?;
    // Exit safety (issue #28, item 5): end waits and let calls finish before shutdown.
    runtime::register_exit_hook(m)?;
    Ok(())
}
