"""An MCP server written in Python with `codomyrmex_mcp`, for Claude Desktop (or any client).

Install the package once (`pip install ./crates/codomyrmex-mcp-py` from the repository root),
then add the server to Claude Desktop's `claude_desktop_config.json`:

    {
      "mcpServers": {
        "python-demo": {
          "command": "/path/to/python",
          "args": ["/path/to/examples/python/server.py"]
        }
      }
    }

where /path/to/python is the interpreter the package is installed in. Claude Desktop
starts it and speaks MCP over stdio. `python server.py --http` serves Streamable HTTP on
http://127.0.0.1:8000/mcp instead.
"""

import asyncio
import datetime
import sys
from enum import Enum
from typing import List

from pydantic import Field
from typing_extensions import Annotated

from codomyrmex_mcp import MCPServer, MCPServerConfig, mcp_tool
from codomyrmex_mcp.context import Context

server = MCPServer(
    MCPServerConfig(name="python-demo", version="1.0.0", transport="http" if "--http" in sys.argv else "stdio")
)


class Unit(Enum):
    KM = "km"
    MILES = "miles"


@server.tool(title="Text statistics")
def text_stats(text: Annotated[str, Field(description="The text to measure.")]) -> dict:
    """Counts the characters, words and lines of a text."""
    return {"characters": len(text), "words": len(text.split()), "lines": len(text.splitlines())}


@server.tool(title="Convert a distance")
def convert_distance(value: float, to: Unit) -> float:
    """Converts a distance to kilometres or miles (from the other unit)."""
    return round(value * 1.609344, 6) if to is Unit.KM else round(value / 1.609344, 6)


@server.tool(title="Current time")
def now(utc: bool = True) -> str:
    """The current date and time, ISO 8601."""
    moment = datetime.datetime.now(datetime.timezone.utc) if utc else datetime.datetime.now()
    return moment.isoformat(timespec="seconds")


@mcp_tool(category="demo")
async def sort_words(words: List[str], ctx: Context, descending: bool = False) -> List[str]:
    """Sorts words alphabetically, reporting progress."""
    ctx.report_progress(0, 1, "sorting")
    await asyncio.sleep(0)
    ctx.report_progress(1, 1, "sorted")
    return sorted(words, reverse=descending)


server.tool()(sort_words)
server.register_resource(
    "demo://about", "about", "What this server is.", "text/plain", lambda: "A Python MCP server on a Rust engine."
)
server.register_prompt(
    "summarize",
    "Asks for a summary of a text.",
    [{"name": "text", "description": "The text to summarize.", "required": True}],
    "Summarize this in three sentences:\n\n{text}",
)

if __name__ == "__main__":
    server.run()
