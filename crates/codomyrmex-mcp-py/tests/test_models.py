"""The Pydantic models against the fixtures the Rust suite checks (schema_compat.rs): the
same values write the same bytes, and what Rust rejects, Pydantic rejects."""

import json

import pytest
from pydantic import ValidationError

from codomyrmex_mcp import MCPErrorDetail, MCPMessage, MCPToolCall, MCPToolResult
from codomyrmex_mcp.schemas import mcp_schemas

from conftest import FIXTURES

VALID = {
    "error_detail_seed": MCPErrorDetail(
        error_type="ResourceNotFound",
        error_message="The requested resource could not be located.",
        error_details={"resource_id": "xyz-123"},
    ),
    "tool_call_seed": MCPToolCall(
        tool_name="file_utility.read_file_content",
        arguments={"file_path": "/path/to/file.txt", "max_chars": 1024},
    ),
    "result_success_seed": MCPToolResult(
        status="success", data={"file_content": "Hello World"}, explanation="Read file successfully."
    ),
    "result_failure_seed": MCPToolResult(
        status="failure",
        error=MCPErrorDetail(error_type="FileNotFound", error_message="The target file was not found."),
    ),
    "error_detail_text_details": MCPErrorDetail(
        error_type="ValidationError", error_message="max_chars must be positive", error_details="parameter: max_chars"
    ),
    "result_no_change_needed": MCPToolResult(status="no_change_needed", explanation="The file is already formatted."),
    "result_partial_failure": MCPToolResult(
        status="partial_failure",
        error=MCPErrorDetail(
            error_type="Timeout",
            error_message="2 of 5 files timed out",
            error_details={"failed": ["a.py", "b.py"], "timeout_s": 2.5},
        ),
        explanation="3 of 5 files were processed.",
    ),
    "tool_call_extras": MCPToolCall(
        tool_name="ai_code_editing.generate_code_snippet",
        arguments={"language": "python", "prompt": "fizzbuzz \u00e9\u4e2d"},
        call_id="call-0001",
        priority=2,
        trace={"parent": None, "span": "s-1"},
    ),
    "result_extras": MCPToolResult(
        status="success", data={"count": 3, "items": [1, 2.5, None, True, "x"]}, duration_ms=12, tool_name="file_utility.list"
    ),
    "message_minimal": MCPMessage(role="user"),
    "message_nested": MCPMessage(
        role="assistant",
        content="Reading two files.",
        tool_calls=[
            MCPToolCall(tool_name="file_utility.read_file_content", arguments={"file_path": "/a.txt"}, call_id="c1"),
            MCPToolCall(tool_name="file_utility.read_file_content", arguments={"file_path": "/b.txt", "max_chars": 10}),
        ],
        tool_results=[
            MCPToolResult(status="success", data={"file_content": "A"}, call_id="c1"),
            MCPToolResult(
                status="FAILED",
                error=MCPErrorDetail(error_type="FileNotFound", error_message="/b.txt", error_details="errno 2"),
            ),
            MCPToolResult(status="no_change_needed", explanation="cached"),
        ],
        metadata={"model": "m-1", "turn": 4},
        conversation_id="conv-9",
        timestamp=1700000000,
    ),
}

INVALID = {
    "invalid_result_failure_missing_error": (MCPToolResult, "error"),
    "invalid_result_failure_null_error": (MCPToolResult, "error"),
    "invalid_result_failure_with_data": (MCPToolResult, "data"),
    "invalid_result_status_missing": (MCPToolResult, "status"),
    "invalid_tool_call_arguments_array": (MCPToolCall, "arguments"),
    "invalid_tool_call_arguments_missing": (MCPToolCall, "arguments"),
    "invalid_error_detail_details_number": (MCPErrorDetail, "error_details"),
    "invalid_message_nested_result": (MCPMessage, "error"),
    "invalid_message_nested_call": (MCPMessage, "arguments"),
}


def fixture(name):
    return (FIXTURES / f"{name}.json").read_text(encoding="utf-8").rstrip("\n")


def test_every_fixture_is_checked():
    names = {p.stem for p in FIXTURES.glob("*.json")}
    assert names == set(VALID) | set(INVALID)


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_fixture_bytes_match(name):
    model = VALID[name]
    text = fixture(name)
    assert model.model_dump_json() == text
    parsed = type(model).model_validate_json(text)
    assert parsed == model
    assert parsed.model_dump_json() == text
    assert type(model).model_validate(json.loads(text)) == model


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_fixture_is_rejected_naming_the_field(name):
    cls, field = INVALID[name]
    with pytest.raises(ValidationError) as caught:
        cls.model_validate_json(fixture(name))
    assert field in str(caught.value)
    with pytest.raises(ValidationError):
        cls.model_validate(json.loads(fixture(name)))


