"""The official Python SDK's client (PyPI `mcp`) drives a server written with the package
(servers/demo_server.py) in both eras, over stdio and over Streamable HTTP; and Ctrl-C
stops the HTTP server cleanly."""

import asyncio
import re
import signal
import subprocess
import sys

import pytest

from conftest import MODERN_META, SERVERS, default_sigint

pytest.importorskip("mcp")

DEMO = str(SERVERS / "demo_server.py")




ANSWERS = {"Who are you?": "Ada", "First name?": "Ada", "Last name?": "Lovelace"}
ROOTS = ["file:///work/one", "file:///work/two"]


async def on_elicit(context, params):
    from mcp import types

    return types.ElicitResult(action="accept", content={"name": ANSWERS[params.message]})


async def on_sample(context, params):
    from mcp import types

    assert params.system_prompt in (None, "Be brief.") and params.max_tokens == 20
    text = params.messages[0].content.text
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=f"re: {text}"), model="echo-model")


async def on_roots(context):
    from mcp import types

    return types.ListRootsResult(roots=[types.Root(uri=uri, name=uri.rsplit("/", 1)[-1]) for uri in ROOTS])


CALLBACKS = dict(elicitation_callback=on_elicit, sampling_callback=on_sample, list_roots_callback=on_roots)


async def client_requests(client, label):
    """Elicitation, sampling and roots from sync and async tools: server-to-client requests
    (2025-11-25) or multi round-trips (2026-07-28)."""
    for tool, arguments, expected in [
        ("ask_name", {}, "Hello, Ada"),
        ("ask_name_async", {}, "Hello, Ada"),
        ("ask_twice", {}, "Ada Lovelace"),
        ("sample", {"prompt": "hi"}, "echo-model: re: hi"),
        ("sample_async", {"prompt": "hi"}, "echo-model: re: hi"),
        ("roots", {}, ROOTS),
        ("roots_async", {}, ROOTS),
        ("ask_and_sample", {}, "re: Greet Ada (2 roots)"),
    ]:
        result = await client.call_tool(tool, arguments)
        assert not result.is_error and result.structured_content == {"result": expected}, (label, tool, result)


async def exercise(client, label, logs):
    if client.protocol_version == "2025-11-25":
        await client.set_logging_level("info")
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"add", "slow_echo", "boom", "progress", "counter"} <= set(tools), label
    assert tools["add"].title == "Add" and tools["add"].description == "Adds two integers."
    assert tools["add"].input_schema["required"] == ["a"]
    assert (tools["progress"].meta or {}).get("category") == "demo"
    added = await client.call_tool("add", {"a": 2, "b": 40})
    assert not added.is_error and added.structured_content == {"result": 42}, label
    echoed = await client.call_tool("slow_echo", {"text": "hi", "delay": 0.01})
    assert echoed.structured_content == {"result": "hi"}, label
    boom = await client.call_tool("boom", {"message": "no"})
    assert boom.is_error, label
    updates = []

    async def on_progress(progress, total, message):
        updates.append((progress, total, message))

    stepped = await client.call_tool("progress", {"steps": 3}, progress_callback=on_progress)
    assert stepped.structured_content == {"result": 3}, label
    # Progress is sent on the request's own stream before its response, so all three are in.
    assert updates == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")], label
    assert [(m.level, m.data) for m in logs] == [("info", {"done": 3})], label
    # Elicitation: a server-to-client request (2025-11-25) or a multi round-trip (2026-07-28).
    await client_requests(client, label)
    resource = await client.read_resource("demo://greeting")
    assert resource.contents[0].text == "hello from Python", label
    prompt = await client.get_prompt("review", {"code": "x = 1"})
    assert prompt.messages[0].content.text == "Review this: x = 1", label


async def sdk_stdio(mode, expected):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=[DEMO, "stdio"])
    logs = []

    async def on_log(message):
        logs.append(message)

    async with Client(params, mode=mode, read_timeout_seconds=30, logging_callback=on_log, log_level="info", **CALLBACKS) as client:
        assert client.protocol_version == expected
        assert client.server_info.name == "py-demo"
        await exercise(client, f"stdio {mode}", logs)


