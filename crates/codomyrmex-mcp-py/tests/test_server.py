"""MCPServer and MCPServerConfig: handle_request in both eras, and a Python-written server
(servers/demo_server.py) over stdio driven by raw JSON-RPC: a blocked tool does not hold up
ping, a hanging tool times out, exceptions and bad arguments are tool errors, Ctrl-C stops
it. The official SDK's client is in test_sdk_interop.py."""

import asyncio
import json
import signal
import queue
import subprocess
import sys
import threading

import pytest

from codomyrmex_mcp import MCPServer, MCPServerConfig

from conftest import INITIALIZE, INITIALIZED, MODERN_META, SERVERS, default_sigint, legacy_handshake, within

DEMO = str(SERVERS / "demo_server.py")


# ----- MCPServerConfig ---------------------------------------------------------------------


def test_config_fields_and_defaults():
    c = MCPServerConfig()
    assert (c.name, c.version, c.transport, c.log_level) == ("codomyrmex-mcp-server", "1.0.0", "stdio", "INFO")
    assert (c.default_tool_timeout, c.per_tool_timeouts) == (60.0, None)
    assert (c.rate_limit_rate, c.rate_limit_burst) == (50.0, 100)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"transport": "sse"}, "transport"),
        ({"log_level": "LOUD"}, "log_level"),
        ({"default_tool_timeout": -1}, "default_tool_timeout"),
        ({"per_tool_timeouts": {"t": -2}}, "per_tool_timeouts"),
        ({"rate_limit_rate": -1}, "rate_limit_rate"),
        ({"rate_limit_burst": 0}, "rate_limit_burst"),
    ],
)
def test_bad_config_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        MCPServerConfig(**kwargs)


# ----- handle_request ----------------------------------------------------------------------


def demo_in_process():
    server = MCPServer(MCPServerConfig(name="inproc", version="9"))

    @server.tool(description="Adds.")
    def add(a: int, b: int) -> int:
        return a + b

    return server


