"""Interop check: the official Python MCP SDK's Streamable HTTP client against
`codomyrmex-mcp serve --http`.

Usage: python_sdk_http.py PATH_TO_CODOMYRMEX_MCP_BINARY

Starts the binary on a free loopback port with a bearer token (CODOMYRMEX_MCP_AUTH_TOKEN),
then, with the SDK's Streamable HTTP transport carrying `Authorization: Bearer ...`:

- `Client(mode="legacy")`: the 2025-11-25 `initialize` handshake (an `Mcp-Session-Id` session);
- `Client(mode="auto")`: the dual-era probe, which settles on stateless 2026-07-28;
- the classic `streamable_http_client` + `ClientSession` pair;

each initialises, lists the tools and calls `codomyrmex.list_registered_tools` and
`codomyrmex.get_tool_schema`. A request without the token must get 401 with a Bearer
challenge. Finally the server gets SIGTERM and must exit cleanly. Exits non-zero on the first
mismatch.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import httpx2
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

TOKEN = "interop-" + os.urandom(8).hex()
EXPECTED_TOOLS = {"codomyrmex.get_tool_schema", "codomyrmex.list_registered_tools"}


class Mismatch(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Mismatch(what)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Mismatch(f"the server exited early with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise Mismatch(f"the server did not listen on port {port} within {timeout} s")


def text_blocks(result: Any) -> list[str]:
    return [c.text for c in result.content if getattr(c, "type", None) == "text"]


def check_tools(tools: list[Any], label: str) -> None:
    names = {t.name for t in tools}
    check(EXPECTED_TOOLS <= names, f"{label}: tools/list gave {sorted(names)!r}")


def check_calls_result(listed: Any, schema: Any, label: str) -> None:
    check(not listed.is_error, f"{label}: list_registered_tools reported an error: {listed}")
    tools = (listed.structured_content or {}).get("tools") or []
    check(EXPECTED_TOOLS <= set(tools), f"{label}: list_registered_tools gave {listed.structured_content!r}")
    texts = text_blocks(listed)
    check(len(texts) == 1 and texts[0] == "".join(f"{t}\n" for t in tools), f"{label}: text {texts!r}")
    check(not schema.is_error, f"{label}: get_tool_schema reported an error: {schema}")
    sc = schema.structured_content or {}
    check(sc.get("name") == "codomyrmex.get_tool_schema", f"{label}: schema name was {sc.get('name')!r}")
    check((sc.get("inputSchema") or {}).get("type") == "object", f"{label}: inputSchema {sc!r}")


def http_client() -> httpx2.AsyncClient:
    return create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})


async def run_client_mode(url: str, mode: str, expected_version: str) -> None:
    label = f"Client(mode={mode!r})"
    async with http_client() as hc:
        async with Client(streamable_http_client(url, http_client=hc), mode=mode, read_timeout_seconds=30) as client:
            check(
                client.protocol_version == expected_version,
                f"{label}: negotiated {client.protocol_version!r}, expected {expected_version!r}",
            )
            info = client.server_info
            check(info is not None and info.name == "codomyrmex-mcp", f"{label}: serverInfo was {info!r}")
            check(client.server_capabilities.tools is not None, f"{label}: no tools capability")
            listed = await client.list_tools()
            check_tools(listed.tools, label)
            check_calls_result(
                await client.call_tool("codomyrmex.list_registered_tools", {}),
                await client.call_tool("codomyrmex.get_tool_schema", {"tool_name": "codomyrmex.get_tool_schema"}),
                label,
            )
    print(f"ok: {label} negotiated {expected_version}")


async def run_classic_session(url: str) -> None:
    label = "streamable_http_client + ClientSession"
    async with http_client() as hc:
        async with streamable_http_client(url, http_client=hc) as streams:
            async with ClientSession(*streams) as session:
                init = await session.initialize()
                check(init.protocol_version == "2025-11-25", f"{label}: negotiated {init.protocol_version!r}")
                check(init.server_info.name == "codomyrmex-mcp", f"{label}: serverInfo {init.server_info!r}")
                listed = await session.list_tools()
                check_tools(listed.tools, label)
                check_calls_result(
                    await session.call_tool("codomyrmex.list_registered_tools", {}),
                    await session.call_tool(
                        "codomyrmex.get_tool_schema", {"tool_name": "codomyrmex.get_tool_schema"}
                    ),
                    label,
                )
    print(f"ok: {label}")


async def check_unauthenticated(url: str) -> None:
    async with httpx2.AsyncClient() as hc:
        r = await hc.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Accept": "application/json, text/event-stream"},
        )
        check(r.status_code == 401, f"no token: status {r.status_code}")
        check(r.headers.get("www-authenticate", "").startswith("Bearer"), f"no token: {r.headers!r}")
        r = await hc.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            headers={"Accept": "application/json, text/event-stream", "Authorization": "Bearer wrong"},
        )
        check(r.status_code == 401, f"wrong token: status {r.status_code}")
    print("ok: requests without the right token get 401")


async def main(url: str) -> None:
    await check_unauthenticated(url)
    await run_client_mode(url, "legacy", "2025-11-25")
    await run_client_mode(url, "auto", "2026-07-28")
    await run_classic_session(url)


def run(binary: str) -> None:
    port = free_port()
    env = dict(os.environ, CODOMYRMEX_MCP_AUTH_TOKEN=TOKEN)
    proc = subprocess.Popen([binary, "serve", "--http", f"127.0.0.1:{port}"], env=env)
    try:
        wait_listening(port, proc)
        asyncio.run(asyncio.wait_for(main(f"http://127.0.0.1:{port}/mcp"), timeout=120))
        proc.send_signal(signal.SIGTERM)
        try:
            status = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            raise Mismatch("the server did not stop within 30 s of SIGTERM")
        check(status == 0, f"the server exited with status {status} after SIGTERM")
        print("ok: SIGTERM stops the server cleanly")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python_sdk_http.py PATH_TO_CODOMYRMEX_MCP", file=sys.stderr)
        sys.exit(2)
    try:
        run(sys.argv[1])
    except TimeoutError:
        print("MISMATCH: the interop run did not finish within 120 s", file=sys.stderr)
        sys.exit(1)
    except Mismatch as e:
        print(f"MISMATCH: {e}", file=sys.stderr)
        sys.exit(1)
    print("python SDK HTTP interop: all checks passed")
