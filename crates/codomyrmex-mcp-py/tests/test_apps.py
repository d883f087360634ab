"""MCP Apps (`io.modelcontextprotocol/ui`) from Python: `server.add_ui_resource` serves an
app's HTML as a `ui://` resource with its `_meta.ui`, `@server.tool(ui=..., visibility=...)`
links a tool to it, and bad links or metadata are refused with a clear error."""

import asyncio

import pytest

from codomyrmex_mcp import MCPRegistrationError, MCPServer, MCPServerConfig
from conftest import legacy_handshake

APP = "text/html;profile=mcp-app"
HTML = "<!DOCTYPE html><html><body>app</body></html>"


def server():
    s = MCPServer(MCPServerConfig(name="apps", version="1"))
    s.add_ui_resource(
        "ui://demo/view",
        HTML,
        name="view",
        csp={"connectDomains": ["https://api.example.com"]},
        permissions=["clipboardWrite"],
        prefers_border=True,
    )

    @s.tool(name="show", ui="ui://demo/view")
    def show() -> dict:
        """Shows the table."""
        return {"rows": [1, 2]}

    @s.tool(name="refresh", ui="ui://demo/view", visibility=["app"])
    def refresh() -> dict:
        """Refreshes it."""
        return {"rows": [3]}

    return s


def exchange(s, *messages):
    async def run():
        await legacy_handshake(s)
        return [await s.handle_request(m) for m in messages]

    return asyncio.run(run())


def test_the_app_and_its_tools_are_on_the_wire():
    s = server()
    tools, resources, read, call = exchange(
        s,
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 2, "method": "resources/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "ui://demo/view"}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "refresh", "arguments": {}}},
    )
    by_name = {t["name"]: t for t in tools["result"]["tools"]}
    assert by_name["show"]["_meta"]["ui"] == {"resourceUri": "ui://demo/view"}
    assert by_name["refresh"]["_meta"]["ui"] == {"resourceUri": "ui://demo/view", "visibility": ["app"]}
    ui = {
        "csp": {"connectDomains": ["https://api.example.com"]},
        "permissions": {"clipboardWrite": {}},
        "prefersBorder": True,
    }
    entry = next(r for r in resources["result"]["resources"] if r["uri"] == "ui://demo/view")
    assert entry["mimeType"] == APP and entry["_meta"]["ui"] == ui
    item = read["result"]["contents"][0]
    assert item["mimeType"] == APP and item["text"] == HTML and item["_meta"]["ui"] == ui
    assert call["result"]["structuredContent"] == {"result": {"rows": [3]}}


def test_the_extension_is_declared():
    s = server()

    async def run():
        init, _ = await legacy_handshake(s)
        return init

    init = asyncio.run(run())
    assert init["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/ui"] == {}


def test_a_tool_linking_an_unserved_ui_resource_is_refused():
    s = MCPServer(MCPServerConfig(name="apps", version="1"))
    with pytest.raises(ValueError, match="add_ui_resource"):

        @s.tool(name="show", ui="ui://demo/missing")
        def show() -> str:
            return "x"

    assert "show" not in s.registry.list_tools()


def test_bad_metadata_is_a_clear_error():
    s = MCPServer(MCPServerConfig(name="apps", version="1"))
    with pytest.raises(ValueError, match="ui://"):
        s.add_ui_resource("https://example.com/app.html", HTML)
    with pytest.raises(ValueError, match="contains ';'"):
        s.add_ui_resource("ui://demo/view", HTML, csp={"connectDomains": ["https://a.example; script-src *"]})
    s.add_ui_resource("ui://demo/view", HTML)
    with pytest.raises(MCPRegistrationError, match="unknown variant `robot`, expected `model` or `app`"):

        @s.tool(name="odd", ui="ui://demo/view", visibility=["robot"])
        def odd() -> str:
            return "x"
