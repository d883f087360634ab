"""@mcp_tool: metadata, schemas from type hints, conversion of arguments, discovery."""

import asyncio
import dataclasses
import enum
import sys
import types
import warnings
from typing import Any, Dict, List, Literal, Optional, Union

import pytest
from pydantic import BaseModel, Field
from typing_extensions import Annotated, TypedDict

from codomyrmex_mcp import MCPRegistrationError, MCPToolCall, MCPToolRegistry, mcp_tool
from codomyrmex_mcp.context import Context
from codomyrmex_mcp.decorators import discover_tools, register_function, tool_schema


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(BaseModel):
    x: int
    y: int = 0


class Options(TypedDict):
    verbose: bool


@dataclasses.dataclass
class Window:
    width: int
    height: int


def call(name, **arguments):
    return MCPToolCall(tool_name=name, arguments=arguments)


def test_metadata_and_the_function_stays_callable():
    @mcp_tool(category="math", version="2.0")
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    assert add(2, 3) == 5
    assert add.__name__ == "add" and add.__doc__ == "Add two numbers."
    meta = add._mcp_tool
    assert meta["name"] == "add"
    assert meta["description"] == "Add two numbers."
    assert meta["category"] == "math" and meta["version"] == "2.0" and meta["deprecated_in"] is None
    assert meta["module"] == __name__
    assert meta["schema"]["required"] == ["a", "b"]
    assert add._mcp_tool_meta is meta


def test_keyword_arguments_override_the_defaults():
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}

    @mcp_tool(name="search.find", description="Finds.", schema=schema, deprecated_in="1.5")
    def find(q):
        return q

    assert find._mcp_tool["name"] == "search.find"
    assert find._mcp_tool["description"] == "Finds."
    assert find._mcp_tool["schema"] is schema
    assert find._mcp_tool["version"] == "1.0"
    with pytest.warns(DeprecationWarning, match="deprecated since v1.5"):
        assert find("x") == "x"
    r = MCPToolRegistry()
    register_function(r, find)
    assert r.definition("search.find")["_meta"] == {"category": "general", "version": "1.0", "deprecated_in": "1.5"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert r.execute(call("search.find", q="y")).data == {"result": "y"}


def test_schema_from_scalar_hints_and_defaults():
    def f(i: int, x: float, s: str, b: bool, n: Optional[int] = None, d: str = "hi"):
        pass

    s = tool_schema(f)
    p = s["properties"]
    assert s["type"] == "object" and s["required"] == ["i", "x", "s", "b"]
    assert p["i"]["type"] == "integer" and p["x"]["type"] == "number"
    assert p["s"]["type"] == "string" and p["b"]["type"] == "boolean"
    assert p["n"] == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None, "title": "N"}
    assert p["d"]["default"] == "hi"


