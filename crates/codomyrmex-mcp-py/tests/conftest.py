"""Shared helpers of the package's pytest suite: the repository's paths, the legacy-era
handshake messages and the modern era's `_meta`, and `within`, which runs a coroutine with a
hang guard. Not fixtures of any one test file's servers: those stay with their tests."""

import asyncio
import pathlib
import signal
import threading

REPO = pathlib.Path(__file__).resolve().parents[3]
# The fixtures the Rust suite checks too (crates/codomyrmex-mcp/tests/schema_compat.rs).
FIXTURES = REPO / "crates" / "codomyrmex-mcp" / "tests" / "fixtures" / "pydantic"
SERVERS = pathlib.Path(__file__).resolve().parent / "servers"


def default_sigint():
    """For `preexec_fn`: a server started from a background job inherits an ignored SIGINT
    (and Python then installs no KeyboardInterrupt handler); the Ctrl-C tests need the
    default, as in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


# The 2025-11-25 `initialize` request (id 0) and the notification that follows it.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}

# The `_meta` every 2026-07-28 request carries; tests add to a copy (`{**MODERN_META, ...}`).
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


async def legacy_handshake(server, initialize=INITIALIZE):
    """`initialize` then `notifications/initialized` through `server.handle_request`; the
    answers to both."""
    init = await server.handle_request(initialize)
    note = await server.handle_request(INITIALIZED)
    return init, note


def within(seconds, coroutine_factory):
    """Runs the coroutine on a daemon thread: a hang fails the test instead of hanging it."""
    outcome = []

    def run():
        try:
            outcome.append(("ok", asyncio.run(coroutine_factory())))
        except BaseException as e:  # reported below
            outcome.append(("raised", e))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert outcome, "handle_request hung"
    kind, value = outcome[0]
    if kind == "raised":
        raise value
    return value
