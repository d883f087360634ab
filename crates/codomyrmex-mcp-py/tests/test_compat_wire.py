"""Compatibility mode on the wire: the official Python SDK's client calls a compat server's
tools over stdio and Streamable HTTP (both eras) and gets the same `tools/call` answers as
the in-process `handle_request` and `_call_tool`, and those are Codomyrmex's: a result's
text is `json.dumps({"result": value})`, a raised error's text is the original's error
object, and `structuredContent` comes only with an output schema."""

import asyncio
import json
import re
import subprocess
import sys

import pytest

from conftest import SERVERS

pytest.importorskip("mcp")

COMPAT = str(SERVERS / "compat_server.py")
sys.path.insert(0, str(SERVERS))

# (tool, arguments): a str result, a dict result, a raised error, an output schema, a
# decorated `@mcp_tool` function.
CALLS = [
    ("greet", {"name": "ada"}),
    ("stats", {"n": 3}),
    ("boom", {"message": "no way"}),
    ("typed", {"n": 5}),
    ("codomyrmex.shout", {"text": "hi"}),
]


def normalised(text, is_error, structured):
    """An answer without what differs from call to call (the error object's correlation id)."""
    if is_error:
        value = json.loads(text)
        assert isinstance(value.pop("correlation_id", None), str), text
        text = value
    return {"text": text, "isError": bool(is_error), "structuredContent": structured}


def from_dict(result):
    content = result["content"]
    assert len(content) == 1 and content[0]["type"] == "text", result
    return normalised(content[0]["text"], result.get("isError", False), result.get("structuredContent"))


def from_sdk(result):
    assert len(result.content) == 1 and result.content[0].type == "text", result
    return normalised(result.content[0].text, result.is_error, result.structured_content)


# Codomyrmex's answers, as its server writes them.
EXPECTED = {
    "greet": {"text": json.dumps({"result": "hello ada"}), "isError": False, "structuredContent": None},
    "stats": {"text": json.dumps({"result": {"n": 3, "double": 6, "word": "é"}}), "isError": False, "structuredContent": None},
    "boom": {
        "text": {"code": "EXECUTION_ERROR", "message": "no way", "tool_name": "boom", "module": "ValueError"},
        "isError": True,
        "structuredContent": None,
    },
    "typed": {"text": json.dumps({"result": {"n": 5}}), "isError": False, "structuredContent": {"result": {"n": 5}}},
    "codomyrmex.shout": {"text": json.dumps({"result": "HI"}), "isError": False, "structuredContent": None},
}


def in_process():
    """Each call's answer through `handle_request` and through `_call_tool`."""
    from compat_server import build

    async def run():
        server = build()
        answers = {}
        for i, (tool, arguments) in enumerate(CALLS):
            params = {"name": tool, "arguments": arguments}
            reply = await server.handle_request({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params})
            direct = await server._call_tool(params)
            answers[tool] = (from_dict(reply["result"]), from_dict(direct))
        return answers

    return asyncio.run(run())


def test_in_process_answers_are_codomyrmex_s():
    for tool, (handled, direct) in in_process().items():
        assert handled == EXPECTED[tool], tool
        assert direct == EXPECTED[tool], tool


def test_execute_still_returns_the_original_s_result():
    """Shaping is for tools/call only: `execute` keeps `data={"result": value}` and the
    failure detail."""
    from compat_server import build

    from codomyrmex_mcp.compat import MCPToolCall

    registry = build()._tool_registry
    ok = registry.execute(MCPToolCall(tool_name="greet", arguments={"name": "ada"}))
    assert ok.status == "success" and ok.data == {"result": "hello ada"}
    failed = registry.execute(MCPToolCall(tool_name="boom", arguments={"message": "no"}))
    assert failed.status == "failure" and failed.error.error_type == "ValueError" and failed.error.error_message == "no"


async def sdk_calls(client):
    return {tool: from_sdk(await client.call_tool(tool, arguments)) for tool, arguments in CALLS}


async def over_stdio(mode):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[COMPAT, "stdio"])
    async with Client(params, mode=mode, read_timeout_seconds=30) as client:
        return await sdk_calls(client)


async def over_http(url, mode):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(url), mode=mode, read_timeout_seconds=30) as client:
        return await sdk_calls(client)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_stdio_answers_equal_in_process_ones(mode):
    wire = asyncio.run(asyncio.wait_for(over_stdio(mode), 120))
    local = in_process()
    for tool, _ in CALLS:
        assert wire[tool] == local[tool][0] == EXPECTED[tool], (mode, tool, wire[tool])


@pytest.fixture
def http_url():
    proc = subprocess.Popen([sys.executable, COMPAT, "http"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        while True:
            line = proc.stderr.readline().decode()
            assert line, "the HTTP server exited before listening"
            found = re.search(r"serving MCP at (http://127\.0\.0\.1:\d+/mcp)", line)
            if found:
                break
        yield found.group(1)
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_streamable_http_answers_equal_in_process_ones(http_url, mode):
    wire = asyncio.run(asyncio.wait_for(over_http(http_url, mode), 120))
    local = in_process()
    for tool, _ in CALLS:
        assert wire[tool] == local[tool][0] == EXPECTED[tool], (mode, tool, wire[tool])
