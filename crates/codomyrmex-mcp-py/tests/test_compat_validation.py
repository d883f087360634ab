"""Compatibility mode's `quality.validation`: tool arguments checked against the input
schema by the Rust core's JSON Schema validator (`_core.schema_violations`), after
Codomyrmex's light coercion of strings (issue #28, item 2)."""

import json

import pytest

from codomyrmex_mcp import _core
from codomyrmex_mcp.compat.quality.validation import (
    ValidationResult,
    _generate_schema_from_func,
    validate_tool_arguments,
)

SCHEMA = {
    "inputSchema": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 2},
            "count": {"type": "integer", "minimum": 0, "maximum": 10},
            "ratio": {"type": "number"},
            "on": {"type": "boolean"},
            "level": {"enum": ["low", "high"]},
            "email": {"type": "string", "pattern": "^[^@]+@[^@]+$"},
            "cfg": {"type": "object", "properties": {"t": {"type": "integer"}}, "required": ["t"]},
        },
        "required": ["name"],
    }
}


def check(args, schema=SCHEMA, **kw):
    return validate_tool_arguments("t", args, schema, **kw)


def test_valid_arguments_pass_with_a_copy():
    args = {"name": "ok", "count": 3, "extra": [1]}
    r = check(args)
    assert r == ValidationResult(valid=True, errors=[], coerced_args=args)
    assert r.coerced_args is not args


@pytest.mark.parametrize(
    "args, where, words",
    [
        ({}, "<root>", ["name", "required"]),
        ({"name": "x"}, "name", ["shorter", "2"]),
        ({"name": "ok", "count": 11}, "count", ["maximum", "10"]),
        ({"name": "ok", "count": -1}, "count", ["minimum", "0"]),
        ({"name": "ok", "level": "mid"}, "level", ["low", "high"]),
        ({"name": "ok", "email": "nope"}, "email", ["^[^@]+@[^@]+$"]),
        ({"name": "ok", "cfg": {}}, "cfg", ["t", "required"]),
        ({"name": "ok", "cfg": {"t": "x"}}, "cfg.t", ["integer"]),
    ],
)
def test_each_violation_is_path_colon_message(args, where, words):
    r = check(args, coerce=False)
    assert not r.valid and r.coerced_args == {}
    assert len(r.errors) == 1, r.errors
    path, _, message = r.errors[0].partition(": ")
    assert path == where
    for word in words:
        assert word in message


def test_errors_are_sorted_by_path():
    r = check({"count": 99, "cfg": {}, "level": 1}, coerce=False)
    paths = [e.split(": ", 1)[0] for e in r.errors]
    assert paths == sorted(paths, key=lambda p: [] if p == "<root>" else p.split("."))
    assert set(paths) == {"<root>", "cfg", "count", "level"}


@pytest.mark.parametrize(
    "given, expected",
    [
        ({"count": "7"}, 7), ({"ratio": "2.5"}, 2.5),
        ({"on": "TRUE"}, True), ({"on": "yes"}, True), ({"on": "1"}, True), ({"on": "On"}, True),
        ({"on": "false"}, False), ({"on": "no"}, False), ({"on": "0"}, False), ({"on": "off"}, False),
    ],
)
def test_strings_are_coerced_to_the_declared_type(given, expected):
    r = check({"name": "ok", **given})
    assert r.valid, r.errors
    (key,) = given
    assert r.coerced_args[key] == expected and type(r.coerced_args[key]) is type(expected)


def test_a_string_that_does_not_convert_is_left_for_the_validator():
    r = check({"name": "ok", "count": "seven", "on": "maybe"})
    assert not r.valid
    assert {e.split(": ", 1)[0] for e in r.errors} == {"count", "on"}
    assert not check({"name": "ok", "count": "7"}, coerce=False).valid


def test_schema_forms():
    bare = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    assert validate_tool_arguments("t", {"a": 1}, bare).valid
    assert not validate_tool_arguments("t", {}, bare).valid
    assert validate_tool_arguments("t", {"a": 1}, {"properties": {"a": {"type": "string"}}}).valid is False
    # Nothing to check against: everything passes, None is an empty object.
    assert validate_tool_arguments("t", {"x": object()}, {}).valid
    assert validate_tool_arguments("t", None, {"inputSchema": None}) == ValidationResult(True, [], {})
    assert validate_tool_arguments("t", None, {"type": "object"}).valid


def test_draft_7_is_the_default_dialect():
    # Draft 7's array form of `items` (2020-12 spells it prefixItems).
    schema = {"type": "object", "properties": {"p": {"type": "array", "items": [{"type": "integer"}]}}}
    assert validate_tool_arguments("t", {"p": [1, "x"]}, schema).valid
    assert not validate_tool_arguments("t", {"p": ["x"]}, schema).valid


@pytest.mark.parametrize(
    "args, schema, fragment",
    [
        ({"a": object()}, {"type": "object"}, "not JSON"),
        ({"a": float("nan")}, {"type": "object"}, "not JSON"),
        ({}, {"inputSchema": {"type": "object", "minProperties": "x"}}, "invalid JSON Schema"),
        ({}, {"inputSchema": ["not", "a", "schema"]}, "not an object"),
    ],
)
def test_bad_input_is_an_invalid_result_not_an_exception(args, schema, fragment):
    r = validate_tool_arguments("t", args, schema)
    assert not r.valid
    assert any(fragment in e for e in r.errors), r.errors


def test_the_binding_is_the_core_validator():
    out = json.loads(_core.schema_violations('{"type": "integer"}', '"x"'))
    assert len(out) == 1 and out[0]["pointer"] == "" and out[0]["rule"] == "type"
    assert _core.schema_violations('{"type": "integer"}', "3") == "[]"
    for bad in [("{", "1"), ("{}", "{")]:
        with pytest.raises(ValueError, match="not JSON"):
            _core.schema_violations(*bad)


def test_generated_schema_is_flat_and_typed_by_exact_annotation():
    def f(self, a: int, b: str = "", c: "int" = 1, d: list = None, e=None, *, g: bool):  # noqa: ARG001
        pass

    assert _generate_schema_from_func(f) == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "string"},
            "d": {"type": "array"}, "e": {"type": "string"}, "g": {"type": "boolean"},
        },
        "required": ["a", "g"],
    }
