"""No crash at exit (issue #28, item 5): a process that used the package exits with the status
its script chose, prints nothing FATAL, and is gone within 10 s, whatever it left running:
tool calls in flight (their bodies still running on Rust threads), a daemon thread calling
in, a server that never stopped (on a daemon thread or on a non-daemon one), an asyncio
program that exits with a call still waiting.

Before Python 3.14 a thread that takes the GIL during interpreter finalization is ended
with `pthread_exit`; through a Rust frame that catches unwinds that aborts the process with
`FATAL: exception not rethrown`. Each scenario is run many times (in parallel batches), as
the crash needs a thread to wake inside the short finalization window."""

import os
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

# Runs per scenario; the scenarios together make well over a hundred exits.
RUNS = int(os.environ.get("EXIT_SAFETY_RUNS", "25"))
BATCH = 8
LIMIT = 10.0

PRELUDE = textwrap.dedent(
    """
    import asyncio, json, random, sys, threading, time
    from codomyrmex_mcp import MCPServer, MCPServerConfig

    def call(name, args, id=1):
        return {"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": args,
                           "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                     "io.modelcontextprotocol/clientCapabilities": {}}}}
    """
)

SCENARIOS = {
    # Tool bodies still running on the Rust blocking pool after their calls timed out; they
    # wake one after another around the moment the interpreter finalizes.
    "tools_in_flight": """
        server = MCPServer(MCPServerConfig(default_tool_timeout=0.02, rate_limit_rate=0))

        @server.tool()
        def nap(seconds: float) -> str:
            time.sleep(seconds)
            return "woke"

        async def main():
            await asyncio.gather(*(server.handle_request(call("nap", {"seconds": 0.02 + i * 0.004}, i))
                                   for i in range(60)))

        asyncio.run(main())
        sys.exit(3)
    """,
    # The same past the exit hook's wait (4 s): the bodies wake while the interpreter
    # finalizes, and must neither abort the process nor hold it.
    "tools_outlive_exit_wait": """
        server = MCPServer(MCPServerConfig(default_tool_timeout=0.02, rate_limit_rate=0))

        @server.tool()
        def nap(seconds: float) -> str:
            time.sleep(seconds)
            return "woke"

        async def main():
            await asyncio.gather(*(server.handle_request(call("nap", {"seconds": 3.9 + i * 0.004}, i))
                                   for i in range(60)))

        asyncio.run(main())
        sys.exit(4)
    """,
    # A daemon thread calling in without pause while the main thread leaves.
    "daemon_calling_in": """
        server = MCPServer(MCPServerConfig(rate_limit_rate=0))

        @server.tool()
        def nap(seconds: float) -> str:
            time.sleep(seconds)
            return "woke"

        def caller(k):
            async def loop():
                i = 0
                while True:
                    i += 1
                    await server.handle_request(call("nap", {"seconds": 0.001 * (i % 7)}, k * 1_000_000 + i))
            asyncio.run(loop())

        for k in range(4):
            threading.Thread(target=caller, args=(k,), daemon=True).start()
        time.sleep(0.3)
    """,
    # An HTTP server on a non-daemon thread that nobody stops, with a call in flight.
    "server_never_stopped": """
        server = MCPServer(MCPServerConfig(transport="http", rate_limit_rate=0))
        ready = threading.Event()

        @server.tool()
        def nap(seconds: float) -> str:
            time.sleep(seconds)
            return "woke"

        async def serve():
            await server.run_http(port=0, on_ready=lambda port: ready.set())

        threading.Thread(target=asyncio.run, args=(serve(),)).start()
        ready.wait(10)

        async def main():
            await asyncio.wait_for(server.handle_request(call("nap", {"seconds": 1})), 5)
        asyncio.run(main())
        sys.exit(5)
    """,
    # asyncio.run ends with a call still waiting on a tool that would take minutes.
    "asyncio_call_pending": """
        server = MCPServer(MCPServerConfig(default_tool_timeout=0, rate_limit_rate=0))
        stop = threading.Event()

        @server.tool()
        def stuck() -> str:
            stop.wait(600)
            return "late"

        async def main():
            asyncio.ensure_future(server.handle_request(call("stuck", {})))
            await asyncio.sleep(0.2)

        asyncio.run(main())
    """,
}

EXPECTED = {"tools_in_flight": 3, "tools_outlive_exit_wait": 4, "daemon_calling_in": 0, "server_never_stopped": 5, "asyncio_call_pending": 0}


def run_once(path):
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, str(path)],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=LIMIT * 3,
        )
    except subprocess.TimeoutExpired as e:
        return None, (e.stderr or b"").decode("utf-8", "replace") if isinstance(e.stderr, bytes) else (e.stderr or ""), LIMIT * 3
    return done.returncode, done.stderr, time.monotonic() - started


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_exit_is_clean(scenario, tmp_path):
    path = tmp_path / f"{scenario}.py"
    path.write_text(PRELUDE + textwrap.dedent(SCENARIOS[scenario]))
    with ThreadPoolExecutor(BATCH) as pool:
        outcomes = list(pool.map(run_once, [path] * RUNS))
    bad = []
    for status, stderr, seconds in outcomes:
        problems = []
        if status != EXPECTED[scenario]:
            problems.append(f"status {status}")
        if "FATAL" in stderr or "Fatal Python error" in stderr:
            problems.append("FATAL on stderr")
        if seconds > LIMIT:
            problems.append(f"took {seconds:.1f} s")
        if problems:
            bad.append(f"{', '.join(problems)}: {stderr.strip()[-300:]!r}")
    assert not bad, f"{len(bad)} of {RUNS} exits were not clean:\n" + "\n".join(bad[:5])
