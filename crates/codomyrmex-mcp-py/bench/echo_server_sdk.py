"""The same echo server on the official Python SDK (`mcp` 2.x, its `MCPServer`), for
`../../../scripts/codomyrmex-python-bench.py`.

    python echo_server_sdk.py stdio
    python echo_server_sdk.py http PORT      # Streamable HTTP at http://127.0.0.1:PORT/mcp
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer(name="echo", version="1", log_level="WARNING")


@server.tool()
def echo(text: str) -> str:
    """Echoes a text."""
    return text


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
