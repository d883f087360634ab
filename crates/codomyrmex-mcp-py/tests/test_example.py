"""examples/python/server.py, the README's Claude Desktop example, over stdio with the
official SDK's client, and started the way Claude Desktop starts it."""

import asyncio
import sys

import pytest

from conftest import REPO

pytest.importorskip("mcp")

EXAMPLE = str(REPO / "examples" / "python" / "server.py")


async def drive():
    from mcp import Client, StdioServerParameters

    async with Client(StdioServerParameters(command=sys.executable, args=[EXAMPLE]), read_timeout_seconds=30) as client:
        assert client.server_info.name == "python-demo"
        names = sorted(t.name for t in (await client.list_tools()).tools)
        assert names == ["convert_distance", "now", "sort_words", "text_stats"]
        stats = await client.call_tool("text_stats", {"text": "one two\nthree"})
        assert stats.structured_content == {"result": {"characters": 13, "words": 3, "lines": 2}}
        km = await client.call_tool("convert_distance", {"value": 1, "to": "km"})
        assert km.structured_content == {"result": 1.609344}
        bad = await client.call_tool("convert_distance", {"value": 1, "to": "parsecs"})
        assert bad.is_error
        words = await client.call_tool("sort_words", {"words": ["b", "c", "a"], "descending": True})
        assert words.structured_content == {"result": ["c", "b", "a"]}
        about = await client.read_resource("demo://about")
        assert about.contents[0].text == "A Python MCP server on a Rust engine."
        prompt = await client.get_prompt("summarize", {"text": "x"})
        assert prompt.messages[0].content.text.endswith("x")


def test_the_example_server_runs_over_stdio():
    asyncio.run(asyncio.wait_for(drive(), 120))


def test_the_example_starts_as_claude_desktop_launches_it(tmp_path):
    """As Claude Desktop runs a stdio server: the config's command and args, from another
    working directory, with a bare environment, stdin and stdout as pipes (stderr to its
    log). It answers tools/list after the handshake and exits at the end of its input."""
    import json
    import os
    import subprocess

    env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin", "HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, EXAMPLE],
        cwd=tmp_path,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "claude-ai", "version": "0.1.0"}},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
    ]
    try:
        out, err = proc.communicate("".join(json.dumps(m) + "\n" for m in messages).encode(), timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    replies = {m["id"]: m for m in map(json.loads, out.decode().splitlines()) if "id" in m}
    assert replies[0]["result"]["protocolVersion"] == "2025-06-18", err.decode()
    assert replies[0]["result"]["serverInfo"]["name"] == "python-demo"
    names = sorted(t["name"] for t in replies[1]["result"]["tools"])
    assert names == ["convert_distance", "now", "sort_words", "text_stats"]
    assert proc.returncode == 0, err.decode()
