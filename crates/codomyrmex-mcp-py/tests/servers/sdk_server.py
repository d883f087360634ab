"""A server on the official Python SDK (PyPI `mcp`, its MCPServer, formerly FastMCP), for the
client tests: `sdk_server.py stdio` or `sdk_server.py http PORT` (Streamable HTTP at
`http://127.0.0.1:PORT/mcp`). Tools `add` and `fail` (always raises), the resource
`sdk://note` and the prompt `greet`."""

import sys
import warnings

from mcp.server.mcpserver import MCPServer

warnings.simplefilter("ignore")

server = MCPServer("sdk-server")


@server.tool()
def add(a: int, b: int = 0) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
def fail(message: str) -> str:
    """Always raises."""
    raise ValueError(message)


@server.resource("sdk://note")
def note() -> str:
    """A note."""
    return "a note from the SDK"


@server.prompt()
def greet(name: str) -> str:
    """Greets someone."""
    return f"Say hello to {name}"


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
