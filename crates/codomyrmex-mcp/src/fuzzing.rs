//! Internals exposed for the fuzz targets in `fuzz/` and for robustness tests: the core's
//! (`requestState` sealing), the HTTP transport's (header checks) and a hostile server's
//! byte stream into the client (`hostile_server`).
//!
//! Not a stable API: free to change in any release (it is public only because the fuzz
//! targets are another crate).

#[cfg(feature = "http")]
use serde_json::{Map, Value};

#[cfg(feature = "http")]
use crate::wire::ErrorObject;
pub use codomyrmex_mcp_core::fuzzing::*;

mod hostile_server;
pub use hostile_server::{HostileOutcome, LAST_ID, TURN, hostile_server};

/// Checks a modern-era request's `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` and
/// `Mcp-Param-*` headers against its body, as the HTTP transport does before routing it.
#[cfg(feature = "http")]
pub fn validate_modern_headers(
    headers: &axum::http::HeaderMap,
    method: &str,
    params: &Map<String, Value>,
    registry: &crate::McpToolRegistry,
) -> Result<(), ErrorObject> {
    crate::transport::http::headers::validate(headers, method, params, registry)
}

/// Decodes a header value that may use the `=?base64?...?=` form.
#[cfg(feature = "http")]
pub fn decode_header_value(raw: &str) -> Result<String, String> {
    crate::transport::http::headers::decode_value(raw)
}
