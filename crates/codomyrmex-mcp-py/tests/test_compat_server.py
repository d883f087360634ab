"""Compatibility mode's ``MCPServer`` in process: Codomyrmex's answers (implicit session,
capabilities of what is registered, the JSON error object, no ``structuredContent`` without an
output schema, ``call_tool_fn``, ``_call_tool``, ``register_file_resource``), the
specification where the issue keeps it, and ``install()``'s aliasing. Plain ``MCPServer``'s
one change (a string result is sent as text) is pinned here too, against compat's."""

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest

from codomyrmex_mcp import MCPServer as PlainServer
from codomyrmex_mcp.compat.transport.server import LEGACY_VERSIONS, MCPServer, MCPServerConfig


def run(coroutine):
    return asyncio.run(coroutine)


def request(method, params=None, request_id=1):
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def server_with_tools():
    server = MCPServer(MCPServerConfig(name="compat-test", version="0.1.0"))

    @server.tool(name="greet", description="Says hello")
    def greet(name: str, times: int = 1) -> str:
        return "hello " + name

    @server.tool(name="fail")
    def fail() -> str:
        raise ValueError("broken on purpose")

    return server


def test_requests_are_answered_without_initialize():
    server = server_with_tools()
    listed = run(server.handle_request(request("tools/list")))
    assert [t["name"] for t in listed["result"]["tools"]] == ["fail", "greet"], listed
    called = run(server.handle_request(request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}}, 2)))
    assert called["id"] == 2 and called["result"]["content"][0]["type"] == "text", called


def test_tool_decorator_writes_the_simple_schema():
    server = server_with_tools()
    tool = run(server._list_tools({}))["tools"][1]
    assert tool["description"] == "Says hello"
    assert tool["inputSchema"] == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "name parameter"},
            "times": {"type": "integer", "description": "times parameter"},
        },
        "required": ["name"],
    }


def test_the_tool_decorator_refuses_apps_metadata_the_original_never_had():
    server = MCPServer(MCPServerConfig(name="apps"))
    for kwargs in ({"ui": "ui://x/view"}, {"visibility": ["app"]}):
        with pytest.raises(NotImplementedError, match="compatibility mode"):
            server.tool(**kwargs)
    # Without them the decorator registers as before.
    def ping() -> str:
        return "ok"

    server.tool()(ping)
    assert server.tool_count == 1


def test_a_string_result_keeps_the_originals_json_text_and_no_structured_content():
    server = server_with_tools()
    result = run(server._call_tool({"name": "greet", "arguments": {"name": "Ada"}}))
    assert json.loads(result["content"][0]["text"]) == {"result": "hello Ada"}
    assert "structuredContent" not in result and not result.get("isError"), result


def test_plain_server_sends_a_string_as_text_with_structured_content():
    plain = PlainServer()

    @plain.tool()
    def greet(name: str) -> str:
        return "hello " + name

    async def call():
        await plain.handle_request(request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}, 0))
        await plain.handle_request({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return await plain.handle_request(request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}}))

    result = run(call())["result"]
    assert result["content"] == [{"type": "text", "text": "hello Ada"}], result
    assert result["structuredContent"] == {"result": "hello Ada"}, result


def test_structured_content_only_with_an_output_schema():
    server = MCPServer()
    server.register_tool(
        "typed",
        {"name": "typed", "description": "d", "inputSchema": {"type": "object", "properties": {}}},
        lambda: {"n": 1},
        output_schema={"type": "object", "properties": {"result": {"type": "object"}}},
    )
    result = run(server._call_tool({"name": "typed", "arguments": {}}))
    assert result["structuredContent"] == {"result": {"n": 1}}, result


def error_of(result):
    assert result.get("isError") is True, result
    assert "structuredContent" not in result, result
    return json.loads(result["content"][0]["text"])


def test_a_tool_error_is_the_originals_json_error_object():
    server = server_with_tools()
    error = error_of(run(server._call_tool({"name": "fail", "arguments": {}})))
    assert error["code"] == "EXECUTION_ERROR" and error["message"] == "broken on purpose", error
    assert error["tool_name"] == "fail" and error["module"] == "ValueError", error
    assert len(error["correlation_id"]) == 12, error


def test_invalid_arguments_are_a_validation_error_object():
    server = server_with_tools()
    error = error_of(run(server._call_tool({"name": "greet", "arguments": {"times": "x"}})))
    assert error["code"] == "VALIDATION_ERROR" and error["tool_name"] == "greet" and "module" not in error, error
    assert error["message"].startswith("Validation failed for tool 'greet': "), error
    assert sorted(f["field"] for f in error["field_errors"]) == ["name", "times"], error
    assert all(f["constraint"].startswith(f["field"] + ": ") for f in error["field_errors"]), error


