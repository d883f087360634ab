"""Shared helpers of the package's pytest suite."""

import pathlib
import signal

REPO = pathlib.Path(__file__).resolve().parents[3]
# The fixtures the Rust suite checks too (crates/codomyrmex-mcp/tests/schema_compat.rs).
FIXTURES = REPO / "crates" / "codomyrmex-mcp" / "tests" / "fixtures" / "pydantic"
SERVERS = pathlib.Path(__file__).resolve().parent / "servers"


def default_sigint():
    """For `preexec_fn`: a server started from a background job inherits an ignored SIGINT
    (and Python then installs no KeyboardInterrupt handler); the Ctrl-C tests need the
    default, as in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
