"""``MCPToolRegistry`` and ``MCPRegistrationError``: the Rust ``McpToolRegistry`` with Python
handlers. Names, schemas, conflicts and argument validation happen in Rust; handlers are
Python callables, run only after their arguments passed the schema. It is not an MCP
server: ``MCPServer`` serves a registry.

Importing it does not import Pydantic: the models (``MCPToolCall``, ``MCPToolResult``,
``MCPErrorDetail``) are imported by the methods that take or return them (``validate_call``,
``execute``), so a server that only registers and serves tools starts without Pydantic.
Public through :mod:`codomyrmex_mcp` and :mod:`codomyrmex_mcp.schemas.mcp_schemas`.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Union

from . import _core
from ._invoke import blocking_call as _blocking_call
from ._invoke import invoke as _invoke

if TYPE_CHECKING:
    from .schemas.mcp_schemas import MCPToolCall, MCPToolResult

__all__ = ["MCPToolRegistry", "MCPRegistrationError"]

MCPRegistrationError = _core.MCPRegistrationError
"""A registration was refused: an invalid name or schema, or a name taken by a different
definition. A ``ValueError``; the registry is unchanged when it is raised."""


def _as_call(tool_call: Union[MCPToolCall, Dict[str, Any]]) -> MCPToolCall:
    from .schemas.mcp_schemas import MCPToolCall

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

    # Where the seed has it.
    __module__ = "codomyrmex_mcp.schemas.mcp_schemas"

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
        from .schemas.mcp_schemas import MCPErrorDetail

        detail = MCPErrorDetail.model_validate_json(error)
        violations = detail.error_details.get("violations") if isinstance(detail.error_details, dict) else None
        if violations:
            return False, f"{detail.error_message}: " + "; ".join(_violation_text(v) for v in violations)
        return False, detail.error_message

    def execute(self, tool_call: Union[MCPToolCall, Dict[str, Any]]) -> MCPToolResult:
        """Runs the call: an unknown tool, invalid arguments or a raising handler become a
        failure result with an ``MCPErrorDetail``, never an exception."""
        from .schemas.mcp_schemas import MCPToolResult

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