def test_a_timeout_is_a_timeout_object():
    server = MCPServer(MCPServerConfig(per_tool_timeouts={"slow": 0.2}))

    @server.tool(name="slow")
    def slow() -> str:
        import time

        time.sleep(2)
        return "late"

    error = error_of(run(server._call_tool({"name": "slow", "arguments": {}})))
    assert error["code"] == "TIMEOUT" and error["message"] == "Tool 'slow' timed out after 0.2s", error


def test_unknown_tool_is_a_protocol_error_on_the_wire_and_not_found_in_call_tool():
    server = server_with_tools()
    reply = run(server.handle_request(request("tools/call", {"name": "nope", "arguments": {}})))
    assert "error" in reply and "result" not in reply, reply
    error = error_of(run(server._call_tool({"name": "nope", "arguments": {}})))
    assert error["code"] == "NOT_FOUND" and error["message"] == "Tool not found: 'nope'", error


def test_unknown_method_is_method_not_found():
    reply = run(server_with_tools().handle_request(request("no/such")))
    assert reply["error"]["code"] == -32601, reply


def test_capabilities_only_for_kinds_with_something_registered():
    empty = run(MCPServer().handle_request(request("initialize", {})))["result"]["capabilities"]
    assert not {"tools", "resources", "prompts"} & set(empty), empty
    server = server_with_tools()
    tools_only = run(server.handle_request(request("initialize", {})))["result"]["capabilities"]
    assert "tools" in tools_only and "resources" not in tools_only and "prompts" not in tools_only, tools_only
    server.register_resource("test://r1", "R1", content_provider=lambda: "data")
    server.register_prompt("p1", "Prompt 1", template="Hello")
    everything = run(server.handle_request(request("initialize", {}, 2)))["result"]["capabilities"]
    assert {"tools", "resources", "prompts"} <= set(everything), everything


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
def test_initialize_answers_the_clients_supported_version_every_time(version):
    server = server_with_tools()
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
    first = run(server.handle_request(request("initialize", params)))["result"]
    again = run(server.handle_request(request("initialize", params, 2)))["result"]
    assert first["protocolVersion"] == again["protocolVersion"] == version
    assert first["serverInfo"]["name"] == "compat-test"
    # An unsupported version gets the session's, which the engine negotiated.
    other = run(server.handle_request(request("initialize", {"protocolVersion": "1999-01-01"}, 3)))["result"]
    assert other["protocolVersion"] == version
    # As the first message, the engine's negotiation: the newest legacy version.
    fresh = run(MCPServer().handle_request(request("initialize", {"protocolVersion": "1999-01-01"})))["result"]
    assert fresh["protocolVersion"] == LEGACY_VERSIONS[0]


def test_initialized_notification_has_no_answer():
    server = server_with_tools()
    assert run(server.handle_request({"jsonrpc": "2.0", "method": "notifications/initialized"})) is None
    assert server._initialized is True


def test_call_tool_fn_answers_tools_call():
    calls = []

    async def custom(params):
        calls.append(params)
        return {"content": [{"type": "text", "text": json.dumps({"custom": True})}]}

    server = MCPServer(MCPServerConfig(name="injected"), call_tool_fn=custom)
    server.register_tool("dummy", {"name": "dummy", "description": "d", "inputSchema": {"type": "object"}}, lambda: "not called")
    reply = run(server.handle_request(request("tools/call", {"name": "dummy", "arguments": {}})))
    assert calls == [{"name": "dummy", "arguments": {}}]
    assert json.loads(reply["result"]["content"][0]["text"]) == {"custom": True}

    def raising(params):
        raise RuntimeError("secret detail")

    broken = MCPServer(call_tool_fn=raising)
    reply = run(broken.handle_request(request("tools/call", {"name": "x"})))
    assert reply["error"] == {"code": -32603, "message": "Internal server error"}, reply


def test_register_file_resource_reads_the_file(tmp_path):
    note = tmp_path / "note.md"
    note.write_text("first")
    server = MCPServer()
    server.register_file_resource(str(note))
    assert server.resource_count == 1
    uri = f"file://{note.absolute()}"
    listed = run(server._list_resources({}))["resources"]
    assert [(r["uri"], r["name"], r["mimeType"]) for r in listed] == [(uri, "note.md", "text/markdown")]
    note.write_text("second")
    contents = run(server._read_resource({"uri": uri}))["contents"]
    assert contents[0]["text"] == "second"


