"""Portable names (issue #31 item 2) through the OpenAI Agents SDK, with its default settings.

The SDK's own MCP server classes (`MCPServerStdio`, `MCPServerStreamableHttp`) connect to
`codomyrmex-mcp gateway` and `codomyrmex-mcp serve` run with `name_style = "portable"`; an
`Agent` with default settings lists their tools as a run does (`Agent.get_all_tools`), and
the SDK's converters turn them into what it would send to the API (Responses' and Chat
Completions' function tools). Every name must match `^[a-zA-Z0-9_-]{1,64}$`, the rule of
OpenAI's API, and one tool is called under its portable name. The same check against the
gateway's default dotted names must find invalid names, which shows that the check can fail.
No API key and no network: nothing is sent to a model.

    python openai_agents.py BINARY WORKDIR
"""

import asyncio
import os
import re
import sys

from agents import Agent
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp
from agents.models.chatcmpl_converter import Converter as ChatConverter
from agents.models.openai_responses import Converter as ResponsesConverter
from agents.run_context import RunContextWrapper

NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# The gateway may wait up to 5 s for its upstreams before it answers the handshake.
TIMEOUT = 30


async def api_names(server):
    """The function-tool names the SDK would send to the API for `server`'s tools."""
    agent = Agent(name="portable-names", mcp_servers=[server])
    tools = await agent.get_all_tools(RunContextWrapper(context=None))
    chat = [ChatConverter.tool_to_openai(t)["function"]["name"] for t in tools]
    converted = ResponsesConverter.convert_tools(tools, [])
    responses = [
        t["name"] for t in converted.tools if isinstance(t, dict) and t.get("type") == "function"
    ]
    assert sorted(chat) == sorted(responses), (chat, responses)
    return chat


async def check(label, server, tool, arguments, expected_text):
    async with server:
        names = await api_names(server)
        bad = [n for n in names if not NAME.match(n)]
        if bad:
            sys.exit(f"openai-agents: {label}: names the API refuses: {bad}")
        if tool not in names:
            sys.exit(f"openai-agents: {label}: no {tool} among {names}")
        result = await server.call_tool(tool, arguments)
        text = " ".join(getattr(c, "text", "") for c in result.content)
        failed = getattr(result, "is_error", None) or getattr(result, "isError", None)
        if failed or expected_text not in text:
            sys.exit(f"openai-agents: {label}: {tool} answered {result}")
        print(f"openai-agents: {label}: {len(names)} tool names valid for the API; {tool} called")


async def check_fails(label, server):
    async with server:
        names = await api_names(server)
        bad = [n for n in names if not NAME.match(n)]
        if not bad:
            sys.exit(f"openai-agents: {label}: expected invalid names, got {names}")
        print(f"openai-agents: {label}: {len(bad)} of {len(names)} names invalid, as expected")


def stdio(binary, *args):
    return MCPServerStdio(
        {"command": binary, "args": list(args)},
        client_session_timeout_seconds=TIMEOUT,
    )


async def main():
    binary, work = sys.argv[1], sys.argv[2]
    root = os.path.join(work, "root")
    os.makedirs(root, exist_ok=True)
    with open(os.path.join(root, "a.txt"), "w") as f:
        f.write("read through the agents SDK")

    def gateway_config(style):
        path = os.path.join(work, f"gateway-{style}.toml")
        with open(path, "w") as f:
            f.write(
                f'name_style = "{style}"\n\n'
                "[[upstream]]\n"
                'name = "files"\n'
                f"command = {binary!r}\n"
                f'args = ["serve", "--root", {root!r}]\n'
            )
        return path

    read = {"path": "a.txt"}
    expected = "read through the agents SDK"
    await check(
        "gateway (stdio)",
        stdio(binary, "gateway", "--config", gateway_config("portable")),
        "files__file_system__read",
        read,
        expected,
    )
    await check(
        "serve (stdio)",
        stdio(binary, "serve", "--root", root, "--name-style", "portable"),
        "file_system__read",
        read,
        expected,
    )
    # serve over Streamable HTTP, on a port the OS picks.
    proc = await asyncio.create_subprocess_exec(
        binary, "serve", "--root", root, "--name-style", "portable", "--http", "127.0.0.1:0",
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        url = None
        while url is None:
            line = await asyncio.wait_for(proc.stderr.readline(), TIMEOUT)
            if not line:
                sys.exit("openai-agents: serve --http ended before it listened")
            m = re.search(rb"http://127\.0\.0\.1:\d+/mcp", line)
            if m:
                url = m.group(0).decode()
        await check(
            "serve (Streamable HTTP)",
            MCPServerStreamableHttp({"url": url}, client_session_timeout_seconds=TIMEOUT),
            "file_system__read",
            read,
            expected,
        )
    finally:
        proc.kill()
        await proc.wait()
    await check_fails(
        "gateway with dotted names (the check can fail)",
        stdio(binary, "gateway", "--config", gateway_config("dotted")),
    )


asyncio.run(main())
