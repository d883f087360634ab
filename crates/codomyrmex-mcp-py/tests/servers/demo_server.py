"""A server written with the package, for the tests: `demo_server.py [stdio|http]`.

Tools: `add` (sync), `slow_echo` (async), `boom` (raises), `block` (waits until `release`
is called; `is_blocking` says whether one started), `hang` (the same wait, with a 1 s timeout), `async_hang` (an async wait with a
1 s timeout) and `async_hang_cancelled` (whether that wait was cancelled), `noisy` (prints to
stdout), `progress` (takes a Context), `ask_name` (elicits), `ask_twice`, `ask_name_async`,
`sample`, `sample_async`, `roots`, `roots_async` and `ask_and_sample` (requests to the
client), `wait_for_cancel`, `async_wait_for_cancel` and `cancelled` (cancellation),
`hang_then_report` and `late_report` (a context after its call ended), and `counter` via `register_tool`; one resource and one prompt. Over HTTP it listens on a port
the OS picks on 127.0.0.1 and reports it on stderr.
"""

import asyncio
import sys
import threading
import time
from typing import Optional

from codomyrmex_mcp import MCPServer, MCPServerConfig, mcp_tool
from codomyrmex_mcp.context import Context

transport = sys.argv[1] if len(sys.argv) > 1 else "stdio"
server = MCPServer(
    MCPServerConfig(name="py-demo", version="0.0.1", transport=transport, per_tool_timeouts={"hang": 1.0, "async_hang": 1.0, "hang_then_report": 1.0})
)
released = threading.Event()
blocking = threading.Event()


@server.tool(title="Add")
def add(a: int, b: int = 0) -> int:
    """Adds two integers."""
    return a + b


@server.tool()
async def slow_echo(text: str, delay: Optional[float] = None) -> str:
    """Echoes, after an asyncio sleep."""
    await asyncio.sleep(delay or 0)
    return text


@server.tool()
def boom(message: str) -> None:
    """Always raises."""
    raise RuntimeError(message)


@server.tool()
def block() -> str:
    """Waits until `release` is called."""
    blocking.set()
    released.wait(60)
    return "released"


@server.tool()
def is_blocking() -> bool:
    """Whether a `block` call has started."""
    return blocking.is_set()


@server.tool()
def hang() -> str:
    """Waits until `release` is called; its timeout is 1 s."""
    released.wait(60)
    return "too late"


async_cancelled = threading.Event()


@server.tool()
async def async_hang() -> str:
    """Sleeps a minute; its timeout is 1 s, after which it is cancelled."""
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        async_cancelled.set()
        raise
    return "too late"


@server.tool()
def async_hang_cancelled() -> bool:
    """Whether `async_hang` was cancelled."""
    return async_cancelled.is_set()


@server.tool()
def noisy() -> str:
    """Prints to stdout, which must not reach the protocol stream."""
    print("this is not JSON-RPC")
    return "quiet"


@server.tool()
def release() -> str:
    """Releases `block` and `hang`."""
    released.set()
    return "ok"


@mcp_tool(category="demo")
def progress(steps: int, ctx: Context) -> int:
    """Reports progress `steps` times."""
    for i in range(steps):
        ctx.report_progress(i + 1, steps, f"step {i + 1}")
    ctx.info({"done": steps})
    return steps


server.tool()(progress)


@server.tool()
def ask_name(ctx: Context) -> str:
    """Asks the user for a name (elicitation) and greets it."""
    answer = ctx.elicit("Who are you?", {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    if answer.get("action") != "accept":
        return "no name given"
    return f"Hello, {answer['content']['name']}"


NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@server.tool()
def ask_twice(ctx: Context) -> str:
    """Asks two questions in turn (elicitation), each answered on its own."""
    first = ctx.elicit("First name?", NAME)
    last = ctx.elicit("Last name?", NAME)
    return f"{first['content']['name']} {last['content']['name']}"


@server.tool()
async def ask_name_async(ctx: Context) -> str:
    """`ask_name` as an async tool."""
    answer = await ctx.elicit_async("Who are you?", NAME)
    return f"Hello, {answer['content']['name']}"


@server.tool()
def sample(prompt: str, ctx: Context) -> str:
    """Asks the client's model (sampling)."""
    reply = ctx.create_message(prompt, max_tokens=20, systemPrompt="Be brief.")
    return f"{reply['model']}: {reply['content']['text']}"


@server.tool()
async def sample_async(prompt: str, ctx: Context) -> str:
    """`sample` as an async tool."""
    reply = await ctx.create_message_async(prompt, max_tokens=20, systemPrompt="Be brief.")
    return f"{reply['model']}: {reply['content']['text']}"


@server.tool()
def roots(ctx: Context) -> list:
    """The client's roots."""
    return [r["uri"] for r in ctx.list_roots()]


@server.tool()
async def roots_async(ctx: Context) -> list:
    """`roots` as an async tool."""
    return [r["uri"] for r in await ctx.list_roots_async()]


@server.tool()
def ask_and_sample(ctx: Context) -> str:
    """Elicits, then samples, then lists roots: three kinds of request in one call."""
    name = ctx.elicit("Who are you?", NAME)["content"]["name"]
    reply = ctx.create_message(f"Greet {name}", max_tokens=20)
    return f"{reply['content']['text']} ({len(ctx.list_roots())} roots)"


late = {}
late_done = threading.Event()


@server.tool()
def hang_then_report(ctx: Context) -> str:
    """Waits until `release`, past its 1 s timeout, then tries to reach its client."""
    released.wait(60)
    late["progress"] = ctx.report_progress(1, 1)
    late["log"] = ctx.info("too late")
    try:
        ctx.elicit("Still there?", {"type": "object"})
        late["elicit"] = "answered"
    except Exception as e:  # ClientRequestFailed expected
        late["elicit"] = type(e).__name__
    late["cancelled"] = ctx.is_cancelled()
    late_done.set()
    return "too late"


@server.tool()
def late_report() -> dict:
    """What `hang_then_report` could do after its timeout (waits for it to finish)."""
    late_done.wait(30)
    return late


cancelled_tags = set()


@server.tool()
def wait_for_cancel(tag: str, ctx: Context) -> str:
    """Waits (up to a minute) for the call to be cancelled, polling `is_cancelled`."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if ctx.is_cancelled():
            cancelled_tags.add(tag)
            return "cancelled"
        time.sleep(0.01)
    return "never cancelled"


@server.tool()
async def async_wait_for_cancel(tag: str) -> str:
    """Sleeps a minute unless the call is cancelled (the coroutine is then cancelled)."""
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        cancelled_tags.add(tag)
        raise
    return "never cancelled"


@server.tool()
def cancelled() -> list:
    """The tags of the calls that saw their cancellation."""
    return sorted(cancelled_tags)


count = [0]


def counter() -> int:
    count[0] += 1
    return count[0]


server.register_tool("counter", {"name": "counter", "description": "Counts calls.", "inputSchema": {"type": "object"}}, counter)
server.register_resource("demo://greeting", "greeting", "A greeting.", "text/plain", lambda: "hello from Python")
server.register_prompt(
    "review", "Asks for a review.", [{"name": "code", "description": "The code.", "required": True}], "Review this: {code}"
)

if __name__ == "__main__":
    # run() serves config.transport; port 0: the OS picks one.
    server.run(port=0)
