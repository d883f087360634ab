"""MCPToolRegistry: the cases of the Rust registry suite (src/registry.rs), through Python."""

import asyncio
import threading

import pytest

from codomyrmex_mcp import MCPErrorDetail, MCPRegistrationError, MCPToolCall, MCPToolRegistry, MCPToolResult

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}


def add(a, b):
    return a + b


def call(name, **arguments):
    return MCPToolCall(tool_name=name, arguments=arguments)


@pytest.mark.parametrize("name", ["a", "file_utility.read_file_content", "A-b_c.9", "x" * 128])
def test_valid_names(name):
    r = MCPToolRegistry()
    r.register(name, SCHEMA, add)
    assert r.list_tools() == [name]


@pytest.mark.parametrize("name", ["", "has space", "slash/x", "\u00fc", "x" * 129, "a,b"])
def test_invalid_names_are_refused(name):
    r = MCPToolRegistry()
    with pytest.raises(MCPRegistrationError, match="invalid"):
        r.register(name, SCHEMA, add)
    assert r.list_tools() == []


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string"},
        {"properties": {}},
        {"type": "object", "properties": {"a": {"type": "nope"}}},
        {"type": "object", "minProperties": -1},
        {"type": "object", "properties": {"a": {"$ref": "https://example.com/s.json"}}},
    ],
)
def test_schemas_must_be_valid_object_schemas(schema):
    r = MCPToolRegistry()
    with pytest.raises(MCPRegistrationError, match="input schema is invalid"):
        r.register("t", schema, add)
    assert r.list_tools() == [] and r.get("t") is None


def test_a_schema_that_is_not_json_is_refused():
    r = MCPToolRegistry()
    with pytest.raises(MCPRegistrationError, match="not JSON"):
        r.register("t", {"type": "object", "default": object()}, add)
    assert r.list_tools() == []


def test_registration_error_is_a_value_error():
    assert issubclass(MCPRegistrationError, ValueError)


def test_listing_is_sorted_and_identical_registration_is_a_no_op():
    r = MCPToolRegistry()
    for n in ["zeta", "alpha", "mid.tool"]:
        r.register(n, SCHEMA, add)
    assert r.list_tools() == ["alpha", "mid.tool", "zeta"]
    reordered = {"required": ["a", "b"], "properties": {"b": {"type": "integer"}, "a": {"type": "integer"}}, "type": "object"}
    r.register("alpha", reordered, lambda a, b: "second handler")
    assert r.list_tools() == ["alpha", "mid.tool", "zeta"]
    # The first registration stands, handler included.
    assert r.execute(call("alpha", a=1, b=2)).data == {"result": 3}
    assert r.get("alpha")["handler"] is add


def test_conflicting_registration_fails_closed():
    r = MCPToolRegistry()
    r.register("t", SCHEMA, add)
    with pytest.raises(MCPRegistrationError) as caught:
        r.register("t", {"type": "object", "properties": {"a": {"type": "string"}}}, add)
    assert '"t"' in str(caught.value) and "/inputSchema" in str(caught.value)
    assert r.get("t")["schema"] == SCHEMA
    assert r.definition("t")["inputSchema"] == SCHEMA
    assert r.execute(call("t", a=2, b=3)).data == {"result": 5}


def test_get_and_get_tool_and_definition():
    r = MCPToolRegistry()
    r.register("t", SCHEMA, add, description="adds", meta={"category": "math"})
    assert r.get("t") == {"name": "t", "schema": SCHEMA, "handler": add}
    assert r.get_tool("t") == r.get("t")
    assert r.get("missing") is None
    assert r.definition("t") == {"name": "t", "description": "adds", "inputSchema": SCHEMA, "_meta": {"category": "math"}}


def test_unregister_reports_presence():
    r = MCPToolRegistry()
    r.register("t", SCHEMA, add)
    assert r.unregister("t") is True
    assert r.unregister("t") is False
    assert r.get("t") is None and r.list_tools() == []
    # The name is free again, for any schema.
    r.register("t", {"type": "object"}, lambda: 1)
    assert r.execute(call("t")).data == {"result": 1}


def test_execute_success_failure_and_wrapping():
    r = MCPToolRegistry()
    r.register("add", SCHEMA, add)
    r.register("obj", {"type": "object"}, lambda: {"k": 1})
    r.register("direct", {"type": "object"}, lambda: MCPToolResult(status="no_change_needed", explanation="already fine"))

    async def later():
        await asyncio.sleep(0)
        return "later"

    r.register("async", {"type": "object"}, later)

    ok = r.execute(call("add", a=2, b=3))
    assert ok.status == "success" and ok.data == {"result": 5}
    # As in Codomyrmex, every plain value is wrapped, a dict included.
    assert r.execute(call("obj")).data == {"result": {"k": 1}}
    direct = r.execute(call("direct"))
    assert direct.status == "no_change_needed" and direct.explanation == "already fine"
    assert r.execute(call("async")).data == {"result": "later"}
    missing = r.execute(call("nope"))
    assert missing.status == "failure" and missing.error.error_type == "ToolNotFound"
    assert r.execute({"tool_name": "add", "arguments": {"a": 1, "b": 1}}).data == {"result": 2}


def test_a_raising_handler_becomes_a_failure_with_an_error_detail():
    r = MCPToolRegistry()

    def boom():
        raise FileNotFoundError("no such file: /x")

    async def async_boom():
        raise KeyError("k")

    r.register("boom", {"type": "object"}, boom)
    r.register("async_boom", {"type": "object"}, async_boom)
    result = r.execute(call("boom"))
    assert result.status == "failure" and result.data is None
    # The message reaches clients: the server's absolute path is cut to its last component.
    assert result.error == MCPErrorDetail(error_type="FileNotFoundError", error_message="no such file: x")
    assert r.execute(call("async_boom")).error.error_type == "KeyError"