def test_handle_request_in_the_modern_era():
    server = demo_in_process()

    async def run():
        listed = await server.handle_request({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": MODERN_META}})
        called = await server.handle_request(
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": MODERN_META}}
        )
        return listed, called

    listed, called = asyncio.run(run())
    assert [t["name"] for t in listed["result"]["tools"]] == ["add"]
    assert listed["result"]["tools"][0]["description"] == "Adds."
    assert called["id"] == 2 and called["result"]["structuredContent"] == {"result": 5}
    assert called["result"].get("isError") in (None, False)


def test_handle_request_keeps_a_legacy_session():
    server = demo_in_process()

    async def run():
        init, note = await legacy_handshake(server)
        ping = await server.handle_request({"jsonrpc": "2.0", "id": "p", "method": "ping"})
        bad = await server.handle_request(
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": "x"}}}
        )
        unknown = await server.handle_request({"jsonrpc": "2.0", "id": 4, "method": "no/such"})
        return init, note, ping, bad, unknown

    init, note, ping, bad, unknown = asyncio.run(run())
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert init["result"]["serverInfo"] == {"name": "inproc", "version": "9"}
    assert note is None
    assert ping == {"jsonrpc": "2.0", "id": "p", "result": {}}
    assert bad["result"]["isError"] is True and "ValidationError" in json.dumps(bad["result"])
    assert unknown["error"]["code"] == -32601


def test_handle_request_refuses_a_non_object():
    server = demo_in_process()
    with pytest.raises(OSError, match="JSON object"):
        asyncio.run(server.handle_request([1, 2]))


def test_run_http_refuses_a_public_bind_without_authentication():
    server = demo_in_process()
    with pytest.raises(OSError, match="without authentication"):
        asyncio.run(server.run_http("0.0.0.0", 0))


# ----- a Python server over stdio: raw JSON-RPC --------------------------------------------


class StdioServer:
    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, DEMO, "stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=default_sigint,
        )

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def read(self, timeout=60.0):
        # A reader thread, so that a message that never comes fails the test instead of
        # hanging the suite.
        if not hasattr(self, "_lines"):
            self._lines = queue.Queue()

            def pump():
                for line in iter(self.proc.stdout.readline, b""):
                    self._lines.put(line)
                self._lines.put(b"")

            threading.Thread(target=pump, daemon=True).start()
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(
                f"no message from the server within {timeout} s; stderr: {self.proc.stderr.read().decode()}"
            ) from None
        assert line, f"the server closed stdout; stderr: {self.proc.stderr.read().decode()}"
        return json.loads(line)

    def read_response(self, request_id):
        while True:
            message = self.read()
            if message.get("id") == request_id and "method" not in message:
                return message

    def handshake(self):
        """The 2025-11-25 handshake: `initialize`, its answer (returned), then
        `notifications/initialized`."""
        self.send(INITIALIZE)
        answer = self.read_response(INITIALIZE["id"])
        self.send(INITIALIZED)
        return answer

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def stdio_server():
    server = StdioServer()
    assert server.handshake()["result"]["serverInfo"]["name"] == "py-demo"
    yield server
    server.close()


def call(request_id, name, arguments=None):
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": arguments or {}}}


def test_a_blocked_python_tool_does_not_hold_up_ping_or_other_calls(stdio_server):
    stdio_server.send(call(1, "block"))
    stdio_server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert stdio_server.read_response(2)["result"] == {}
    stdio_server.send(call(3, "add", {"a": 1, "b": 2}))
    assert stdio_server.read_response(3)["result"]["structuredContent"] == {"result": 3}
    stdio_server.send(call(4, "release"))
    # Released, `block` may answer before `release` does: take both answers in either order
    # (reading for 4 first used to drop an earlier answer to 1 and wait for it forever).
    seen = set()
    while seen != {1, 4}:
        message = stdio_server.read()
        if "method" not in message and message.get("id") in (1, 4):
            seen.add(message["id"])


def test_a_tool_hanging_past_its_timeout_gets_a_timeout_failure(stdio_server):
    stdio_server.send(call(1, "hang"))
    reply = stdio_server.read_response(1)
    assert reply["result"]["isError"] is True
    assert "TIMEOUT" in json.dumps(reply["result"]).upper()
    # The server still answers; then let the hung thread go.
    stdio_server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert stdio_server.read_response(2)["result"] == {}
    stdio_server.send(call(3, "release"))
    stdio_server.read_response(3)


def test_ctrl_c_stops_a_server_whose_sync_tools_hang_past_their_timeouts(stdio_server):
    # `hang` times out after 1 s, but its Python thread cannot be killed: it keeps waiting.
    stdio_server.send(call(1, "hang"))
    assert "TIMEOUT" in json.dumps(stdio_server.read_response(1)["result"]).upper()
    # `block` has no timeout short enough: it is still in flight at Ctrl-C.
    stdio_server.send(call(2, "block"))
    stdio_server.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert stdio_server.read_response(3)["result"] == {}
    stdio_server.send(call(4, "add", {"a": 1, "b": 1}))
    assert stdio_server.read_response(4)["result"]["structuredContent"] == {"result": 2}
    stdio_server.proc.send_signal(signal.SIGINT)
    # Bounded: the 5 s shutdown grace, then the process exits with both threads still stuck.
    assert stdio_server.proc.wait(timeout=30) == 0
    assert b"Traceback" not in stdio_server.proc.stderr.read()


def test_a_timed_out_sync_tool_can_no_longer_reach_the_client(stdio_server):
    # Its call was answered (TIMEOUT): the stuck thread's context is cut off, so it sends
    # nothing after the response and holds none of the connection's resources.
    stdio_server.send({"jsonrpc": "2.0", "id": 0, "method": "logging/setLevel", "params": {"level": "debug"}})
    stdio_server.read_response(0)
    message = call(1, "hang_then_report")
    message["params"]["_meta"] = {"progressToken": "late"}
    stdio_server.send(message)
    assert "TIMEOUT" in json.dumps(stdio_server.read_response(1)["result"]).upper()
    stdio_server.send(call(2, "release"))
    stdio_server.read_response(2)
    stdio_server.send(call(3, "late_report"))
    late = stdio_server.read_response(3)["result"]["structuredContent"]["result"]
    assert late == {"progress": False, "log": False, "elicit": "ClientRequestFailed", "cancelled": True}, late


def test_exceptions_and_bad_arguments_are_tool_errors(stdio_server):
    stdio_server.send(call(1, "boom", {"message": "kaput"}))
    boom = stdio_server.read_response(1)["result"]
    assert boom["isError"] is True
    assert boom["structuredContent"]["error_type"] == "RuntimeError"
    assert boom["structuredContent"]["error_message"] == "kaput"
    stdio_server.send(call(2, "add", {"a": "two"}))
    bad = stdio_server.read_response(2)["result"]
    assert bad["isError"] is True and bad["structuredContent"]["error_type"] == "ValidationError"
    stdio_server.send(call(3, "nope"))
    nope = stdio_server.read_response(3)
    assert "ToolNotFound" in json.dumps(nope) or nope.get("error")


def test_ctrl_c_stops_a_stdio_server_cleanly(stdio_server):
    stdio_server.proc.send_signal(signal.SIGINT)
    assert stdio_server.proc.wait(timeout=30) == 0
    assert b"Traceback" not in stdio_server.proc.stderr.read()


def test_ctrl_c_lets_a_call_in_flight_finish(stdio_server):
    stdio_server.send(call(1, "slow_echo", {"text": "finished", "delay": 0.5}))
    # The read loop takes lines in order: once ping is answered, the call is in flight.
    stdio_server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    stdio_server.read_response(2)
    stdio_server.proc.send_signal(signal.SIGINT)
    reply = stdio_server.read_response(1)
    assert reply["result"]["structuredContent"] == {"result": "finished"}
    assert stdio_server.proc.wait(timeout=30) == 0


def test_an_async_tool_past_its_timeout_is_cancelled(stdio_server):
    stdio_server.send(call(1, "async_hang"))
    reply = stdio_server.read_response(1)
    assert reply["result"]["isError"] is True and "TIMEOUT" in json.dumps(reply["result"]).upper()
    # The coroutine is cancelled soon after; poll for it with a generous deadline.
    import time

    deadline = time.monotonic() + 30
    request_id = 100
    while True:
        request_id += 1
        stdio_server.send(call(request_id, "async_hang_cancelled"))
        if stdio_server.read_response(request_id)["result"]["structuredContent"] == {"result": True}:
            break
        assert time.monotonic() < deadline, "the timed-out coroutine was never cancelled"


def test_print_in_a_tool_does_not_reach_the_protocol_stream(stdio_server):
    stdio_server.send(call(1, "noisy"))
    # read() parses every stdout line as JSON: a printed line would fail here.
    assert stdio_server.read_response(1)["result"]["structuredContent"] == {"result": "quiet"}
    stdio_server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert stdio_server.read_response(2)["result"] == {}


BAD_ENVELOPES = [
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "a" * (5 * 1024 * 1024)}},  # over 4 MiB
    {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"},  # an id JSON-RPC does not allow
    {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
    {"jsonrpc": "1.0", "id": 2, "method": "ping"},
    {"jsonrpc": "2.0", "id": 3, "method": 5},
    {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": "not an object"},
    {"id": 5, "method": "ping"},
]


@pytest.mark.parametrize("message", BAD_ENVELOPES, ids=range(len(BAD_ENVELOPES)))
def test_handle_request_answers_or_refuses_bad_envelopes_and_never_hangs(message):
    import threading

    server = demo_in_process()
    outcome = []

    def run():
        try:
            outcome.append(("reply", asyncio.run(server.handle_request(message))))
        except (OSError, ValueError) as e:
            outcome.append(("refused", str(e)))
        outcome.append(("then", asyncio.run(server.handle_request({"jsonrpc": "2.0", "id": "p", "method": "ping"}))))

    # A hang would hang the suite: a daemon thread with a generous deadline.
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    assert len(outcome) == 2, f"handle_request hung on {str(message)[:80]}"
    kind, value = outcome[0]
    if kind == "reply":
        assert "error" in value, value
    assert outcome[1] == ("then", {"jsonrpc": "2.0", "id": "p", "result": {}})


# ----- handle_request and a tool that asks the client --------------------------------------


def asking_server():
    from codomyrmex_mcp.context import Context

    server = MCPServer(MCPServerConfig(name="asking"))
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

    @server.tool()
    def ask_name(ctx: Context) -> str:
        answer = ctx.elicit("Who are you?", schema)
        return f"Hello, {answer['content']['name']}"

    @server.tool()
    async def ask_name_async(ctx: Context) -> str:
        answer = await ctx.elicit_async("Who are you?", schema)
        return f"Hello, {answer['content']['name']}"

    return server


ELICITING_META = {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}


@pytest.mark.parametrize("tool", ["ask_name", "ask_name_async"])
def test_handle_request_answers_input_required_in_the_modern_era_and_takes_the_retry(tool):
    server = asking_server()

    async def run():
        params = {"name": tool, "arguments": {}, "_meta": ELICITING_META}
        first = await server.handle_request({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
        result = first["result"]
        assert result["resultType"] == "input_required", first
        request = result["inputRequests"]["elicitation"]
        assert request["method"] == "elicitation/create" and request["params"]["message"] == "Who are you?"
        retry = dict(
            params,
            inputResponses={"elicitation": {"action": "accept", "content": {"name": "Ada"}}},
            requestState=result["requestState"],
        )
        return await server.handle_request({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": retry})

    final = within(60, run)
    assert final["result"]["structuredContent"] == {"result": "Hello, Ada"}, final


def legacy_init(capabilities):
    return dict(INITIALIZE, params=dict(INITIALIZE["params"], capabilities=capabilities))


async def legacy_call(server, tool, **options):
    await legacy_handshake(server, legacy_init({"elicitation": {}}))
    return await server.handle_request(call(1, tool), **options)


def sync_answer(request):
    assert request["method"] == "elicitation/create" and request["params"]["message"] == "Who are you?"
    return {"action": "accept", "content": {"name": "Ada"}}


async def async_answer(request):
    await asyncio.sleep(0)
    return sync_answer(request)


@pytest.mark.parametrize("tool", ["ask_name", "ask_name_async"])
@pytest.mark.parametrize("answer", [sync_answer, async_answer], ids=["sync", "async"])
def test_handle_request_lets_on_client_request_answer_a_legacy_server_request(tool, answer):
    reply = within(60, lambda: legacy_call(asking_server(), tool, on_client_request=answer))
    assert reply["result"]["structuredContent"] == {"result": "Hello, Ada"}, reply


def test_handle_request_without_on_client_request_fails_the_tools_request_at_once():
    # Before, the request was dropped and the call waited for its tool timeout (60 s).
    reply = within(30, lambda: legacy_call(asking_server(), "ask_name"))
    assert reply["result"]["isError"] is True
    error = reply["result"]["structuredContent"]
    assert error["error_type"] == "ClientRequestFailed" and "on_client_request" in error["error_message"], error


def test_an_on_client_request_that_raises_fails_the_tools_request():
    def refuse(request):
        raise PermissionError("not today")

    reply = within(60, lambda: legacy_call(asking_server(), "ask_name", on_client_request=refuse))
    error = reply["result"]["structuredContent"]
    assert error["error_type"] == "ClientRequestFailed" and "not today" in error["error_message"], error



# ----- cancellation by the client: notifications/cancelled over stdio, in both eras ------


def wait_until_cancelled(server, tag, first_id, meta=None):
    import time

    deadline = time.monotonic() + 30
    request_id = first_id
    while True:
        request_id += 1
        message = call(request_id, "cancelled")
        if meta:
            message["params"]["_meta"] = meta
        server.send(message)
        seen = server.read_response(request_id)["result"]["structuredContent"]
        if tag in seen.get("result", []):
            return
        assert time.monotonic() < deadline, f"{tag}: the tool never saw its cancellation ({seen})"
        time.sleep(0.05)  # under the server's rate limit


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("tool", ["wait_for_cancel", "async_wait_for_cancel"])
def test_a_client_cancellation_reaches_the_python_tool_over_stdio(era, tool):
    server = StdioServer()
    meta = None
    try:
        if era == "2025-11-25":
            server.handshake()
        else:
            meta = MODERN_META
        tag = f"{tool}-{era}"
        message = call(1, tool, {"tag": tag})
        if meta:
            message["params"]["_meta"] = meta
        server.send(message)
        # Lines are read in order: once a later request is answered, the call is in flight.
        ping = call(2, "cancelled")
        if meta:
            ping["params"]["_meta"] = meta
        server.send(ping)
        server.read_response(2)
        server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1, "reason": "test"}})
        wait_until_cancelled(server, tag, 100, meta)
    finally:
        server.close()