def test_schema_from_containers_unions_literals_and_enums():
    def f(
        xs: List[int],
        m: Dict[str, float],
        u: Union[int, str],
        mode: Literal["fast", "slow"],
        color: Color,
    ):
        pass

    s = tool_schema(f)
    p = s["properties"]
    assert p["xs"]["type"] == "array" and p["xs"]["items"] == {"type": "integer"}
    assert p["m"]["type"] == "object" and p["m"]["additionalProperties"] == {"type": "number"}
    assert p["u"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert p["mode"]["enum"] == ["fast", "slow"]
    assert s["$defs"]["Color"]["enum"] == ["red", "blue"]


@pytest.mark.skipif(sys.version_info < (3, 9), reason="builtin generics")
def test_schema_from_builtin_generics():
    def f(xs: list[str], m: dict[str, int]):
        pass

    p = tool_schema(f)["properties"]
    assert p["xs"]["items"] == {"type": "string"}
    assert p["m"]["additionalProperties"] == {"type": "integer"}


def test_schema_from_models_typed_dicts_dataclasses_and_annotated_fields():
    def f(
        point: Point,
        options: Options,
        window: Window,
        q: Annotated[str, Field(description="The query.", min_length=1)],
    ):
        pass

    s = tool_schema(f)
    assert set(s["$defs"]) >= {"Point", "Options", "Window"}
    assert s["$defs"]["Point"]["required"] == ["x"]
    assert s["$defs"]["Options"]["properties"]["verbose"]["type"] == "boolean"
    assert s["$defs"]["Window"]["required"] == ["width", "height"]
    assert s["properties"]["q"]["description"] == "The query."
    assert s["properties"]["q"]["minLength"] == 1


def test_arguments_are_converted_to_the_hinted_types():
    seen = {}

    @mcp_tool()
    def f(point: Point, color: Color, window: Window, options: Options, n: Optional[int] = None) -> str:
        seen.update(point=point, color=color, window=window, options=options, n=n)
        return "ok"

    r = MCPToolRegistry()
    register_function(r, f)
    result = r.execute(
        call("f", point={"x": 1}, color="blue", window={"width": 3, "height": 4}, options={"verbose": True})
    )
    assert result.data == {"result": "ok"}, result
    assert seen == {
        "point": Point(x=1, y=0),
        "color": Color.BLUE,
        "window": Window(3, 4),
        "options": {"verbose": True},
        "n": None,
    }
    # Schema validation (in Rust) comes first: a wrong enum value never reaches Pydantic.
    bad = r.execute(call("f", point={"x": 1}, color="green", window={"width": 3, "height": 4}, options={"verbose": True}))
    assert bad.error.error_type == "ValidationError"
    assert bad.error.error_details["violations"][0]["pointer"] == "/color"


def test_parameters_named_like_base_model_attributes_work():
    @mcp_tool()
    def f(schema: str, model_config: int = 1, copy: bool = False):
        return [schema, model_config, copy]

    r = MCPToolRegistry()
    register_function(r, f)
    assert set(f._mcp_tool["schema"]["properties"]) == {"schema", "model_config", "copy"}
    assert r.execute(call("f", schema="s", copy=True)).data == {"result": ["s", 1, True]}


def test_async_functions():
    @mcp_tool()
    async def slow_double(n: int) -> int:
        """Doubles, later."""
        await asyncio.sleep(0.01)
        return 2 * n

    assert asyncio.iscoroutinefunction(slow_double)
    assert asyncio.run(slow_double(2)) == 4
    r = MCPToolRegistry()
    register_function(r, slow_double)
    assert r.execute(call("slow_double", n=21)).data == {"result": 42}
    assert r.definition("slow_double")["description"] == "Doubles, later."


def test_a_raising_tool_becomes_a_failure():
    @mcp_tool()
    def boom(n: int):
        raise ValueError(f"bad n: {n}")

    @mcp_tool()
    async def async_boom():
        raise RuntimeError("later")

    r = MCPToolRegistry()
    register_function(r, boom)
    register_function(r, async_boom)
    result = r.execute(call("boom", n=3))
    assert result.status == "failure"
    assert (result.error.error_type, result.error.error_message) == ("ValueError", "bad n: 3")
    assert r.execute(call("async_boom")).error.error_type == "RuntimeError"


def test_a_context_parameter_is_injected_and_not_in_the_schema():
    seen = []

    @mcp_tool()
    def f(n: int, ctx: Context) -> int:
        seen.append((ctx.tool_name, ctx.is_cancelled(), ctx.report_progress(1, 2)))
        return n

    assert list(f._mcp_tool["schema"]["properties"]) == ["n"]
    r = MCPToolRegistry()
    register_function(r, f)
    assert r.execute(call("f", n=1)).data == {"result": 1}
    # Outside a server there is no progress token: nothing is sent.
    assert seen == [("f", False, False)]


def test_discovery_registers_every_decorated_function_of_a_module():
    module = types.ModuleType("discovered_tools")
    exec(
        "from codomyrmex_mcp import mcp_tool\n"
        "@mcp_tool()\n"
        "def b(x: int) -> int:\n    return x\n"
        "@mcp_tool(name='a.first')\n"
        "async def a(x: int) -> int:\n    return x\n"
        "def plain(x):\n    return x\n",
        module.__dict__,
    )
    sys.modules["discovered_tools"] = module
    try:
        r = MCPToolRegistry()
        assert discover_tools("discovered_tools", r) == ["a.first", "b"]
        assert r.list_tools() == ["a.first", "b"]
        # Again: identical, so a no-op.
        assert discover_tools(module, r) == ["a.first", "b"]
    finally:
        del sys.modules["discovered_tools"]


def test_discovery_conflict_raises():
    @mcp_tool(name="t")
    def t(x: int):
        return x

    r = MCPToolRegistry()
    r.register("t", {"type": "object"}, lambda: 0)
    with pytest.raises(MCPRegistrationError):
        register_function(r, t)


def test_registering_an_undecorated_function_is_a_type_error():
    with pytest.raises(TypeError, match="not decorated"):
        register_function(MCPToolRegistry(), lambda: 0)