def test_both_validators_exist_and_name_their_rule():
    assert hasattr(MCPToolResult, "check_error_if_failed")
    assert hasattr(MCPToolResult, "check_data_if_success")
    with pytest.raises(ValidationError, match="'error' field must be populated"):
        MCPToolResult(status="failure")
    with pytest.raises(ValidationError, match="'data' field should be null"):
        MCPToolResult(status="Failed", data={"x": 1}, error=MCPErrorDetail(error_type="E", error_message="m"))
    # A status that does not contain "fail" needs neither.
    assert MCPToolResult(status="no_change_needed").error is None
    assert MCPToolResult(status="success", error=MCPErrorDetail(error_type="W", error_message="warning")).error


def test_validation_errors_are_value_errors():
    with pytest.raises(ValueError):
        MCPToolCall(tool_name="t", arguments=[1])


def test_extra_allow_where_the_seed_says_so():
    assert MCPToolCall(tool_name="t", arguments={}, x=1).model_extra == {"x": 1}
    assert MCPToolResult(status="success", y=2).model_extra == {"y": 2}
    assert MCPMessage(role="user", z=3).model_extra == {"z": 3}
    # MCPErrorDetail has no extra="allow" in the seed: unknown fields are ignored, not kept.
    assert MCPErrorDetail(error_type="E", error_message="m", w=4).model_dump() == {
        "error_type": "E",
        "error_message": "m",
        "error_details": None,
    }


def test_model_dump_and_json_schema():
    call = MCPToolCall(tool_name="t", arguments={"a": 1})
    assert call.model_dump() == {"tool_name": "t", "arguments": {"a": 1}}
    schema = MCPToolResult.model_json_schema()
    assert schema["required"] == ["status"]
    assert set(schema["properties"]) == {"status", "data", "error", "explanation"}
    assert schema["additionalProperties"] is True
    assert "MCPErrorDetail" in schema["$defs"]
    assert MCPErrorDetail.model_json_schema()["required"] == ["error_type", "error_message"]


def test_the_schemas_module_mirrors_the_seeds_path():
    for name in ["MCPErrorDetail", "MCPToolCall", "MCPToolResult", "MCPMessage", "MCPToolRegistry", "MCPRegistrationError"]:
        assert hasattr(mcp_schemas, name)


def test_the_package_exports_exactly_the_seeds_names():
    import codomyrmex_mcp

    assert sorted(codomyrmex_mcp.__all__) == sorted(
        [
            "MCPErrorDetail",
            "MCPToolCall",
            "MCPToolResult",
            "MCPMessage",
            "MCPToolRegistry",
            "MCPRegistrationError",
            "MCPServer",
            "MCPServerConfig",
            "mcp_tool",
        ]
    )
    for name in codomyrmex_mcp.__all__:
        assert getattr(codomyrmex_mcp, name) is not None


def test_typing_markers_are_installed():
    import pathlib

    import codomyrmex_mcp

    package = pathlib.Path(codomyrmex_mcp.__file__).parent
    assert (package / "py.typed").exists()
    assert (package / "_core.pyi").exists()


def test_the_installed_wheel_is_abi3_for_cpython_3_9_and_newer():
    from importlib.metadata import distribution

    wheel = distribution("codomyrmex-mcp").read_text("WHEEL")
    assert wheel is not None and "Tag: cp39-abi3-" in wheel, wheel
    assert distribution("codomyrmex-mcp").metadata["Requires-Python"] == ">=3.9"


def test_results_written_by_rust_are_the_bytes_pydantic_writes():
    from codomyrmex_mcp import MCPToolRegistry

    def boom():
        raise ValueError("x")

    r = MCPToolRegistry()
    r.register("t", {"type": "object", "properties": {"a": {"type": "integer"}}}, lambda a=0: {"z": 1, "a": [1, 2.5, None], "m": "\u00e9"})
    r.register("b", {"type": "object"}, boom)
    calls = [
        MCPToolCall(tool_name="t", arguments={"a": 1}),  # success, nested data in insertion order
        MCPToolCall(tool_name="t", arguments={"a": "x"}),  # validation failure with details
        MCPToolCall(tool_name="b", arguments={}),  # a raising handler
        MCPToolCall(tool_name="nope", arguments={}),  # unknown tool
    ]
    for c in calls:
        rust_text = r._core.execute_json(c.model_dump_json())
        assert MCPToolResult.model_validate_json(rust_text).model_dump_json() == rust_text