def test_counts_and_private_dispatch():
    server = server_with_tools()
    assert (server.tool_count, server.resource_count, server.prompt_count) == (2, 0, 0)
    with pytest.raises(ValueError):
        run(server._dispatch("no/such", {}))


def test_run_http_refuses_a_public_bind_without_a_token():
    with pytest.raises(ValueError, match="auth_token is required"):
        run(MCPServer().run_http(host="0.0.0.0", port=0))


def run_python(code, tmp_path):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path, capture_output=True, text=True, timeout=60)


def fake_codomyrmex(tmp_path, mcp_init):
    """A ``codomyrmex`` package with a ``model_context_protocol`` whose ``__init__`` is
    ``mcp_init`` and a tool module that imports from it."""
    package = tmp_path / "codomyrmex"
    (package / "model_context_protocol").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "model_context_protocol" / "__init__.py").write_text(mcp_init)
    (package / "model_context_protocol" / "decorators.py").write_text("raise RuntimeError('the original was imported')\n")
    (package / "tools_mod.py").write_text(
        "from codomyrmex.model_context_protocol.decorators import mcp_tool\n"
        "@mcp_tool()\n"
        "def ping() -> str:\n"
        "    '''Ping.'''\n"
        "    return 'pong'\n"
    )


CHECKS = """
import sys
import codomyrmex.model_context_protocol as mcp
import codomyrmex.model_context_protocol.transport.server as server_module
from codomyrmex.model_context_protocol.schemas.mcp_schemas import MCPToolResult
from codomyrmex.tools_mod import ping
import codomyrmex_mcp.compat as compat
import codomyrmex_mcp.compat.transport.server as compat_server
from codomyrmex_mcp.schemas.mcp_schemas import MCPToolResult as PlainResult
assert mcp is compat and server_module is compat_server, (mcp, server_module)
assert sys.modules["codomyrmex"].model_context_protocol is compat
assert MCPToolResult is PlainResult
assert mcp.__spec__.name == "codomyrmex_mcp.compat" and mcp.__name__ == "codomyrmex_mcp.compat"
assert ping._mcp_tool_meta["name"] == "codomyrmex.ping"
print("aliased")
"""


