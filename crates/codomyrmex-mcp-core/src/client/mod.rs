//! The client's protocol logic, sans-IO, beside the server's engine: [`proto`] (request ids
//! and response matching, `_meta`, era negotiation, the multi round-trip loop, list caching
//! by `ttlMs` and `cacheScope`) and [`param_headers`] (the `x-mcp-header` annotations and
//! the `Mcp-Param-*` headers of a call).
//!
//! No I/O, no clock (time is an input), no runtime: the library's `McpClient` is the driver
//! (dispatch, timeouts, cancellation on drop) and its transports move the bytes. Re-exported
//! there as `codomyrmex_mcp::client::proto` and `::param_headers`.

mod list_cache;
pub mod param_headers;
pub mod proto;
