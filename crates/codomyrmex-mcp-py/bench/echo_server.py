"""The echo server for load tests (`../../../scripts/codomyrmex-python-bench.py`): one tool,
`echo(text) -> str`, on `codomyrmex_mcp`, rate limits off.

    python echo_server.py stdio
    python echo_server.py http PORT          # Streamable HTTP at http://127.0.0.1:PORT/mcp
    python echo_server.py stdio --compat     # the same tool in compatibility mode

Plain `codomyrmex_mcp` sends the string as the text block (what mcpload checks); in
compatibility mode the text is `{"result": "..."}`, as Codomyrmex sends it.
"""

import asyncio
import sys

if "--compat" in sys.argv:
    from codomyrmex_mcp.compat import MCPServer, MCPServerConfig
else:
    from codomyrmex_mcp import MCPServer, MCPServerConfig

server = MCPServer(MCPServerConfig(name="echo", version="1", rate_limit_rate=0, log_level="WARNING"))


@server.tool()
def echo(text: str) -> str:
    """Echoes a text."""
    return text


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run()
    else:
        asyncio.run(server.run_http("127.0.0.1", int(sys.argv[2])))
