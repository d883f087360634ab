"""Compatibility mode's client, ``codomyrmex_mcp.compat.transport.client`` (issue #28 item 2):
``MCPClient`` with Codomyrmex's API on the library's ``McpClient``, against our own server over
stdio and Streamable HTTP, and against the official Python SDK's server, in both eras, with
``async with`` and ``with``; its failures (a server gone, a bad URL, a tool's error) are clear
``MCPClientError``s; and a client never closed does not stop the interpreter from exiting."""

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from codomyrmex_mcp.compat.transport.client import (
    MCPClient,
    MCPClientConfig,
    MCPClientError,
    SyncMCPClient,
    _HTTPTransport,
    _Transport,
)
from conftest import SERVERS

DEMO = str(SERVERS / "demo_server.py")
SDK = str(SERVERS / "sdk_server.py")
ERAS = ["auto", "legacy", "modern"]
VERSIONS = {"modern": "2026-07-28", "legacy": "2025-11-25"}


def has_sdk() -> bool:
    try:
        import mcp.server.mcpserver  # noqa: F401
    except Exception:
        return False
    return True


needs_sdk = pytest.mark.skipif(not has_sdk(), reason="the official SDK (mcp==2.3.0) is not installed")


def run(coroutine, seconds=60):
    """The coroutine's result, under a hang guard."""
    return asyncio.run(asyncio.wait_for(coroutine, seconds))


def fast(era="auto", **fields):
    """A config that retries quickly."""
    return MCPClientConfig(name="compat-test", version="1.0", era=era, retry_delay=0.01, **fields)


