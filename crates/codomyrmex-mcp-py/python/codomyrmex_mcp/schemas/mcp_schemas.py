"""The seed's data model and tool registry: ``codomyrmex.model_context_protocol.schemas.mcp_schemas``.

The models are real Pydantic v2 models (pure Python), so ``model_dump_json``,
``model_validate_json``, ``model_json_schema``, equality and ``ValidationError`` behave as
Pydantic users expect. Their JSON is byte-for-byte what the Rust types in
``codomyrmex_mcp::schema`` write: both test suites check the same fixtures
(``crates/codomyrmex-mcp/tests/fixtures/pydantic``).

``MCPToolRegistry`` is the Rust ``McpToolRegistry`` (defined in :mod:`codomyrmex_mcp._registry`,
which a server imports without Pydantic; re-exported here): names, schemas, conflicts and
argument validation happen in Rust; handlers are Python callables, run only after their
arguments passed the schema. It is not an MCP server: ``MCPServer`` serves a registry.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._registry import MCPRegistrationError, MCPToolRegistry

__all__ = [
    "MCPErrorDetail",
    "MCPToolCall",
    "MCPToolResult",
    "MCPMessage",
    "MCPToolRegistry",
    "MCPRegistrationError",
]

def _indicates_failure(status: str) -> bool:
    # The same rule as the Rust `status_indicates_failure`: "fail" anywhere, any case.
    return "fail" in status.lower()


class MCPErrorDetail(BaseModel):
    """Standard structure for detailed error information in an ``MCPToolResult``."""

    error_type: str = Field(
        ..., description="A unique code or type for the error (e.g. ValidationError, FileNotFoundError)."
    )
    error_message: str = Field(..., description="A descriptive message explaining the error.")
    error_details: Optional[Union[Dict[str, Any], str]] = Field(
        default=None, description="Optional structured details, or a string with more information about the error."
    )


class MCPToolCall(BaseModel):
    """A call to an MCP tool: its invocation name and its arguments."""

    model_config = ConfigDict(extra="allow")

    tool_name: str = Field(..., description="The unique invocation name of the tool.")
    arguments: Dict[str, Any] = Field(
        ..., description="The arguments for the tool; their schema is the tool's input schema."
    )


class MCPToolResult(BaseModel):
    """The result of an MCP tool execution.

    A status that indicates failure (it contains ``"fail"``, in any case) requires ``error``
    and forbids ``data``.
    """

    model_config = ConfigDict(extra="allow")

    status: str = Field(
        ..., description="The outcome of the tool execution (e.g. success, failure, no_change_needed)."
    )
    data: Optional[Dict[str, Any]] = Field(
        default=None, description="The output data of the tool if successful. Its schema is tool-specific."
    )
    error: Optional[MCPErrorDetail] = Field(default=None, description="Details of the error if execution failed.")
    explanation: Optional[str] = Field(default=None, description="An optional human-readable explanation of the result.")

    # Model validators (not field validators): Pydantic runs field validators only on fields
    # that were given, and a failure must be refused whether `error` was omitted or null.
    # The data rule first: a failure that has data and no error is named for its data, as
    # Codomyrmex's field validators name it (the error one only runs on a given `error`).
    @model_validator(mode="after")
    def check_data_if_success(self) -> "MCPToolResult":
        """``data`` must be None or omitted if ``status`` indicates failure."""
        if _indicates_failure(self.status) and self.data is not None:
            raise ValueError("'data' field should be null or omitted if status indicates failure.")
        return self

    @model_validator(mode="after")
    def check_error_if_failed(self) -> "MCPToolResult":
        """``error`` must be populated if ``status`` indicates failure."""
        if _indicates_failure(self.status) and self.error is None:
            raise ValueError("'error' field must be populated if status indicates failure.")
        return self


class MCPMessage(BaseModel):
    """A message in an MCP conversation."""

    model_config = ConfigDict(extra="allow")

    role: str = Field(..., description="Role of the message sender (e.g. 'user', 'assistant', 'system', 'tool').")
    content: Optional[str] = Field(default=None, description="Text content of the message.")
    tool_calls: Optional[List[MCPToolCall]] = Field(default=None, description="Tool calls made in this message.")
    tool_results: Optional[List[MCPToolResult]] = Field(default=None, description="Results from tool executions.")
    metadata: Optional[Dict[str, Any]] = Field(default=None, description="Additional metadata for the message.")
