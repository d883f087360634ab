//! The client's protocol logic, sans-IO, beside the server's engine: [`proto`] (request ids
//! and response matching, `_meta`, era negotiation, the multi round-trip loop, list caching
//! by `ttlMs` and `cacheScope`), [`param_headers`] (the `x-mcp-header` annotations and
//! the `Mcp-Param-*` headers of a call), and [`sending`] (what a transport decides about a
//! message it sends: its `Mcp-Name`, whether it opens a session or cancels a request).
//!
//! No I/O, no clock (time is an input), no runtime: the library's `McpClient` is the driver
//! (dispatch, timeouts, cancellation on drop) and its transports move the bytes. Re-exported
//! there as `codomyrmex_mcp::client::proto`, `::param_headers` and `::sending`.

mod list_cache;
pub mod param_headers;
pub mod proto;
pub mod sending;
