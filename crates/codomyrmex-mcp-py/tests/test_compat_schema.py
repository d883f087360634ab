"""Compatibility mode's ``@mcp_tool`` and registry: the catalogue Codomyrmex's decorator writes
(names, descriptions, schemas with their quirks) and the looser schemas its registry takes,
while what is listed over MCP stays a valid object schema."""

import enum
import json
import pathlib
import warnings
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, Union

import pytest

from codomyrmex_mcp.compat.decorators import mcp_tool
from codomyrmex_mcp.compat.schema_generation import annotation_schema, json_default, schema_from_signature
from codomyrmex_mcp.compat.schemas.mcp_schemas import MCPRegistrationError, MCPToolRegistry, listed_definition


class Color(enum.Enum):
    RED = "red"


def test_names_get_the_codomyrmex_prefix_once():
    @mcp_tool()
    def find():
        pass

    @mcp_tool(name="search.find")
    def other():
        pass

    @mcp_tool(name="codomyrmex.already")
    def third():
        pass

    assert find._mcp_tool_meta["name"] == "codomyrmex.find"
    assert other._mcp_tool_meta["name"] == "codomyrmex.search.find"
    assert third._mcp_tool_meta["name"] == "codomyrmex.already"


def test_description_is_the_stripped_docstring_not_cleandoc():
    @mcp_tool()
    def f():
        """First line.

        Args:
            x: indented
        """

    # cleandoc would dedent the body; the original only strips the ends.
    assert f._mcp_tool_meta["description"] == "First line.\n\n        Args:\n            x: indented"
    assert mcp_tool(description="given")(f)._mcp_tool_meta["description"] == "given"


def test_metadata_keys_tags_and_the_function_itself_carry_it():
    def body(a: int) -> int:
        return a + 1

    wrapped = mcp_tool(category="math", tags=["skills", "math"], version="2.0")(body)
    meta = wrapped._mcp_tool_meta
    assert list(meta) == ["name", "description", "schema", "category", "tags", "module", "version", "deprecated_in"]
    assert meta["tags"] == ["skills", "math"] and meta["category"] == "math" and meta["version"] == "2.0"
    assert body._mcp_tool_meta is meta and wrapped._mcp_tool is meta
    assert wrapped(1) == 2
    assert mcp_tool()(body)._mcp_tool_meta["tags"] == [] and mcp_tool()(body)._mcp_tool_meta["version"] == "1.0"


def test_a_deprecated_tool_warns_when_called():
    @mcp_tool(deprecated_in="1.5")
    def old():
        return 1

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert old() == 1
    assert [str(w.message) for w in caught] == ["MCP tool 'codomyrmex.old' deprecated since v1.5."]


def test_schema_required_is_always_there_and_has_no_titles():
    def f(path: str, limit: int = 10, ratio: float = 0.5, flag: bool = False, note: Optional[str] = None):
        pass

    assert schema_from_signature(f) == {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "ratio": {"type": "number", "default": 0.5},
            "flag": {"type": "boolean", "default": False},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["path"],
    }

    def none():
        pass

    assert schema_from_signature(none) == {"type": "object", "properties": {}, "required": []}


