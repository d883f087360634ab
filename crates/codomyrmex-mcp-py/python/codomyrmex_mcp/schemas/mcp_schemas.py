"""The seed's data model and tool registry: ``codomyrmex.model_context_protocol.schemas.mcp_schemas``.

The models are real Pydantic v2 models (pure Python), so ``model_dump_json``,
``model_validate_json``, ``model_json_schema``, equality and ``ValidationError`` behave as
Pydantic users expect. Their JSON is byte-for-byte what the Rust types in
``codomyrmex_mcp::schema`` write: both test suites check the same fixtures
(``crates/codomyrmex-mcp/tests/fixtures/pydantic``).

``MCPToolRegistry`` is the Rust ``McpToolRegistry``: names, schemas, conflicts and argument
validation happen in Rust; handlers are Python callables, run only after their arguments
passed the schema. It is not an MCP server: ``MCPServer`` serves a registry.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .. import _core
from .._invoke import blocking_call as _blocking_call
from .._invoke import invoke as _invoke

__all__ = [
    "MCPErrorDetail",
    "MCPToolCall",
    "MCPToolResult",
    "MCPMessage",
    "MCPToolRegistry",
    "MCPRegistrationError",
]

MCPRegistrationError = _core.MCPRegistrationError
"""A registration was refused: an invalid name or schema, or a name taken by a different
definition. A ``ValueError``; the registry is unchanged when it is raised."""


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
    @model_validator(mode="after")
    def check_error_if_failed(self) -> "MCPToolResult":
        """``error`` must be populated if ``status`` indicates failure."""
        if _indicates_failure(self.status) and self.error is None:
            raise ValueError("'error' field must be populated if status indicates failure.")
        return self

    @model_validator(mode="after")
    def check_data_if_success(self) -> "MCPToolResult":
        """``data`` must be None or omitted if ``status`` indicates failure."""
        if _indicates_failure(self.status) and self.data is not None:
            raise ValueError("'data' field should be null or omitted if status indicates failure.")
        return self


class MCPMessage(BaseModel):
    """A message in an MCP conversation."""

    model_config = ConfigDict(extra="allow")

    role: str = Field(..., description="Role of the message sender (e.g. 'user', 'assistant', 'system', 'tool').")
    content: Optional[str] = Field(default=None, description="Text content of the message.")
    tool_calls: Optional[List[MCPToolCall]] = Field(default=None, description="Tool calls made in this message.")
    tool_results: Optional[List[MCPToolResult]] = Field(default=None, description="Results from tool executions.")
    metadata: Optional[Dict[str, Any]] = Field(default=None, description="Additional metadata for the message.")


def _as_call(tool_call: Union[MCPToolCall, Dict[str, Any]]) -> MCPToolCall:
    if isinstance(tool_call, MCPToolCall):
        return tool_call
    return MCPToolCall.model_validate(tool_call)


class MCPToolRegistry:
    """Tools by invocation name, backed by the Rust ``McpToolRegistry``.

    - ``list_tools()`` is sorted;
    - registering a name again with an identical definition is a no-op (the first handler
      stays); a different definition raises ``MCPRegistrationError`` and changes nothing;
    - ``execute`` validates the arguments against the schema before the handler runs, and
      wraps a plain return value as ``data={"result": value}``.
    """

    def __init__(self) -> None:
        self._core = _core.ToolRegistry(_invoke)
        self._entries: Dict[str, Dict[str, Any]] = {}
        self._lock = threading.Lock()

    def register(
        self,
        tool_name: str,
        schema: Dict[str, Any],
        handler: Optional[Callable[..., Any]] = None,
        *,
        description: Optional[str] = None,
        title: Optional[str] = None,
        output_schema: Optional[Dict[str, Any]] = None,
        meta: Optional[Dict[str, Any]] = None,
        timeout: Optional[float] = None,
        deprecated_in: Optional[str] = None,
    ) -> None:
        """Registers ``handler`` under ``tool_name`` with ``schema``, the JSON Schema of its
        arguments (an object schema). The handler is called with the arguments as keyword
        arguments; it may be sync or async. Without a handler, calls fail with ``NoHandler``.

        Raises ``MCPRegistrationError`` for an invalid name or schema, or a conflict."""
        definition: Dict[str, Any] = {"inputSchema": schema}
        if description is not None:
            definition["description"] = description
        if title is not None:
            definition["title"] = title
        if output_schema is not None:
            definition["outputSchema"] = output_schema
        if meta:
            definition["_meta"] = meta
        try:
            definition_json = json.dumps(definition, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as e:
            raise MCPRegistrationError(f"tool {tool_name!r}: the definition is not JSON: {e}") from None
        with self._lock:
            known = tool_name in self._entries
            self._core.register(tool_name, definition_json, handler, timeout, deprecated_in)
            if not known:
                self._entries[tool_name] = {"name": tool_name, "schema": schema, "handler": handler}

    def unregister(self, tool_name: str) -> bool:
        """Removes a tool; returns whether it was registered."""
        with self._lock:
            self._entries.pop(tool_name, None)
            return self._core.unregister(tool_name)

    def get(self, tool_name: str) -> Optional[Dict[str, Any]]:
        """The tool's ``{"name", "schema", "handler"}``, or None."""
        entry = self._entries.get(tool_name)
        return dict(entry) if entry is not None else None

    get_tool = get

    def definition(self, tool_name: str) -> Optional[Dict[str, Any]]:
        """The tool as an MCP ``Tool`` object (``name``, ``inputSchema``, ...), or None."""
        text = self._core.definition_json(tool_name)
        return json.loads(text) if text is not None else None

    def list_tools(self) -> List[str]:
        """The registered names, sorted."""
        return self._core.list_tools()

    def validate_call(self, tool_call: Union[MCPToolCall, Dict[str, Any]]) -> Tuple[bool, Optional[str]]:
        """Whether the call names a registered tool and its arguments satisfy the tool's
        schema, without running it: ``(True, None)`` or ``(False, why)``."""
        call = _as_call(tool_call)
        error = self._core.validate_json(call.model_dump_json())
        if error is None:
            return True, None
        detail = MCPErrorDetail.model_validate_json(error)
        violations = detail.error_details.get("violations") if isinstance(detail.error_details, dict) else None
        if violations:
            return False, f"{detail.error_message}: " + "; ".join(_violation_text(v) for v in violations)
        return False, detail.error_message

    def execute(self, tool_call: Union[MCPToolCall, Dict[str, Any]]) -> MCPToolResult:
        """Runs the call: an unknown tool, invalid arguments or a raising handler become a
        failure result with an ``MCPErrorDetail``, never an exception."""
        call = _as_call(tool_call)
        with _blocking_call():
            text = self._core.execute_json(call.model_dump_json())
        return MCPToolResult.model_validate_json(text)

    def __len__(self) -> int:
        return len(self._core.list_tools())

    def __contains__(self, tool_name: object) -> bool:
        return isinstance(tool_name, str) and tool_name in self._entries


def _violation_text(violation: Any) -> str:
    if isinstance(violation, dict):
        path = violation.get("pointer") or ""
        message = violation.get("message") or json.dumps(violation)
        return f"{path}: {message}" if path else str(message)
    return str(violation)