def test_install_from_codomyrmexs_own_init(tmp_path):
    fake_codomyrmex(tmp_path, "import codomyrmex_mcp.compat\ncodomyrmex_mcp.compat.install()\n")
    done = run_python(CHECKS, tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "aliased", done.stderr


def test_install_before_anything_imports_it(tmp_path):
    fake_codomyrmex(tmp_path, "raise RuntimeError('the original package was imported')\n")
    done = run_python("import codomyrmex_mcp.compat\ncodomyrmex_mcp.compat.install()\n" + CHECKS, tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "aliased", done.stderr


def test_without_install_the_original_is_imported(tmp_path):
    fake_codomyrmex(tmp_path, "raise RuntimeError('the original package was imported')\n")
    done = run_python("import codomyrmex.model_context_protocol\n", tmp_path)
    assert done.returncode != 0 and "the original package was imported" in done.stderr


class Response:
    def __init__(self, status, headers, body):
        self.status_code, self.headers, self.content = status, headers, body
        self.text = body.decode()

    def json(self):
        return json.loads(self.content)


async def call_asgi(app, method, path, headers=None, body=b""):
    """One request to an ASGI app, as an ASGI server makes it."""
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
    }
    chunks = [body[i : i + 65536] for i in range(0, len(body), 65536)] or [b""]
    sent = []

    async def receive():
        chunk = chunks.pop(0)
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    start = sent[0]
    response_headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return Response(start["status"], response_headers, b"".join(m.get("body", b"") for m in sent[1:]))


class Client:
    def __init__(self, app):
        self.app = app

    async def get(self, path, headers=None):
        return await call_asgi(self.app, "GET", path, headers)

    async def options(self, path, headers=None):
        return await call_asgi(self.app, "OPTIONS", path, headers)

    async def post(self, path, json=None, content=b"", headers=None):
        body = content if json is None else __import__("json").dumps(json).encode()
        return await call_asgi(self.app, "POST", path, headers, body)


def test_http_app_routes():
    server = server_with_tools()

    async def go():
        client = Client(server._create_http_app())
        page = await client.get("/")
        health = (await client.get("/health")).json()
        tools = (await client.get("/tools")).json()
        one = await client.get("/tools/greet")
        missing = await client.get("/tools/nope")
        called = (await client.post("/tools/greet/call", json={"name": "Ada"})).json()
        rpc = (await client.post("/mcp", json=request("tools/list"))).json()
        note = await client.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"})
        garbage = await client.post("/mcp", content=b"{not json")
        return page, health, tools, one, missing, called, rpc, note, garbage

    page, health, tools, one, missing, called, rpc, note, garbage = run(go())
    assert page.status_code == 200 and "text/html" in page.headers["content-type"] and "Codomyrmex MCP Server" in page.text
    assert health["status"] == "ok" and health["server_name"] == "compat-test" and health["tool_count"] == 2
    assert [t["name"] for t in tools["tools"]] == ["fail", "greet"]
    assert one.status_code == 200 and one.json()["name"] == "greet" and missing.status_code == 404
    assert json.loads(called["content"][0]["text"]) == {"result": "hello Ada"}
    assert "tools" in rpc["result"] and note.status_code == 202 and garbage.status_code == 400


def test_http_app_auth_and_cors():
    server = server_with_tools()
    with pytest.raises(ValueError, match="wildcard CORS"):
        server._create_http_app(allowed_origins=["*"])
    preflight = {"Origin": "https://trusted.example", "Access-Control-Request-Method": "GET"}

    async def go():
        client = Client(server._create_http_app(allowed_origins=["https://trusted.example"], auth_token="secret"))
        anonymous = await client.get("/health")
        wrong = await client.get("/health", headers={"Authorization": "Bearer nope"})
        trusted = await client.get("/health", headers={"Authorization": "Bearer secret", "Origin": "https://trusted.example"})
        untrusted = await client.get("/health", headers={"Authorization": "Bearer secret", "Origin": "https://evil.example"})
        allowed = await client.options("/tools", headers=preflight)
        client = Client(server._create_http_app(auth_token="secret"))
        refused = await client.options("/tools", headers=preflight)
        huge = await client.post("/mcp", content=b"x" * (4 * 1024 * 1024 + 1), headers={"Authorization": "Bearer secret"})
        return anonymous, wrong, trusted, untrusted, allowed, refused, huge

    anonymous, wrong, trusted, untrusted, allowed, refused, huge = run(go())
    assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"] == "Bearer" and wrong.status_code == 401
    assert trusted.status_code == 200 and trusted.headers["access-control-allow-origin"] == "https://trusted.example"
    assert untrusted.status_code == 200 and "access-control-allow-origin" not in untrusted.headers
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == "https://trusted.example"
    assert refused.status_code == 400 and huge.status_code == 413


def test_requests_run_in_codomyrmexs_correlation_context(tmp_path):
    fake_codomyrmex(tmp_path, "import codomyrmex_mcp.compat\ncodomyrmex_mcp.compat.install()\n")
    core = tmp_path / "codomyrmex" / "logging_monitoring" / "core"
    core.mkdir(parents=True)
    (tmp_path / "codomyrmex" / "logging_monitoring" / "__init__.py").write_text("")
    (core / "__init__.py").write_text("")
    (core / "correlation.py").write_text(
        "import contextlib, contextvars\n"
        "current = contextvars.ContextVar('cid', default='')\n"
        "@contextlib.contextmanager\n"
        "def with_correlation(cid=None):\n"
        "    token = current.set(cid or 'generated')\n"
        "    try:\n"
        "        yield current.get()\n"
        "    finally:\n"
        "        current.reset(token)\n"
    )
    code = """
    import asyncio, json
    from codomyrmex.logging_monitoring.core.correlation import current
    from codomyrmex.model_context_protocol import MCPServer

    async def seen(params):
        return {"content": [{"type": "text", "text": current.get()}]}

    server = MCPServer(call_tool_fn=seen)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}}
    print(asyncio.run(server.handle_request(call, correlation_id="cid-1"))["result"]["content"][0]["text"])
    print(asyncio.run(server.handle_request(call))["result"]["content"][0]["text"])
    print(repr(current.get()))
    """
    done = run_python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["cid-1", "generated", "''"], done.stdout


def test_string_arguments_are_coerced_before_validation():
    server = MCPServer()

    def multiply(*, x: int, y: int) -> dict:
        return {"product": x * y}

    schema = {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}
    server.register_tool("mul", {"name": "mul", "description": "Multiply", "inputSchema": schema}, multiply)
    result = run(server._call_tool({"name": "mul", "arguments": {"x": "3", "y": 5}}))
    assert json.loads(result["content"][0]["text"]) == {"result": {"product": 15}}, result
    refused = error_of(run(server._call_tool({"name": "mul", "arguments": {"x": "three", "y": 5}})))
    assert refused["code"] == "VALIDATION_ERROR", refused
