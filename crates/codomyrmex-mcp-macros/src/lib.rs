//! The `#[mcp_tool]` attribute macro for `codomyrmex-mcp`.
//!
//! Do not depend on this crate directly: use `codomyrmex_mcp::mcp_tool`, which re-exports it
//! together with the hidden support items the generated code needs. The macro itself arrives
//! with its own issue; this crate is a placeholder so the workspace layout is final.
