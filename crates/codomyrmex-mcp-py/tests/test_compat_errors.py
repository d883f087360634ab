"""Compatibility mode's `errors`: the structured error envelope a Codomyrmex tool returns in
an `isError` result, and its round trips (issue #28, item 2)."""

import json

import pytest

from codomyrmex_mcp.compat.errors import (
    FieldError,
    MCPErrorCode,
    MCPToolError,
    execution_error,
    not_found_error,
    timeout_error,
    validation_error,
)


def test_codes_are_strings_of_their_own_names():
    assert len(MCPErrorCode) == 9
    for code in MCPErrorCode:
        assert code == code.name
        assert str(code) == code.name
        assert f"{code}" == code.name
    assert MCPErrorCode("TIMEOUT") is MCPErrorCode.TIMEOUT


def test_field_error_omits_a_missing_value_but_keeps_a_falsy_one():
    assert FieldError("n", "min 1").to_dict() == {"field": "n", "constraint": "min 1"}
    assert FieldError("n", "min 1", 0).to_dict() == {"field": "n", "constraint": "min 1", "value": 0}
    with pytest.raises(AttributeError):
        FieldError("n", "x").field = "m"  # frozen


def test_to_dict_leaves_out_empty_parts():
    err = MCPToolError(code=MCPErrorCode.INTERNAL, message="boom")
    assert err.to_dict() == {"code": "INTERNAL", "message": "boom", "correlation_id": err.correlation_id}
    assert len(err.correlation_id) == 12
    assert err.correlation_id != MCPToolError(code=MCPErrorCode.INTERNAL, message="boom").correlation_id


def test_full_envelope_round_trips_through_json_and_the_mcp_response():
    err = MCPToolError(
        code=MCPErrorCode.VALIDATION_ERROR,
        message="bad input",
        tool_name="t",
        module="m",
        field_errors=[FieldError("a", "required"), FieldError("b", "max 3", 9)],
        suggestion="send a",
        correlation_id="abc",
    )
    body = err.to_mcp_response()
    assert body["isError"] is True
    assert len(body["content"]) == 1 and body["content"][0]["type"] == "text"
    assert json.loads(body["content"][0]["text"]) == err.to_dict()
    back = MCPToolError.from_mcp_response(body)
    assert back == err
    assert MCPToolError.from_json(err.to_json()) == err


def test_from_mcp_response_of_a_success_or_empty_error_is_none():
    assert MCPToolError.from_mcp_response({"content": [{"type": "text", "text": "{}"}]}) is None
    assert MCPToolError.from_mcp_response({"isError": False}) is None
    assert MCPToolError.from_mcp_response({"isError": True, "content": []}) is None


@pytest.mark.parametrize("text", ["plain failure", "[1, 2]", '{"message": "no code"}', '{"code": "NOPE", "message": "x"}'])
def test_an_unstructured_error_becomes_internal_with_the_text(text):
    err = MCPToolError.from_mcp_response({"isError": True, "content": [{"type": "text", "text": text}]})
    assert err.code is MCPErrorCode.INTERNAL
    assert err.message == text


def test_from_dict_requires_code_and_message():
    with pytest.raises(KeyError):
        MCPToolError.from_dict({"code": "INTERNAL"})
    with pytest.raises(ValueError):
        MCPToolError.from_dict({"code": "NOT_A_CODE", "message": "m"})


def test_convenience_constructors():
    v = validation_error("t", "bad", [FieldError("x", "type")])
    assert (v.code, v.tool_name, v.message, len(v.field_errors)) == (MCPErrorCode.VALIDATION_ERROR, "t", "bad", 1)
    assert validation_error("t", "bad").field_errors == []
    n = not_found_error("ghost")
    assert n.code is MCPErrorCode.NOT_FOUND and n.message == "Tool not found: 'ghost'"
    t = timeout_error("slow", 2.5)
    assert t.code is MCPErrorCode.TIMEOUT and t.message == "Tool 'slow' timed out after 2.5s"
    e = execution_error("t", ZeroDivisionError("division by zero"), module="m", suggestion="s")
    assert e.code is MCPErrorCode.EXECUTION_ERROR
    assert e.message == "ZeroDivisionError: division by zero"
    assert (e.module, e.suggestion) == ("m", "s")