def test_a_tool_without_handler_fails_with_no_handler():
    r = MCPToolRegistry()
    r.register("t", {"type": "object"})
    assert r.execute(call("t")).error.error_type == "NoHandler"


def test_invalid_arguments_list_every_violation_and_the_handler_does_not_run():
    ran = []
    r = MCPToolRegistry()
    r.register("add", SCHEMA, lambda a, b: ran.append(1))
    result = r.execute(call("add", a="x"))
    assert result.error.error_type == "ValidationError"
    rules = sorted(v["rule"] for v in result.error.error_details["violations"])
    assert rules == ["required", "type"]
    assert ran == []


def test_validate_call():
    r = MCPToolRegistry()
    ran = []
    r.register("add", SCHEMA, lambda a, b: ran.append(1))
    assert r.validate_call(call("add", a=1, b=2)) == (True, None)
    ok, why = r.validate_call(call("add", a="x", b=2))
    assert ok is False and "/a" in why and "integer" in why
    ok, why = r.validate_call(call("add", a=1))
    assert ok is False and "b" in why
    assert r.validate_call(call("nope")) == (False, "Unknown tool: nope")
    assert ran == []  # validation never runs the tool


def test_unserialisable_results_become_failures():
    r = MCPToolRegistry()
    r.register("t", {"type": "object"}, lambda: object())
    result = r.execute(call("t"))
    assert result.status == "failure" and result.error.error_type == "ResultNotSerializable"


def test_handlers_receive_validated_keyword_arguments():
    r = MCPToolRegistry()
    r.register("echo", {"type": "object", "properties": {"s": {"type": "string"}}}, lambda **kw: kw)
    assert r.execute(call("echo", s="\u4e2d", extra=[1, None])).data == {"result": {"s": "\u4e2d", "extra": [1, None]}}


def test_tools_may_execute_other_tools_synchronously():
    r = MCPToolRegistry()

    async def inner():
        await asyncio.sleep(0)
        return 2

    async def outer():
        # A synchronous execute from an async tool blocks the tool loop; the inner async
        # tool must not wait for that loop.
        return r.execute(call("inner")).data["result"] + 1

    r.register("inner", {"type": "object"}, inner)
    r.register("outer", {"type": "object"}, outer)
    r.register("sync_outer", {"type": "object"}, lambda: r.execute(call("outer")).data["result"] + 1)
    results = []

    def run():
        results.append(r.execute(call("outer")).data)
        results.append(r.execute(call("sync_outer")).data)

    # A deadlock would hang the test: run it on a daemon thread with a generous deadline.
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(60)
    assert results == [{"result": 3}, {"result": 4}]


# ----- the validator's cases (src/validation.rs), as a Python user sees them ----------------

UNION_SCHEMA = {
    "type": "object",
    "properties": {
        "n": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
        "e": {
            "anyOf": [
                {"oneOf": [{"type": "string", "const": "text"}, {"type": "string", "const": "base64"}]},
                {"type": "null"},
            ]
        },
        "u": {"anyOf": [{"type": "string", "minLength": 3}, {"type": "integer", "minimum": 5}]},
    },
}


def violations(arguments):
    r = MCPToolRegistry()
    r.register("t", UNION_SCHEMA, lambda **kw: kw)
    result = r.execute(call("t", **arguments))
    if result.status == "success":
        return []
    assert result.error.error_type == "ValidationError"
    return result.error.error_details["violations"]


def test_unmatched_any_of_and_one_of_are_reported_specifically():
    (r,) = violations({"n": "abc"})
    assert (r["rule"], r["pointer"]) == ("type", "/n")
    assert r["message"] == '"abc" is not of type "integer" or "null"'
    (r,) = violations({"n": -1})
    assert (r["rule"], r["schema_path"]) == ("minimum", "/properties/n/anyOf/0/minimum")
    (r,) = violations({"e": "utf8"})
    assert (r["rule"], r["message"]) == ("enum", '"utf8" is not one of "text", "base64"')
    assert [v["rule"] for v in violations({"u": 2.5})] == ["type", "minimum"]
    assert [v["rule"] for v in violations({"u": "ab"})] == ["minLength"]
    assert violations({"n": None, "e": "text", "u": 7}) == []


def test_schemas_outside_the_subset_work_and_bad_ones_are_refused():
    r = MCPToolRegistry()
    r.register(
        "t",
        {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a+$"}}, "if": {"required": ["s"]}, "then": {"required": ["n"]}},
        lambda **kw: "ok",
    )
    assert r.validate_call(call("t", s="aaa", n=1)) == (True, None)
    ok, why = r.validate_call(call("t", s="aaa"))
    assert not ok and "n" in why
    ok, why = r.validate_call(call("t", s="b", n=1))
    assert not ok and "/s" in why
    with pytest.raises(MCPRegistrationError):
        r.register("u", {"type": "object", "properties": {"s": {"type": "string", "pattern": "("}}}, lambda: 0)


def test_a_schema_nested_too_deeply_is_refused_cleanly():
    deep = {"type": "object"}
    for _ in range(200):
        deep = {"type": "object", "properties": {"x": deep}}
    r = MCPToolRegistry()
    with pytest.raises(MCPRegistrationError):
        r.register("t", deep, lambda: 0)
    cyclic = {"type": "object"}
    cyclic["properties"] = {"self": cyclic}
    with pytest.raises(MCPRegistrationError):
        r.register("t", cyclic, lambda: 0)
    assert r.list_tools() == []