@pytest.mark.parametrize("mode, expected", [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_sdk_client_over_stdio(mode, expected):
    asyncio.run(asyncio.wait_for(sdk_stdio(mode, expected), 120))


class HttpServer:
    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, DEMO, "http"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, preexec_fn=default_sigint
        )
        while True:
            line = self.proc.stderr.readline().decode()
            assert line, "the HTTP server exited before listening"
            found = re.search(r"serving MCP at (http://127\.0\.0\.1:\d+/mcp)", line)
            if found:
                self.url = found.group(1)
                return

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def http_server():
    server = HttpServer()
    yield server
    server.close()


async def sdk_http(url, mode, expected):
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    logs = []

    async def on_log(message):
        logs.append(message)

    async with Client(
        streamable_http_client(url),
        mode=mode,
        read_timeout_seconds=30,
        logging_callback=on_log,
        log_level="info",
        **CALLBACKS,
    ) as client:
        assert client.protocol_version == expected
        assert client.server_info.name == "py-demo"
        await exercise(client, f"http {mode}", logs)


@pytest.mark.parametrize("mode, expected", [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_sdk_client_over_streamable_http(http_server, mode, expected):
    asyncio.run(asyncio.wait_for(sdk_http(http_server.url, mode, expected), 120))


def test_ctrl_c_stops_an_http_server_cleanly(http_server):
    http_server.proc.send_signal(signal.SIGINT)
    assert http_server.proc.wait(timeout=30) == 0


def test_ctrl_c_stops_an_http_server_whose_sync_tool_hangs(http_server):
    import json
    import threading
    import time
    import urllib.error
    import urllib.request

    def post(message):
        """The answer's status and body (an error status too: it is an answer)."""
        request = urllib.request.Request(
            http_server.url,
            data=json.dumps(message).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2026-07-28",
                "Mcp-Method": "tools/call",
                "Mcp-Name": message["params"]["name"],
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    meta = MODERN_META

    def call(request_id, name, arguments=None):
        params = {"name": name, "arguments": arguments or {}, "_meta": meta}
        return post({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params})

    status, hung = call(1, "hang")
    assert status == 200 and "TIMEOUT" in hung.upper(), hung
    # `block` stays in flight (its thread is stuck) while the server is asked to stop: its
    # client gets the shutdown's 503 (-32000), and the server still exits at once.
    blocked = []
    worker = threading.Thread(target=lambda: blocked.append(call(2, "block")), daemon=True)
    worker.start()
    deadline = time.monotonic() + 30
    while '"result":true' not in call(3, "is_blocking")[1].replace(" ", ""):
        assert time.monotonic() < deadline, "block never started"
        time.sleep(0.02)
    status, added = call(4, "add", {"a": 1})
    assert status == 200 and '"result":1' in added.replace(" ", ""), added
    http_server.proc.send_signal(signal.SIGINT)
    assert http_server.proc.wait(timeout=30) == 0
    worker.join(30)
    assert len(blocked) == 1, "the in-flight call got no answer"
    status, body = blocked[0]
    assert status == 503, blocked
    error = json.loads(body)["error"]
    assert error["code"] == -32000 and "shutting down" in error["message"].lower(), body


def test_http_refuses_cross_origin_requests_and_sends_no_cors_headers(http_server):
    import json
    import urllib.error
    import urllib.request

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    request = urllib.request.Request(
        http_server.url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Origin": "http://evil.example",
        },
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=30)
    assert caught.value.code == 403
    assert caught.value.headers.get("Access-Control-Allow-Origin") is None


@pytest.mark.parametrize("tool", ["wait_for_cancel", "async_wait_for_cancel"])
def test_closing_the_response_stream_cancels_the_python_tool_over_http(http_server, tool):
    """2026-07-28 over HTTP: a client disconnect is the cancellation."""
    import http.client
    import json
    import socket
    import time
    from urllib.parse import urlparse

    url = urlparse(http_server.url)
    meta = MODERN_META
    tag = f"{tool}-http"

    def message(request_id, name, arguments):
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments, "_meta": meta}}

    def headers(name):
        return {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": name,
        }

    body = json.dumps(message(1, tool, {"tag": tag})).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in headers(tool).items())
    raw = socket.create_connection((url.hostname, url.port), timeout=30)
    raw.sendall(f"POST {url.path} HTTP/1.1\r\nHost: {url.netloc}\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
    # The call is in flight once the server has started its answer (an SSE stream) or, at
    # the latest, soon after; closing the connection is the cancellation either way.
    raw.settimeout(0.5)
    try:
        raw.recv(1)
    except socket.timeout:
        pass
    raw.close()
    deadline = time.monotonic() + 30
    request_id = 1
    while True:
        request_id += 1
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request("POST", url.path, body=json.dumps(message(request_id, "cancelled", {})), headers=headers("cancelled"))
        text = conn.getresponse().read().decode()
        conn.close()
        if tag in text:
            return
        assert time.monotonic() < deadline, f"{tool} never saw its cancellation: {text}"
        time.sleep(0.05)  # under the server's rate limit
