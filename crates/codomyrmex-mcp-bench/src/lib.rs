//! Benchmarks for codomyrmex-mcp. Nothing here is published.
//!
//! - `benches/engine.rs`: criterion benchmarks of the in-memory engine path.
//! - `src/bin/stdio_load.rs`: whole-process stdio round trips against any server command.
//! - `src/bin/rmcp_echo.rs`: the comparison subject, the same echo tool on rmcp.
//! - `src/bin/bare_echo.rs`: the yardstick, a bare serde_json echo loop.
//!
//! `scripts/bench.sh` at the repository root runs the whole comparison.
