"""MCPServer.handle_request(..., on_notification=): a tool's progress and log notifications
reach the caller in both eras, in order and before the response; a sync or async listener;
a listener that raises does not fail the request; concurrent calls each get their own
progress."""

import asyncio
import threading

from codomyrmex_mcp import MCPServer, MCPServerConfig
from codomyrmex_mcp.context import Context

from conftest import MODERN_META, legacy_handshake, within


def reporting_server():
    server = MCPServer(MCPServerConfig(name="reporting"))

    @server.tool()
    def steps(n: int, ctx: Context) -> int:
        for i in range(n):
            ctx.report_progress(i + 1, n, f"step {i + 1}")
        ctx.info({"done": n})
        return n

    @server.tool()
    async def steps_async(n: int, ctx: Context) -> int:
        for i in range(n):
            ctx.report_progress(i + 1, n)
            await asyncio.sleep(0)
        ctx.warning("finished")
        return n

    gate = threading.Barrier(2, timeout=30)

    @server.tool()
    def meet(ctx: Context) -> str:
        # Both calls are in flight before either reports: each report must reach its own call.
        gate.wait()
        ctx.report_progress(1, 1, ctx.tool_name)
        return "met"

    return server


def call(request_id, tool, arguments, meta):
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments, "_meta": meta},
    }


def expected_steps(token, n, logged):
    return [
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": token, "progress": i + 1, "total": n, "message": f"step {i + 1}"},
        }
        for i in range(n)
    ] + [
        {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "logger": "steps", "data": logged},
        }
    ]


def test_a_legacy_calls_progress_and_logs_reach_on_notification_before_the_response():
    server = reporting_server()
    seen = []

    async def run():
        await legacy_handshake(server)
        await server.handle_request({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel", "params": {"level": "debug"}})
        reply = await server.handle_request(call(2, "steps", {"n": 3}, {"progressToken": "t1"}), on_notification=seen.append)
        return reply, list(seen)

    reply, at_reply = within(60, run)
    assert reply["result"]["structuredContent"] == {"result": 3}, reply
    assert at_reply == expected_steps("t1", 3, {"done": 3})


def test_a_modern_calls_progress_and_logs_reach_on_notification_before_the_response():
    server = reporting_server()
    seen = []
    meta = {**MODERN_META, "io.modelcontextprotocol/logLevel": "info", "progressToken": 7}

    async def run():
        reply = await server.handle_request(call(1, "steps", {"n": 2}, meta), on_notification=seen.append)
        return reply, list(seen)

    reply, at_reply = within(60, run)
    assert reply["result"]["structuredContent"] == {"result": 2}, reply
    assert at_reply == expected_steps(7, 2, {"done": 2})


def test_an_async_listener_gets_an_async_tools_notifications():
    server = reporting_server()
    seen = []

    async def listener(notification):
        await asyncio.sleep(0)
        seen.append(notification["method"])

    meta = {**MODERN_META, "io.modelcontextprotocol/logLevel": "warning", "progressToken": "a"}

    async def run():
        reply = await server.handle_request(call(1, "steps_async", {"n": 2}, meta), on_notification=listener)
        return reply, list(seen)

    reply, at_reply = within(60, run)
    assert reply["result"]["structuredContent"] == {"result": 2}, reply
    assert at_reply == ["notifications/progress", "notifications/progress", "notifications/message"]


def test_without_a_progress_token_or_a_log_level_nothing_is_sent():
    server = reporting_server()
    seen = []
    meta = MODERN_META

    reply = within(60, lambda: server.handle_request(call(1, "steps", {"n": 2}, meta), on_notification=seen.append))
    assert reply["result"]["structuredContent"] == {"result": 2}, reply
    assert seen == []


def test_a_listener_that_raises_does_not_fail_the_request(caplog):
    server = reporting_server()
    meta = {**MODERN_META, "progressToken": "x"}

    def listener(notification):
        raise RuntimeError("listener broke")

    reply = within(60, lambda: server.handle_request(call(1, "steps", {"n": 1}, meta), on_notification=listener))
    assert reply["result"]["structuredContent"] == {"result": 1}, reply
    assert "on_notification raised" in caplog.text and "listener broke" in caplog.text


def test_concurrent_calls_each_get_their_own_progress():
    server = reporting_server()
    meta = MODERN_META
    first, second = [], []

    async def run():
        return await asyncio.gather(
            server.handle_request(call(1, "meet", {}, dict(meta, progressToken="one")), on_notification=first.append),
            server.handle_request(call(2, "meet", {}, dict(meta, progressToken="two")), on_notification=second.append),
        )

    replies = within(60, run)
    assert [r["result"]["structuredContent"] for r in replies] == [{"result": "met"}] * 2, replies
    assert [n["params"]["progressToken"] for n in first] == ["one"]
    assert [n["params"]["progressToken"] for n in second] == ["two"]


def test_a_listener_may_send_requests_of_its_own():
    # The connection's reader does not wait for listeners: a listener that calls
    # handle_request itself gets its answer (it used to wait for ever).
    server = reporting_server()
    pings = []

    async def listener(notification):
        pings.append(await server.handle_request({"jsonrpc": "2.0", "id": f"ping-{len(pings)}", "method": "ping"}))

    meta = {**MODERN_META, "progressToken": "p"}
    reply = within(30, lambda: server.handle_request(call(1, "steps", {"n": 2}, meta), on_notification=listener))
    assert reply["result"]["structuredContent"] == {"result": 2}, reply
    assert [p["id"] for p in pings] == ["ping-0", "ping-1"] and all("result" in p for p in pings), pings
