"""Compatibility mode's `validators`: Codomyrmex's light checks of schemas, tool calls and
results, and JSON-RPC messages (issue #28, item 2)."""

from codomyrmex_mcp.compat.validators import (
    MessageValidator,
    SchemaValidator,
    SpecificationValidator,
    ToolCallValidator,
    ValidationResult,
    validate_message,
    validate_tool_call,
)

SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
    "required": ["n"],
}


def test_schema_validator():
    assert SchemaValidator(SCHEMA).validate({"n": 1, "tags": ["a"]})
    r = SchemaValidator(SCHEMA).validate({"n": True, "tags": ["a", 2]})
    assert not r and r.errors == ["n: Expected integer, got bool", "tags: [1]: Expected string, got int"]
    assert SchemaValidator(SCHEMA).validate({}).errors == ["Missing required field: n"]
    assert SchemaValidator(SCHEMA).validate([]).errors == ["Expected object, got list"]
    assert SchemaValidator({"type": "number"}).validate(1.5)
    assert not SchemaValidator({"type": "number"}).validate(False)


def test_deep_data_is_reported_not_walked():
    schema = {"type": "array"}
    schema["items"] = schema  # a cycle
    data = []
    for _ in range(200):
        data = [data]
    r = SchemaValidator(schema).validate(data)
    assert not r.valid and "deeper than" in r.errors[0]


def test_tool_calls_and_results():
    assert validate_tool_call("t", {"n": 1}, {"t": SCHEMA}).valid
    assert validate_tool_call("u", {}, {"t": SCHEMA}).errors == ["Unknown tool: u"]
    v = ToolCallValidator({})
    assert v.validate_result({}).errors == ["Missing required field: status"]
    r = v.validate_result({"status": "failure", "data": 1})
    assert r.errors == ["Error field required on failure"] and r.warnings == ["Data should be null on failure"]
    assert v.validate_result({"status": "weird"}).warnings == ["Non-standard status: weird"]


def test_messages():
    assert validate_message({"jsonrpc": "2.0", "method": "m", "id": 1, "params": {}}).valid
    r = MessageValidator().validate_request({"jsonrpc": "1.0", "method": 3, "id": [], "params": 1})
    assert r.errors == [
        "Invalid jsonrpc version: 1.0", "method must be a string",
        "id must be string, number, or null", "params must be object or array",
    ]
    assert validate_message({"jsonrpc": "2.0", "id": 1, "result": {}}, "response").valid
    r = validate_message({"jsonrpc": "2.0", "result": 1, "error": {"code": "x"}}, "response")
    assert r.errors == [
        "Missing required field: id", "Response cannot have both result and error",
        "error.code must be an integer", "error.message is required",
    ]


def test_specification_is_always_valid_with_warnings():
    r = SpecificationValidator().validate_spec_file("nothing")
    assert isinstance(r, ValidationResult) and r.valid and len(r.warnings) == 7
    full = "## t\ndescription invocation name input schema output schema security\n```json\n{}\n```"
    assert SpecificationValidator().validate_spec_file(full).warnings == []
