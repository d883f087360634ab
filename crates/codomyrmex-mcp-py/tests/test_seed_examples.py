"""The seed's (API_SPECIFICATION.txt) example initialisations, verbatim apart from the import
line (`from codomyrmex.model_context_protocol import ...`)."""

from codomyrmex_mcp import MCPToolCall, MCPToolResult, MCPErrorDetail


def test_error_detail_example():
    error_info = MCPErrorDetail(
    error_type="ResourceNotFound",
    error_message="The requested resource could not be located.",
    error_details={"resource_id": "xyz-123"}
    )
    assert error_info.error_details == {"resource_id": "xyz-123"}


def test_tool_call_example():
    tool_call_msg = MCPToolCall(
    tool_name="file_utility.read_file_content",
    arguments={
    "file_path": "/path/to/file.txt",
    "max_chars": 1024
    }
    )
    assert tool_call_msg.arguments["max_chars"] == 1024


def test_success_result_example():
    success_result = MCPToolResult(
    status="success",
    data={"file_content": "Hello World"},
    explanation="Read file successfully."
    )
    assert success_result.data == {"file_content": "Hello World"}


def test_failure_result_example():
    failure_result = MCPToolResult(
    status="failure",
    error=MCPErrorDetail(
    error_type="FileNotFound",
    error_message="The target file was not found."
    )
    )
    assert failure_result.error.error_type == "FileNotFound"
    assert failure_result.data is None


def test_schemas_submodule_import():
    from codomyrmex_mcp.schemas.mcp_schemas import MCPToolCall, MCPToolResult, MCPErrorDetail

    assert MCPToolCall and MCPToolResult and MCPErrorDetail
