"""A tool's exception reaches the client without the server's absolute paths (SECURITY.md:
no message carries a server path): an OSError's file names by their last component, any
other absolute path in a message likewise."""

import asyncio
import json

from codomyrmex_mcp import MCPServer, MCPServerConfig

from conftest import MODERN_META


def call(server, name):
    async def run():
        return await server.handle_request(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": {}, "_meta": MODERN_META}}
        )

    return asyncio.run(run())["result"]


def test_an_oserror_reaches_the_client_without_the_servers_paths(tmp_path):
    server = MCPServer(MCPServerConfig(name="paths", version="1"))
    missing = tmp_path / "secret-dir" / "name.txt"

    @server.tool(description="Reads a file that is not there.")
    def read_missing() -> str:
        with open(missing) as f:
            return f.read()

    @server.tool(description="Renames between two absolute paths.")
    def rename() -> None:
        raise PermissionError(13, "Permission denied", "/srv/app/a.txt", None, "/srv/app/b.txt")

    @server.tool(description="Fails with a path in its message.")
    def mention() -> None:
        raise RuntimeError("cannot use /srv/app/config.toml (see https://example.com/docs/x)")

    result = call(server, "read_missing")
    assert result["isError"] is True
    error = result["structuredContent"]
    assert error["error_type"] == "FileNotFoundError"
    assert error["error_message"] == "[Errno 2] No such file or directory: 'name.txt'", error
    assert str(tmp_path) not in json.dumps(result), result

    result = call(server, "rename")
    assert result["structuredContent"]["error_message"] == "[Errno 13] Permission denied: 'a.txt' -> 'b.txt'", result
    assert "/srv" not in json.dumps(result), result

    result = call(server, "mention")
    message = result["structuredContent"]["error_message"]
    assert message == "cannot use config.toml (see https://example.com/docs/x)", result
    assert "/srv" not in json.dumps(result), result