@pytest.mark.parametrize(
    "hint, expected",
    [
        (Any, {"type": "string"}),
        (dict, {"type": "object"}),
        (Dict[str, int], {"type": "object"}),
        (dict[str, Any], {"type": "object"}),
        (list, {"type": "array", "items": {"type": "string"}}),
        (List[Any], {"type": "array", "items": {"type": "string"}}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (List[Dict[str, Any]], {"type": "array", "items": {"type": "object"}}),
        (Sequence[str], {"type": "string"}),
        (Tuple[int, int], {"type": "string"}),
        (set, {"type": "string"}),
        (Literal["a", "b"], {"type": "string"}),
        (bytes, {"type": "string"}),
        (Color, {"type": "string"}),
        (Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
        (Optional[List[str]], {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]}),
        (type(None), {"type": "null"}),
    ],
)
def test_the_originals_type_mapping_quirks_included(hint, expected):
    assert annotation_schema(hint) == expected


def test_defaults_as_json_and_the_ones_not_shown():
    assert json_default((1, "a")) == [1, "a"]
    assert json_default({1: Color.RED}) == {"1": "red"}
    assert json_default(Color.RED) == "red"
    assert json_default(list) is None and json_default(None) is None
    assert json_default(pathlib.PurePosixPath("/a/b")) == "/a/b"

    def f(items: list = None, factory: Any = dict, mode: Color = Color.RED):  # type: ignore[assignment]
        pass

    properties = schema_from_signature(f)["properties"]
    assert "default" not in properties["items"] and "default" not in properties["factory"]
    assert properties["mode"] == {"type": "string", "default": "red"}


def test_args_kwargs_self_are_left_out_and_unreadable_hints_fall_back():
    def f(self, a, *args, b: int = 1, **kwargs):
        pass

    assert schema_from_signature(f) == {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer", "default": 1}},
        "required": ["a"],
    }

    def broken(x: "NoSuchType"):  # noqa: F821
        pass

    assert schema_from_signature(broken) == {"type": "object", "properties": {}}


def test_an_empty_schema_means_generate_a_given_one_is_kept():
    def f(a: int):
        pass

    assert mcp_tool(schema={})(f)._mcp_tool_meta["schema"] == schema_from_signature(f)
    given = {"type": "object", "properties": {"q": {"type": "string"}}}
    assert mcp_tool(schema=given)(f)._mcp_tool_meta["schema"] is given


def listed(registry, name):
    return registry.definition(name)


def test_the_registry_stores_what_it_is_given_and_lists_an_object_schema():
    r = MCPToolRegistry()
    odd = {"name": "t1"}
    r.register("t1", odd)
    assert r.get("t1")["schema"] is odd
    assert listed(r, "t1")["inputSchema"] == {"type": "object"}

    r.register("empty", {})
    assert listed(r, "empty")["inputSchema"] == {"type": "object"}

    r.register("scalar", {"type": "string"})
    assert r.get("scalar")["schema"] == {"type": "string"}
    assert listed(r, "scalar")["inputSchema"] == {"type": "object"}

    r.register("untyped", {"properties": {"a": {"type": "integer"}}})
    assert listed(r, "untyped")["inputSchema"] == {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert r.list_tools() == ["empty", "scalar", "t1", "untyped"]


def test_a_tool_object_lists_its_description_title_and_output_schema():
    r = MCPToolRegistry()
    tool = {
        "name": "codomyrmex.read",
        "description": "",
        "title": "Read",
        "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}, "required": []},
        "outputSchema": {"type": "object"},
    }
    r.register("codomyrmex.read", tool, lambda p="": p)
    d = listed(r, "codomyrmex.read")
    assert d["name"] == "codomyrmex.read"
    assert d["description"] == "" and d["title"] == "Read" and d["outputSchema"] == {"type": "object"}
    assert d["inputSchema"] == tool["inputSchema"]  # "required": [] is kept
    assert r.output_schema("codomyrmex.read") == {"type": "object"}


def test_a_schema_the_rust_registry_refuses_is_stored_and_lists_as_any_arguments():
    r = MCPToolRegistry()
    broken = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    r.register("t", broken, lambda **kw: kw)
    assert r.get("t")["schema"] is broken
    assert listed(r, "t")["inputSchema"] == {"type": "object"}
    assert r.execute({"tool_name": "t", "arguments": {"a": 1}}).data == {"result": {"a": 1}}


def test_names_and_conflicts_are_still_refused():
    r = MCPToolRegistry()
    with pytest.raises(MCPRegistrationError):
        r.register("bad name!", {"type": "object"})
    r.register("t", {"type": "object"}, lambda: 1)
    with pytest.raises(MCPRegistrationError):
        r.register("t", {"type": "object", "properties": {"x": {"type": "integer"}}}, lambda: 2)


def test_execute_wraps_a_string_as_its_result_and_validates():
    r = MCPToolRegistry()
    r.register("echo", {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]}, lambda s: s)
    assert r.execute({"tool_name": "echo", "arguments": {"s": "hi"}}).data == {"result": "hi"}
    bad = r.execute({"tool_name": "echo", "arguments": {}})
    assert bad.status == "failure" and bad.error.error_type == "ValidationError"


@pytest.mark.parametrize(
    "schema, expected",
    [
        ({"inputSchema": {"type": "object", "required": []}, "description": "d"}, ({"type": "object", "required": []}, {"description": "d"})),
        ({"name": "x", "description": "d"}, ({"type": "object"}, {"description": "d"})),
        ("not a dict", ({"type": "object"}, {})),
        ({"type": "array"}, ({"type": "object"}, {})),
    ],
)
def test_listed_definition(schema, expected):
    assert listed_definition(schema) == expected


def test_listed_schemas_are_json():
    r = MCPToolRegistry()
    r.register("t1", {"name": "t1"})
    json.dumps(listed(r, "t1"))


def test_a_failure_with_data_and_no_error_is_refused_for_its_data():
    # Codomyrmex names the data rule here (its error rule runs only on a given error).
    from pydantic import ValidationError

    from codomyrmex_mcp.compat.schemas.mcp_schemas import MCPToolResult

    with pytest.raises(ValidationError, match="'data' field should be null or omitted if status indicates failure"):
        MCPToolResult(status="failure", data={"some": "data"})
    with pytest.raises(ValidationError, match="'error' field must be populated"):
        MCPToolResult(status="failure")
