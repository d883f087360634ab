"""Shared helpers of the package's pytest suite."""

import pathlib

REPO = pathlib.Path(__file__).resolve().parents[3]
# The fixtures the Rust suite checks too (crates/codomyrmex-mcp/tests/schema_compat.rs).
FIXTURES = REPO / "crates" / "codomyrmex-mcp" / "tests" / "fixtures" / "pydantic"
SERVERS = pathlib.Path(__file__).resolve().parent / "servers"
