"""Interop check: the official Python MCP SDK's stdio client against `codomyrmex-mcp serve`.

Usage: python_sdk_stdio.py PATH_TO_CODOMYRMEX_MCP_BINARY

For each connection mode of the SDK's client -- the legacy `initialize` handshake and the
`server/discover` probe of a dual-era client (which settles on 2026-07-28) -- it launches the
binary over stdio, initialises, lists the tools, calls `codomyrmex.list_registered_tools` and
`codomyrmex.get_tool_schema`, and checks every answer. The classic `stdio_client` +
`ClientSession` pair is exercised too. Exits non-zero on the first mismatch.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

# The Codomyrmex module's own tools; the binary may serve more.
CORE_TOOLS = ["codomyrmex.get_tool_schema", "codomyrmex.list_registered_tools"]


class Mismatch(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Mismatch(what)


def text_blocks(result: Any) -> list[str]:
    return [c.text for c in result.content if getattr(c, "type", None) == "text"]


def check_list_tools_call(result: Any, listed: list[str], label: str) -> None:
    """`codomyrmex.list_registered_tools` names exactly what tools/list listed, sorted."""
    check(not result.is_error, f"{label}: list_registered_tools reported an error: {result}")
    check(
        result.structured_content == {"tools": listed},
        f"{label}: list_registered_tools gave {result.structured_content!r}, tools/list gave {listed!r}",
    )
    # The model reads the names, one a line.
    texts = text_blocks(result)
    check(len(texts) == 1, f"{label}: expected one text block, got {texts!r}")
    check(
        texts[0] == "".join(f"{name}\n" for name in listed),
        f"{label}: the text block does not list the names a line each: {texts[0]!r}",
    )


def check_schema_call(result: Any, listed_tool: Any, label: str) -> None:
    """`codomyrmex.get_tool_schema` returns the same definition tools/list gave."""
    check(not result.is_error, f"{label}: get_tool_schema reported an error: {result}")
    sc = result.structured_content or {}
    check(sc.get("name") == "codomyrmex.get_tool_schema", f"{label}: schema name was {sc.get('name')!r}")
    schema = sc.get("inputSchema") or {}
    check(schema.get("type") == "object", f"{label}: inputSchema was {schema!r}")
    check(schema.get("required") == ["tool_name"], f"{label}: required was {schema.get('required')!r}")
    check(
        (schema.get("properties") or {}).get("tool_name", {}).get("type") == "string",
        f"{label}: tool_name property was {schema.get('properties')!r}",
    )
    check(schema == listed_tool.input_schema, f"{label}: inputSchema differs from tools/list's")
    check(sc.get("description") == listed_tool.description, f"{label}: description differs from tools/list's")


def check_failure_call(result: Any, label: str) -> None:
    # An unknown tool name passed as an *argument* is a tool execution error (isError) with a
    # readable text block; the seed's McpErrorDetail is the structured content unless the tool
    # declares an output schema (which an error detail would not satisfy).
    check(result.is_error, f"{label}: get_tool_schema of a missing tool was not an error: {result}")
    texts = text_blocks(result)
    check(any("ToolNotFound" in t and "no.such.tool" in t for t in texts), f"{label}: no readable error text in {texts!r}")
    if result.structured_content is not None:
        check(
            result.structured_content.get("error_type") == "ToolNotFound",
            f"{label}: error detail was {result.structured_content!r}",
        )


def check_tools(tools: list[Any], label: str) -> list[str]:
    """Checks the listing and returns the names, sorted."""
    check(bool(tools), f"{label}: tools/list is empty")
    names = sorted(t.name for t in tools)
    check(len(set(names)) == len(names), f"{label}: tools/list repeats a name: {names!r}")
    for core in CORE_TOOLS:
        check(core in names, f"{label}: tools/list lacks {core}: {names!r}")
    for t in tools:
        check(t.input_schema.get("type") == "object", f"{label}: {t.name} inputSchema {t.input_schema!r}")
    by_name = {t.name: t for t in tools}
    schema_tool = by_name["codomyrmex.get_tool_schema"]
    check(schema_tool.input_schema.get("type") == "object", f"{label}: inputSchema {schema_tool.input_schema!r}")
    check(bool(schema_tool.description), f"{label}: get_tool_schema has no description")
    return names


async def run_client_mode(binary: str, mode: str, expected_version: str) -> None:
    label = f"Client(mode={mode!r})"
    params = StdioServerParameters(command=binary, args=["serve"])
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:
        check(
            client.protocol_version == expected_version,
            f"{label}: negotiated {client.protocol_version!r}, expected {expected_version!r}",
        )
        info = client.server_info
        check(info is not None and info.name == "codomyrmex-mcp", f"{label}: serverInfo was {info!r}")
        check(client.server_capabilities.tools is not None, f"{label}: no tools capability")
        check(bool(client.instructions), f"{label}: no instructions")

        listed = await client.list_tools()
        check(listed.next_cursor is None, f"{label}: unexpected nextCursor {listed.next_cursor!r}")
        names = check_tools(listed.tools, label)

        check_list_tools_call(await client.call_tool("codomyrmex.list_registered_tools", {}), names, label)
        schema_tool = next(t for t in listed.tools if t.name == "codomyrmex.get_tool_schema")
        check_schema_call(
            await client.call_tool("codomyrmex.get_tool_schema", {"tool_name": "codomyrmex.get_tool_schema"}),
            schema_tool,
            label,
        )
        check_failure_call(
            await client.call_tool("codomyrmex.get_tool_schema", {"tool_name": "no.such.tool"}), label
        )
    print(f"ok: {label} negotiated {expected_version}")


async def run_classic_session(binary: str) -> None:
    label = "stdio_client + ClientSession"
    params = StdioServerParameters(command=binary, args=["serve"])
    async with stdio_client(params) as streams:
        async with ClientSession(*streams) as session:
            init = await session.initialize()
            check(init.protocol_version == "2025-11-25", f"{label}: negotiated {init.protocol_version!r}")
            check(init.server_info.name == "codomyrmex-mcp", f"{label}: serverInfo {init.server_info!r}")
            listed = await session.list_tools()
            names = check_tools(listed.tools, label)
            check_list_tools_call(await session.call_tool("codomyrmex.list_registered_tools", {}), names, label)
            schema_tool = next(t for t in listed.tools if t.name == "codomyrmex.get_tool_schema")
            check_schema_call(
                await session.call_tool(
                    "codomyrmex.get_tool_schema", {"tool_name": "codomyrmex.get_tool_schema"}
                ),
                schema_tool,
                label,
            )
            check_failure_call(
                await session.call_tool("codomyrmex.get_tool_schema", {"tool_name": "no.such.tool"}), label
            )
    print(f"ok: {label}")


async def main(binary: str) -> None:
    await run_client_mode(binary, "legacy", "2025-11-25")
    await run_client_mode(binary, "auto", "2026-07-28")
    await run_classic_session(binary)


def first_mismatch(e: BaseException) -> Mismatch | None:
    """The Mismatch inside `e`, which anyio may have wrapped in exception groups."""
    if isinstance(e, Mismatch):
        return e
    if isinstance(e, BaseExceptionGroup):
        for inner in e.exceptions:
            if (found := first_mismatch(inner)) is not None:
                return found
    return None


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: python_sdk_stdio.py PATH_TO_CODOMYRMEX_MCP", file=sys.stderr)
        sys.exit(2)
    try:
        asyncio.run(asyncio.wait_for(main(sys.argv[1]), timeout=120))
    except TimeoutError:
        print("MISMATCH: the interop run did not finish within 120 s", file=sys.stderr)
        sys.exit(1)
    except BaseException as e:  # noqa: BLE001 - any failure is a failed interop check
        mismatch = first_mismatch(e)
        if mismatch is None:
            raise
        print(f"MISMATCH: {mismatch}", file=sys.stderr)
        sys.exit(1)
    print("python SDK interop: all checks passed")