class DemoHttp:
    """Our demo server over Streamable HTTP, on a port the OS picked."""

    def __init__(self, *command):
        self.process = subprocess.Popen(
            list(command) or [sys.executable, DEMO, "http"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        deadline = time.monotonic() + 30
        self.port = None
        while self.port is None and time.monotonic() < deadline:
            line = self.process.stderr.readline()
            if not line:
                break
            found = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
            if found:
                self.port = int(found.group(1))
        assert self.port is not None, "the demo server did not report its port"
        threading.Thread(target=self.process.stderr.read, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.port}"

    def stop(self):
        self.process.terminate()
        self.process.wait(10)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, process, seconds=30):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited"
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("the server did not listen")


@pytest.fixture(scope="module")
def demo_http():
    server = DemoHttp()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sdk_http():
    if not has_sdk():
        pytest.skip("the official SDK (mcp==2.3.0) is not installed")
    port = free_port()
    process = subprocess.Popen([sys.executable, SDK, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


# -- our server ---------------------------------------------------------------------------


async def exercise_demo(client):
    """What a Codomyrmex caller does with our demo server, checked."""
    assert client._initialized is True
    assert client.server_info["serverInfo"]["name"] == "py-demo"
    assert "protocolVersion" in client.server_info
    names = [t["name"] for t in await client.list_tools()]
    assert "add" in names and "boom" in names
    result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result["structuredContent"] == {"result": 5}
    assert not result.get("isError")
    failed = await client.call_tool("boom", {"message": "kaput"})
    assert failed["isError"] is True
    assert "kaput" in failed["content"][0]["text"]
    assert [r["uri"] for r in await client.list_resources()] == ["demo://greeting"]
    read = await client.read_resource("demo://greeting")
    assert read["contents"][0]["text"] == "hello from Python"
    assert [p["name"] for p in await client.list_prompts()] == ["review"]
    prompt = await client.get_prompt("review", {"code": "x = 1"})
    assert "x = 1" in prompt["messages"][0]["content"]["text"]
    health = await client.health_check()
    assert health["ok"] is True and health["latency_ms"] >= 0
    with pytest.raises(MCPClientError, match="RPC error on tools/call"):
        await client.call_tool("no_such_tool", {})


@pytest.mark.parametrize("era", ERAS)
def test_async_client_over_stdio_against_our_server(era):
    async def main():
        async with MCPClient.connect_stdio([sys.executable, DEMO], config=fast(era)) as client:
            await exercise_demo(client)
            expected = VERSIONS.get(era, "2026-07-28")
            assert client.protocol_version == expected
            return client

    client = run(main())
    assert client._transport is None and client._initialized is False


@pytest.mark.parametrize("era", ERAS)
def test_async_client_over_streamable_http_against_our_server(demo_http, era):
    async def main():
        async with MCPClient.connect_http(demo_http.base, config=fast(era)) as client:
            await exercise_demo(client)
            assert client.protocol_version == VERSIONS.get(era, "2026-07-28")

    run(main())


def test_sync_client_over_stdio_and_http_against_our_server(demo_http):
    with MCPClient.connect_stdio([sys.executable, DEMO], config=fast("legacy")) as client:
        assert isinstance(client, SyncMCPClient)
        assert client.server_info["serverInfo"]["name"] == "py-demo"
        assert client.call_tool("add", {"a": 40, "b": 2})["structuredContent"] == {"result": 42}
        assert client.protocol_version == "2025-11-25"
    with MCPClient.connect_http(demo_http.base + "/mcp", config=fast()) as client:
        assert "add" in [t["name"] for t in client.list_tools()]
        assert client.read_resource("demo://greeting")["contents"][0]["text"] == "hello from Python"
        assert client.protocol_version == "2026-07-28"


AUTH_SERVER = """
import asyncio, sys
from codomyrmex_mcp import MCPServer, MCPServerConfig
server = MCPServer(MCPServerConfig(name="auth-server"))

@server.tool()
def add(a: int, b: int = 0) -> int:
    return a + b

asyncio.run(server.run_http("127.0.0.1", 0, auth_token=sys.argv[1]))
"""


def test_a_bearer_token_reaches_a_server_that_requires_one():
    server = DemoHttp(sys.executable, "-c", AUTH_SERVER, "s3cret-token")
    try:
        with MCPClient.connect_http(server.base, token="s3cret-token", config=fast()) as client:
            assert client.call_tool("add", {"a": 1, "b": 2})["structuredContent"] == {"result": 3}
        with pytest.raises(MCPClientError, match="401"):
            with MCPClient.connect_http(server.base, token="wrong", config=fast(max_retries=1)):
                pass
    finally:
        server.stop()


def test_cancelling_a_call_cancels_the_request_on_the_server():
    async def main():
        async with MCPClient.connect_stdio([sys.executable, DEMO], config=fast("legacy")) as client:
            call = asyncio.ensure_future(client.call_tool("wait_for_cancel", {"tag": "t1"}))
            await asyncio.sleep(0.5)
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            for _ in range(50):
                result = await client.call_tool("cancelled", {})
                if result["structuredContent"] == {"result": ["t1"]}:
                    return True
                await asyncio.sleep(0.1)
            return False

    assert run(main()) is True


# -- the official SDK's server ------------------------------------------------------------


async def exercise_sdk(client):
    assert client.server_info["serverInfo"]["name"] == "sdk-server"
    assert sorted(t["name"] for t in await client.list_tools()) == ["add", "fail"]
    result = await client.call_tool("add", {"a": 2, "b": 5})
    assert result["content"][0]["text"] == "7"
    failed = await client.call_tool("fail", {"message": "no"})
    assert failed["isError"] is True
    read = await client.read_resource("sdk://note")
    assert read["contents"][0]["text"] == "a note from the SDK"
    prompt = await client.get_prompt("greet", {"name": "Ann"})
    assert prompt["messages"][0]["content"]["text"] == "Say hello to Ann"


@needs_sdk
@pytest.mark.parametrize("era", ERAS)
def test_async_client_against_the_official_sdk_server_over_stdio(era):
    async def main():
        async with MCPClient.connect_stdio([sys.executable, SDK], config=fast(era)) as client:
            await exercise_sdk(client)
            assert client.protocol_version == VERSIONS.get(era, "2026-07-28")

    run(main())


@needs_sdk
@pytest.mark.parametrize("era", ERAS)
def test_async_and_sync_client_against_the_official_sdk_server_over_http(sdk_http, era):
    async def main():
        async with MCPClient.connect_http(sdk_http, config=fast(era)) as client:
            await exercise_sdk(client)
            assert client.protocol_version == VERSIONS.get(era, "2026-07-28")

    run(main())
    with MCPClient.connect_http(sdk_http, config=fast(era)) as client:
        assert client.call_tool("add", {"a": 1, "b": 1})["content"][0]["text"] == "2"


# -- failures -----------------------------------------------------------------------------


DYING_SERVER = """
import os
from codomyrmex_mcp import MCPServer, MCPServerConfig
server = MCPServer(MCPServerConfig(name="dying"))

@server.tool()
def add(a: int, b: int = 0) -> int:
    return a + b

@server.tool()
def die() -> str:
    os._exit(3)

server.run()
"""


def test_a_server_that_is_gone_is_a_client_error():
    # Started, but exits at once: the handshake finds no server.
    quits = [sys.executable, "-c", "import sys; sys.exit(0)"]
    with pytest.raises(MCPClientError, match="initialize"):
        run(MCPClient.connect_stdio(quits, config=fast(max_retries=2)).__aenter__())

    # Gone in the middle of a session: the call in flight and the next fail, with no hang.
    async def main():
        async with MCPClient.connect_stdio([sys.executable, "-c", DYING_SERVER], config=fast("legacy", max_retries=2)) as client:
            assert (await client.call_tool("add", {"a": 1}))["structuredContent"] == {"result": 1}
            with pytest.raises(MCPClientError, match="tools/call"):
                await client.call_tool("die", {})
            with pytest.raises(MCPClientError, match="tools/call"):
                await client.call_tool("add", {"a": 1})

    run(main())


def test_a_program_that_cannot_start_is_a_client_error():
    with pytest.raises(MCPClientError, match="cannot start"):
        run(MCPClient.connect_stdio(["/nonexistent/mcp-server"], config=fast()).__aenter__())
    with pytest.raises(MCPClientError, match="needs a command"):
        MCPClient.connect_stdio([]).__enter__()


@pytest.mark.parametrize(
    "url, message",
    [
        ("ftp://127.0.0.1/x", "http"),
        ("not a url", "not a url"),
    ],
)
def test_a_bad_url_is_a_client_error(url, message):
    with pytest.raises(MCPClientError, match=message):
        with MCPClient.connect_http(url, config=fast(max_retries=1)):
            pass


def test_a_url_where_nothing_listens_is_a_client_error_after_the_retries():
    port = free_port()  # closed again: nothing listens there
    started = time.monotonic()
    with pytest.raises(MCPClientError, match="failed after 2 retries"):
        with MCPClient.connect_http(f"http://127.0.0.1:{port}", config=fast(max_retries=2)):
            pass
    assert time.monotonic() - started < 20


def test_a_tool_error_is_an_error_result_and_an_unknown_tool_a_client_error(demo_http):
    with MCPClient.connect_http(demo_http.base, config=fast("legacy")) as client:
        result = client.call_tool("boom", {"message": "it broke"})
        assert result["isError"] is True and "it broke" in result["content"][0]["text"]
        with pytest.raises(MCPClientError, match="RPC error on tools/call"):
            client.call_tool("missing", {})
        # Arguments that do not fit the schema: a tool error the model can read.
        invalid = client.call_tool("add", {"a": "not a number"})
        assert invalid["isError"] is True


def test_a_timeout_is_retried_then_a_client_error():
    async def main():
        async with MCPClient.connect_stdio([sys.executable, DEMO], config=fast("legacy", max_retries=2)) as client:
            with pytest.raises(MCPClientError, match="failed after 2 retries"):
                await client.call_tool("slow_echo", {"text": "x", "delay": 5}, timeout=0.3)
            # The connection is still good.
            assert (await client.call_tool("add", {"a": 1}))["structuredContent"] == {"result": 1}

    run(main())


def test_calls_after_close_are_client_errors():
    async def main():
        async with MCPClient.connect_stdio([sys.executable, DEMO], config=fast()) as client:
            pass
        with pytest.raises(MCPClientError, match="not connected"):
            await client.list_tools()
        await client.close()  # again: nothing

    run(main())


# -- transports of one's own (the original's seam) ----------------------------------------


class Scripted(_Transport):
    """Answers from a list of outcomes: a dict is the response, an exception is raised."""

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.sent = []
        self.timeouts = []

    async def send(self, message, *, timeout=30.0):
        self.sent.append(message)
        self.timeouts.append(timeout)
        outcome = self.outcomes.pop(0) if self.outcomes else {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    async def send_notification(self, message):
        self.sent.append(message)

    async def close(self):
        pass


def test_an_own_transport_gets_retries_backoff_and_errors_as_the_original_did():
    client = MCPClient(fast(max_retries=3))
    client._transport = Scripted(ConnectionError("down"), TimeoutError("slow"), {"result": {"ok": 1}})
    assert run(client._send("x/y")) == {"ok": 1}

    client._transport = Scripted(*[ConnectionError("down")] * 3)
    with pytest.raises(MCPClientError, match="Request x/y failed after 3 retries: down"):
        run(client._send("x/y"))

    transport = Scripted({"error": {"code": -32601, "message": "Method not found"}})
    client._transport = transport
    with pytest.raises(MCPClientError, match="RPC error on initialize: Method not found"):
        run(client.initialize())
    assert len(transport.sent) == 1  # a JSON-RPC error is not retried

    transport = Scripted()
    client._transport = transport
    run(client.call_tool("t", {"x": 1}, timeout=42.0))
    assert transport.timeouts == [42.0]
    assert transport.sent[0]["params"] == {"name": "t", "arguments": {"x": 1}}


def test_health_check_falls_back_and_reports_failure():
    client = MCPClient(fast(max_retries=1))
    client._transport = Scripted({"error": {"code": -32601, "message": "no ping"}}, {"result": {"tools": []}})
    assert run(client.health_check())["ok"] is True
    client._transport = Scripted(ConnectionError("a"), ConnectionError("b"))
    report = run(client.health_check())
    assert report["ok"] is False and "b" in report["error"] and "latency_ms" in report


def test_config_defaults_and_the_http_transport_s_url():
    config = MCPClientConfig()
    assert (config.max_retries, config.retry_delay, config.connection_pool_size, config.timeout_seconds) == (3, 0.5, 10, 30.0)
    assert config.era == "auto"
    transport = _HTTPTransport("http://localhost:8080/", pool_size=25)
    assert transport._pool_size == 25
    assert transport.url == "http://localhost:8080/mcp"
    assert _HTTPTransport("http://h:1/mcp").url == "http://h:1/mcp"


# -- exit ---------------------------------------------------------------------------------


def stat(pid):
    """A process's state letter (``Z``: a zombie), or ``Z`` once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_a_client_never_closed_does_not_crash_the_interpreter_at_exit(demo_http):
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from codomyrmex_mcp.compat.transport.client import MCPClient, MCPClientConfig

        KEEP = []

        async def main():
            stdio = MCPClient.connect_stdio([sys.executable, {DEMO!r}])
            client = await stdio.__aenter__()
            await client.call_tool("add", {{"a": 1}})
            http = MCPClient.connect_http({demo_http.base!r}, config=MCPClientConfig(era="legacy"))
            other = await http.__aenter__()
            KEEP.extend([client, other])  # never closed, never collected
            # Calls in flight when the loop ends: never awaited to the end.
            asyncio.ensure_future(client.call_tool("slow_echo", {{"text": "x", "delay": 30}}))
            asyncio.ensure_future(other.call_tool("slow_echo", {{"text": "x", "delay": 30}}))
            await asyncio.sleep(0.3)
            # A blocking client inside the loop is refused, clearly.
            try:
                MCPClient.connect_stdio([sys.executable, {DEMO!r}]).__enter__()
            except Exception as e:
                assert "async with" in str(e), e

        asyncio.run(main())
        sync = MCPClient.connect_stdio([sys.executable, {DEMO!r}]).__enter__()
        sync.call_tool("add", {{"a": 2}})
        import glob
        children = [p for f in glob.glob("/proc/self/task/*/children") for p in open(f).read().split()]
        print("done", " ".join(children), flush=True)
        """
    )
    for _ in range(3):
        started = time.monotonic()
        finished = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
        assert finished.returncode == 0, finished.stderr
        words = finished.stdout.split()
        assert words[0] == "done", finished.stdout
        assert "FATAL" not in finished.stderr and "panicked" not in finished.stderr, finished.stderr
        assert time.monotonic() - started < 10
        # The servers it started (two over stdio, one with a call in flight) were closed at
        # exit, not left running.
        children = [int(p) for p in words[1:]]
        if os.path.isdir("/proc"):
            assert len(children) == 2, finished.stdout
        alive = [pid for pid in children if os.path.exists(f"/proc/{pid}") and "Z" not in stat(pid)]
        assert alive == [], f"servers left running: {alive}"


# -- OAuth --------------------------------------------------------------------------------


class FakeOAuth:
    """A protected MCP endpoint and its authorization server on one loopback port: protected
    resource and authorization server metadata, dynamic registration, ``/authorize`` (which
    redirects at once with ``code-1``), ``/token`` (the authorization code and, for
    ``m2m``/``m2m-secret``, client credentials), and ``/mcp``, which answers only a token it
    issued. Records the grants."""

    def __init__(self):
        import base64
        import http.server
        import urllib.parse

        fake = self
        self.grants = []
        self.issued = set()

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def reply(self, status, body=None, headers=()):
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                base = fake.base
                path, _, query = self.path.partition("?")
                if path == "/.well-known/oauth-protected-resource/mcp":
                    return self.reply(200, {"resource": f"{base}/mcp", "authorization_servers": [base]})
                if path == "/.well-known/oauth-authorization-server":
                    return self.reply(200, {
                        "issuer": base,
                        "authorization_endpoint": f"{base}/authorize",
                        "token_endpoint": f"{base}/token",
                        "registration_endpoint": f"{base}/register",
                        "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post"],
                        "code_challenge_methods_supported": ["S256"],
                    })
                if path == "/authorize":
                    q = dict(urllib.parse.parse_qsl(query))
                    location = f"{q['redirect_uri']}?code=code-1&state={q.get('state', '')}"
                    return self.reply(302, None, [("Location", location)])
                return self.reply(405 if path == "/mcp" else 404)

            def do_DELETE(self):
                self.reply(200)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = self.path.partition("?")[0]
                if path == "/register":
                    return self.reply(201, {"client_id": "client-1", "token_endpoint_auth_method": "none"})
                if path == "/token":
                    form = dict(urllib.parse.parse_qsl(body.decode()))
                    grant = form.get("grant_type")
                    fake.grants.append(grant)
                    basic = "Basic " + base64.b64encode(b"m2m:m2m-secret").decode()
                    m2m = self.headers.get("Authorization") == basic or (
                        form.get("client_id") == "m2m" and form.get("client_secret") == "m2m-secret"
                    )
                    if (grant == "client_credentials" and m2m) or (grant == "authorization_code" and form.get("code") == "code-1"):
                        token = f"access-{len(fake.issued) + 1}"
                        fake.issued.add(token)
                        return self.reply(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600})
                    return self.reply(401 if grant == "client_credentials" else 400, {"error": "invalid_client"})
                if path != "/mcp":
                    return self.reply(404)
                token = (self.headers.get("Authorization") or "").partition(" ")[2]
                if token not in fake.issued:
                    challenge = f'Bearer resource_metadata="{fake.base}/.well-known/oauth-protected-resource/mcp"'
                    return self.reply(401, None, [("WWW-Authenticate", challenge)])
                message = json.loads(body)
                method, rid = message.get("method"), message.get("id")
                if rid is None:
                    return self.reply(202)
                if method == "initialize":
                    result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "oauth-fake", "version": "1"}}
                    return self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": result}, [("Mcp-Session-Id", "s1")])
                if method == "tools/list":
                    tools = [{"name": "guarded", "description": "Behind OAuth.", "inputSchema": {"type": "object"}}]
                    return self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
                if method == "server/discover":
                    return self.reply(200, {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
                return self.reply(200, {"jsonrpc": "2.0", "id": rid, "result": {}})

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_oauth():
    fake = FakeOAuth()
    yield fake
    fake.stop()


def test_oauth_client_credentials(fake_oauth):
    oauth = {"client_id": "m2m", "client_secret": "m2m-secret", "client_credentials": True, "dpop": False}
    with MCPClient.connect_http(fake_oauth.base, oauth=oauth, config=fast()) as client:
        assert [t["name"] for t in client.list_tools()] == ["guarded"]
        assert client.server_info["serverInfo"]["name"] == "oauth-fake"
    assert fake_oauth.grants == ["client_credentials"]

    wrong = {**oauth, "client_secret": "not-it"}
    with pytest.raises(MCPClientError):
        with MCPClient.connect_http(fake_oauth.base, oauth=wrong, config=fast(max_retries=1)):
            pass


def test_oauth_authorization_code_through_authorize(fake_oauth):
    import urllib.error
    import urllib.request

    shown = []

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    def authorize(url):
        # The user agent: the authorization server redirects at once; return where to.
        shown.append(url)
        try:
            urllib.request.build_opener(NoRedirect).open(url, timeout=10)
        except urllib.error.HTTPError as e:
            return e.headers["Location"]
        raise AssertionError("no redirect")

    oauth = {"redirect_uri": "http://127.0.0.1:9/callback", "dpop": False}

    async def main():
        async with MCPClient.connect_http(fake_oauth.base, oauth=oauth, authorize=authorize, config=fast()) as client:
            return [t["name"] for t in await client.list_tools()]

    assert run(main()) == ["guarded"]
    assert len(shown) == 1 and shown[0].startswith(fake_oauth.base + "/authorize?")
    assert fake_oauth.grants == ["authorization_code"]


def test_bad_oauth_options_are_refused_before_connecting():
    with pytest.raises(ValueError, match="client_id and client_secret"):
        MCPClient.connect_http("http://127.0.0.1:1", oauth={"client_credentials": True}).__enter__()
    with pytest.raises(ValueError, match="redirect_uri"):
        MCPClient.connect_http("http://127.0.0.1:1", oauth={}, authorize=lambda url: url).__enter__()


# -- the native client --------------------------------------------------------------------


def test_the_native_client_blocks_with_the_gil_released_and_fails_clearly():
    from codomyrmex_mcp import _core

    client = _core.Client.stdio(sys.executable, [DEMO])
    try:
        handshake = json.loads(client.call("handshake", "legacy", "{}", 30))
        assert handshake["serverInfo"]["name"] == "py-demo" and client.protocol_version() == "2025-11-25"
        ticks = []
        stop = threading.Event()

        def tick():
            while not stop.is_set():
                ticks.append(1)
                time.sleep(0.001)

        ticker = threading.Thread(target=tick)
        ticker.start()
        try:
            reply = client.call("request", "tools/call", json.dumps({"name": "slow_echo", "arguments": {"text": "hi", "delay": 1}}), 30)
        finally:
            stop.set()
            ticker.join()
        assert json.loads(reply)["structuredContent"] == {"result": "hi"}
        # The other thread ran all along: the call held no GIL while it waited.
        assert len(ticks) > 100, len(ticks)
        tools = json.loads(client.call("list", "tools/list"))["tools"]
        assert "add" in [t["name"] for t in tools]
        with pytest.raises(_core.ClientFailure) as failure:
            client.call("request", "tools/call", json.dumps({"name": "slow_echo", "arguments": {"text": "x", "delay": 5}}), 0.2)
        assert failure.value.args[0] == "timeout"
        with pytest.raises(_core.ClientFailure) as failure:
            client.call("request", "no/such", "{}", 5)
        assert failure.value.args[0] == "server" and json.loads(failure.value.args[2])["code"] == -32601
        for bad in [("nope", "x", "{}"), ("request", "x", "[]"), ("handshake", "medieval", "{}"), ("list", "tools/call", "{}")]:
            with pytest.raises(ValueError):
                client.call(*bad)
        with pytest.raises(ValueError, match="positive"):
            client.call("request", "ping", "{}", -1)
    finally:
        client.close(0.5)
    assert client.is_closed() and client.era() is None
    with pytest.raises(_core.ClientFailure) as failure:
        client.call("request", "ping")
    assert failure.value.args[0] == "closed"
    client.close()  # again: nothing


def test_an_error_result_holding_a_codomyrmex_tool_error_is_parsed_under__error(monkeypatch):
    import types

    class ToolError:
        @staticmethod
        def from_json(text):
            data = json.loads(text)
            return ("parsed", data["error"]["code"]) if "error" in data else None

    monkeypatch.setitem(sys.modules, "codomyrmex_mcp.compat.errors", types.SimpleNamespace(MCPToolError=ToolError))
    text = json.dumps({"error": {"code": "EXECUTION_ERROR", "message": "oops"}})
    client = MCPClient(fast(max_retries=1))
    client._transport = Scripted({"result": {"content": [{"type": "text", "text": text}], "isError": True}})
    assert run(client.call_tool("t"))["_error"] == ("parsed", "EXECUTION_ERROR")
    client._transport = Scripted({"result": {"content": [{"type": "text", "text": "plain words"}], "isError": True}})
    assert "_error" not in run(client.call_tool("t"))
    client._transport = Scripted({"result": {"content": [{"type": "text", "text": text}]}})
    assert "_error" not in run(client.call_tool("t"))


SILENT_SERVER = r"""
import json, sys
# A legacy server that never answers a method it does not know (server/discover included).
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "silent", "version": "1"}}
    elif message["method"] == "tools/list":
        result = {"tools": [{"name": "quiet", "inputSchema": {"type": "object"}}]}
    else:
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


def test_auto_falls_back_to_initialize_with_a_server_that_never_answers_the_probe():
    started = time.monotonic()
    with MCPClient.connect_stdio([sys.executable, "-c", SILENT_SERVER], config=fast(timeout_seconds=2, max_retries=1)) as client:
        assert client.protocol_version == "2025-06-18"
        assert client.server_info["serverInfo"]["name"] == "silent"
        assert [t["name"] for t in client.list_tools()] == ["quiet"]
    # The probe waited at most the request timeout, not the 10 s default.
    assert time.monotonic() - started < 8


def test_closing_ends_the_calls_in_flight_and_waits_for_their_callbacks():
    from codomyrmex_mcp import _core

    client = _core.Client.stdio(sys.executable, [DEMO])
    client.call("handshake", "legacy", "{}", 30)
    seen = []

    def done(kind, text, data):
        time.sleep(0.3)  # a slow callback: close must not return before it has run
        seen.append(kind)

    slow = json.dumps({"name": "slow_echo", "arguments": {"text": "x", "delay": 30}})
    client.call_async("request", "tools/call", slow, None, done)
    time.sleep(0.3)
    started = time.monotonic()
    client.close(0.5)
    # No callback of this client runs after close (at exit, none runs into finalization).
    assert seen == ["closed"]
    assert time.monotonic() - started < 5


def test_ctrl_c_ends_a_blocking_call():
    import signal

    from conftest import default_sigint

    script = textwrap.dedent(
        f"""
        import json, sys, time
        from codomyrmex_mcp import _core
        client = _core.Client.stdio(sys.executable, [{DEMO!r}])
        client.call("handshake", "legacy", "{{}}", 30)
        print("calling", flush=True)
        started = time.monotonic()
        try:
            client.call("request", "tools/call", json.dumps({{"name": "slow_echo", "arguments": {{"text": "x", "delay": 30}}}}))
        except KeyboardInterrupt:
            print("interrupted", round(time.monotonic() - started), flush=True)
        client.close(0.5)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint
    )
    try:
        assert process.stdout.readline().strip() == "calling"
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert out.split()[:1] == ["interrupted"], (out, err)
    assert int(out.split()[1]) < 5
    assert process.returncode == 0, err
