"""The installed package type-checks users' code: mypy reads its annotations (py.typed) and
the native module's stubs (_core.pyi). The package itself is clean under --strict."""

import subprocess
import sys

import pytest

pytest.importorskip("mypy")

GOOD = '''
from typing import Any, Dict, List, Optional, Tuple

from codomyrmex_mcp import (
    MCPErrorDetail, MCPServer, MCPServerConfig, MCPToolCall, MCPToolRegistry, MCPToolResult, mcp_tool,
)
from codomyrmex_mcp.context import Context

registry = MCPToolRegistry()
registry.register("t", {"type": "object"}, lambda: 1)
names: List[str] = registry.list_tools()
verdict: Tuple[bool, Optional[str]] = registry.validate_call(MCPToolCall(tool_name="t", arguments={}))
result: MCPToolResult = registry.execute(MCPToolCall(tool_name="t", arguments={}))
ok = MCPToolResult(status="success")
failed = MCPToolResult(status="failure", error=MCPErrorDetail(error_type="E", error_message="m"))
server = MCPServer(MCPServerConfig(name="x", per_tool_timeouts={"t": 1.0}))


@mcp_tool(category="c", version="2.0")
def add(a: int, b: int = 0) -> int:
    return a + b


@server.tool(title="T")
def with_context(n: int, ctx: Context) -> bool:
    return ctx.report_progress(n, 10)


total: int = add(1, 2)


@server.tool()
def asks(ctx: Context) -> str:
    answer: Dict[str, Any] = ctx.elicit("Name?", {"type": "object"}, key="name")
    reply: Dict[str, Any] = ctx.create_message("hi", 10, systemPrompt="Be brief.")
    roots: List[Dict[str, Any]] = ctx.list_roots()
    return f"{answer} {reply} {roots}"


@server.tool()
async def asks_async(ctx: Context) -> str:
    answer = await ctx.elicit_async("Name?", {"type": "object"})
    reply = await ctx.create_message_async([{"role": "user", "content": {"type": "text", "text": "hi"}}], 10)
    roots = await ctx.list_roots_async()
    return f"{answer} {reply} {roots}"


async def serve() -> None:
    await server.run_http("127.0.0.1", 0, auth_token="t", allowed_hosts=["mcp.example.com"])
    await server.run_http(jwks={"keys": []}, issuer="https://i.example", audience="https://a.example/mcp", required_scopes=["s"])
    reply: Optional[Dict[str, Any]] = await server.handle_request({}, on_client_request=lambda request: {"roots": []})
'''

BAD = '''
from codomyrmex_mcp import MCPServerConfig, MCPToolCall, MCPToolRegistry

registry = MCPToolRegistry()
count: int = registry.list_tools()
MCPServerConfig(rate_limit_burst="many")
MCPToolCall(tool_name=3, arguments={})
'''


def mypy(*arguments):
    run = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", *arguments], capture_output=True, text=True)
    return run.returncode, run.stdout


def test_correct_user_code_passes_strict(tmp_path):
    path = tmp_path / "good.py"
    path.write_text(GOOD)
    code, out = mypy("--strict", str(path))
    assert code == 0, out


def test_wrong_user_code_is_reported(tmp_path):
    path = tmp_path / "bad.py"
    path.write_text(BAD)
    code, out = mypy(str(path))
    assert code == 1
    assert 'variable has type "int"' in out
    assert '"rate_limit_burst"' in out
    assert '"tool_name"' in out


def test_the_package_is_clean_under_strict(tmp_path):
    code, out = mypy("--strict", "--cache-dir", str(tmp_path), "-p", "codomyrmex_mcp")
    assert code == 0, out
