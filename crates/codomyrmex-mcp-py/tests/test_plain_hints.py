"""Plain type hints without Pydantic: a minimal server imports Pydantic neither at start-up
nor to list or call its tools; the models still load on first use, as real Pydantic models;
the schema written for plain hints is Pydantic's own, key for key; their arguments are
converted as Pydantic converts them; plain return values are written as before."""

import json
import math
import subprocess
import sys
import textwrap
from typing import Literal, Optional

import pytest

from codomyrmex_mcp import MCPToolRegistry, mcp_tool
from codomyrmex_mcp.decorators import _parameters, _plain_schema, _pydantic_schema, tool_schema

MINIMAL = textwrap.dedent(
    """
    import asyncio, json, sys
    from typing import Optional
    from codomyrmex_mcp import MCPServer, MCPServerConfig

    seen = {"import": "pydantic" in sys.modules}
    server = MCPServer(MCPServerConfig(name="minimal"))

    @server.tool()
    def add(a: int, b: float = 1.5, note: Optional[str] = None) -> float:
        '''Adds.'''
        return a + b

    @server.tool()
    async def shout(text: str, loud: bool = True) -> str:
        return text.upper() if loud else text

    @server.tool()
    def fails(reason: str) -> None:
        raise ValueError(reason)

    seen["register"] = "pydantic" in sys.modules
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}

    async def run():
        listed = await server.handle_request({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}})
        replies = [listed]
        for i, (name, arguments) in enumerate(
            [("add", {"a": 2}), ("shout", {"text": "hi"}), ("fails", {"reason": "no"}), ("add", {"a": "x"})]
        ):
            params = {"name": name, "arguments": arguments, "_meta": meta}
            replies.append(await server.handle_request({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call", "params": params}))
        return replies

    replies = asyncio.run(run())
    seen["calls"] = "pydantic" in sys.modules
    import codomyrmex_mcp
    model = codomyrmex_mcp.MCPToolResult
    seen["model"] = "pydantic" in sys.modules
    print(json.dumps({"seen": seen, "replies": replies, "model_bases": [c.__name__ for c in model.__mro__]}))
    """
)


def test_a_minimal_server_lists_and_calls_its_tools_without_importing_pydantic():
    out = subprocess.run([sys.executable, "-c", MINIMAL], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["seen"] == {"import": False, "register": False, "calls": False, "model": True}, report["seen"]
    listed, added, shouted, failed, invalid = report["replies"]
    tools = {t["name"]: t for t in listed["result"]["tools"]}
    assert tools["add"]["inputSchema"]["properties"]["b"] == {"default": 1.5, "title": "B", "type": "number"}
    assert added["result"]["structuredContent"] == {"result": 3.5}, added
    assert shouted["result"]["structuredContent"] == {"result": "HI"}, shouted
    error = failed["result"]["structuredContent"]
    assert failed["result"]["isError"] is True and error["error_type"] == "ValueError" and error["error_message"] == "no"
    assert invalid["result"]["isError"] is True, invalid
    assert "BaseModel" in report["model_bases"]


def test_the_models_load_on_first_use_and_are_the_seed_modules():
    import codomyrmex_mcp
    from codomyrmex_mcp.schemas import mcp_schemas

    for name in ("MCPErrorDetail", "MCPToolCall", "MCPToolResult", "MCPMessage", "MCPToolRegistry", "MCPRegistrationError"):
        assert getattr(codomyrmex_mcp, name) is getattr(mcp_schemas, name)
        assert name in dir(codomyrmex_mcp)
    assert codomyrmex_mcp.MCPToolRegistry.__module__ == "codomyrmex_mcp.schemas.mcp_schemas"
    with pytest.raises(AttributeError, match="no_such_name"):
        codomyrmex_mcp.no_such_name  # noqa: B018


def add(a: int, b: int = 0) -> int:
    return a + b


def everything_plain(
    count: int,
    ratio: float,
    name: str,
    flag: bool,
    maybe_count: Optional[int] = None,
    maybe_text: Optional[str] = "x",
    off: bool = False,
    limit: float = 2.5,
    label_text: str = "a b",
) -> None:
    pass


def nothing() -> None:
    pass


@pytest.mark.parametrize("func", [add, everything_plain, nothing])
def test_the_plain_schema_is_pydantics_key_for_key(func):
    parameters, _ = _parameters(func)
    plain = _plain_schema(parameters)
    assert plain is not None
    assert json.dumps(plain) == json.dumps(_pydantic_schema(func))


if sys.version_info >= (3, 10):

    def union_syntax(a: int | None = None, b: None | str = None) -> None:
        pass

    def test_the_plain_schema_of_x_or_none_is_pydantics():
        parameters, _ = _parameters(union_syntax)
        plain = _plain_schema(parameters)
        assert plain is not None and json.dumps(plain) == json.dumps(_pydantic_schema(union_syntax))


def literal_hint(mode: Literal["a", "b"] = "a") -> None:
    pass


def list_hint(items: list) -> None:
    pass


@pytest.mark.parametrize("func", [literal_hint, list_hint])
def test_other_hints_and_defaults_go_to_pydantic(func):
    parameters, _ = _parameters(func)
    assert _plain_schema(parameters) is None
    assert tool_schema(func) == _pydantic_schema(func)


def test_plain_arguments_are_converted_as_pydantic_converts_them():
    seen = {}

    @mcp_tool()
    def typed(ratio: float, count: int, maybe: Optional[float] = None, flag: bool = False) -> str:
        seen.update(ratio=ratio, count=count, maybe=maybe, flag=flag)
        return "ok"

    registry = MCPToolRegistry()
    registry.register("typed", typed._mcp_tool["schema"], typed._mcp_adapter)
    result = registry.execute({"tool_name": "typed", "arguments": {"ratio": 2, "count": 3.0, "maybe": 1, "extra": "ignored"}})
    assert result.status == "success", result
    assert seen == {"ratio": 2.0, "count": 3, "maybe": 1.0, "flag": False}
    assert [type(seen[k]) for k in ("ratio", "count", "maybe")] == [float, int, float]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("text", "text"),
        (3, 3),
        (True, True),
        (2.5, 2.5),
        (None, None),
        ({"a": [1, 2.5, True, None]}, {"a": [1, 2.5, True, None]}),
        (math.nan, None),  # Pydantic writes NaN as null, and still does
        ((1, 2), [1, 2]),
    ],
)
def test_return_values_are_written_as_before(value, expected):
    registry = MCPToolRegistry()
    registry.register("give", {"type": "object"}, lambda: value)
    result = registry.execute({"tool_name": "give", "arguments": {}})
    assert result.status == "success" and result.data == {"result": expected}, result
