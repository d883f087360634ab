"""A compatibility-mode server, for the tests: `compat_server.py [stdio|http]`.

Its tools answer as Codomyrmex's do: `greet` returns a `str`, `stats` a `dict`, `boom`
raises, `typed` declares an output schema, and `codomyrmex.shout` is an `@mcp_tool`
function (compat's decorator) registered with `register_tool`. The same server is served
over stdio, over Streamable HTTP (a port the OS picks on 127.0.0.1, reported on stderr) and
called in process by the tests (`build()`).
"""

import asyncio
import sys

from codomyrmex_mcp.compat import MCPServer, MCPServerConfig, mcp_tool


def build(transport: str = "stdio") -> MCPServer:
    """The server, with its tools."""
    server = MCPServer(MCPServerConfig(name="compat-wire", version="0.0.1", transport=transport))

    @server.tool()
    def greet(name: str) -> str:
        """Greets."""
        return f"hello {name}"

    @server.tool()
    def stats(n: int) -> dict:
        """Counts."""
        return {"n": n, "double": 2 * n, "word": "é"}

    @server.tool()
    def boom(message: str) -> str:
        """Raises."""
        raise ValueError(message)

    out_schema = {"type": "object", "properties": {"result": {"type": "object"}}}
    server.register_tool(
        "typed",
        {
            "name": "typed",
            "description": "With an output schema.",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": []},
            "outputSchema": out_schema,
        },
        lambda n=1: {"n": n},
    )

    @mcp_tool(description="Shouts.")
    def shout(text: str) -> str:
        return text.upper()

    meta = shout._mcp_tool_meta
    server.register_tool(meta["name"], {"name": meta["name"], "description": meta["description"], "inputSchema": meta["schema"]}, shout)
    return server


if __name__ == "__main__":
    transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    server = build(transport)
    if transport == "http":
        asyncio.run(server.run_http("127.0.0.1", 0))
    else:
        server.run()
