"""examples/python/server.py, the README's Claude Desktop example, over stdio with the
official SDK's client."""

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
