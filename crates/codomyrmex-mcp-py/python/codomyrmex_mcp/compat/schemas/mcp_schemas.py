"""``codomyrmex.model_context_protocol.schemas.mcp_schemas`` in compatibility mode.

The Pydantic models are plain :mod:`codomyrmex_mcp`'s (the same classes, so ``isinstance``
holds across both imports). ``MCPToolRegistry`` is plain's Rust-backed registry with
Codomyrmex's looser ``register``:

- ``schema`` is stored as given and ``get(name)["schema"]`` returns it: an argument schema
  (``{"type": "object", ...}``), a tool object (``{"name", "description", "inputSchema"}``,
  what ``MCPServer.register_tool`` passes), or anything else (``{"name": "t1"}``, ``{}``);
- what is listed over MCP is always a valid object schema: a tool object's ``inputSchema``
  (its ``description``, ``title`` and ``outputSchema`` too), an argument schema with
  ``"type": "object"`` added when it has no type, and ``{"type": "object"}`` (any
  arguments) for whatever is not an object schema the Rust registry accepts.

Still as the seed has it: the names are listed sorted, a name registered again with a
different definition is refused (``MCPRegistrationError``), and arguments are validated
against the listed schema before the handler runs.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Optional, Set, Tuple

from ... import _core
from ..._registry import MCPRegistrationError
from ..._registry import MCPToolRegistry as _PlainRegistry
from ...schemas.mcp_schemas import MCPErrorDetail, MCPMessage, MCPToolCall, MCPToolResult
from ..tool_answers import ShapedHandler, invoke

__all__ = [
    "MCPErrorDetail",
    "MCPToolCall",
    "MCPToolResult",
    "MCPMessage",
    "MCPToolRegistry",
    "MCPRegistrationError",
]

# Keys of a tool object (MCP `Tool`) that are not JSON Schema keywords: a dict made only of
# these (`{"name": "t1"}`) is a tool object without an input schema.
_TOOL_KEYS = frozenset({"name", "description", "title", "inputSchema", "outputSchema", "annotations", "_meta", "icons"})

_ANY_ARGUMENTS: Dict[str, Any] = {"type": "object"}


def listed_definition(schema: Any) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """What ``schema`` (as Codomyrmex passes it) lists over MCP: ``(input_schema, extra)``
    where ``extra`` holds ``description``, ``title`` and ``output_schema`` when a tool object
    gives them. The input schema is an object schema, or ``{"type": "object"}``."""
    if not isinstance(schema, dict):
        return dict(_ANY_ARGUMENTS), {}
    extra: Dict[str, Any] = {}
    if "inputSchema" in schema or not (schema.keys() - _TOOL_KEYS):
        for key, name in (("description", "description"), ("title", "title"), ("outputSchema", "output_schema")):
            value = schema.get(key)
            if isinstance(value, dict) if key == "outputSchema" else isinstance(value, str) and (value or key == "description"):
                extra[name] = value
        arguments = schema.get("inputSchema")
    else:
        arguments = schema
    if not isinstance(arguments, dict):
        return dict(_ANY_ARGUMENTS), extra
    if "type" not in arguments:
        arguments = {"type": "object", **arguments}
    if arguments.get("type") != "object":
        return dict(_ANY_ARGUMENTS), extra
    return arguments, extra


class MCPToolRegistry(_PlainRegistry):
    """Tools by name, backed by the Rust registry, accepting Codomyrmex's schemas (see the
    module docs)."""

    # Where the original has it.
    __module__ = "codomyrmex_mcp.compat.schemas.mcp_schemas"

    def __init__(self) -> None:
        super().__init__()
        self._core = _core.ToolRegistry(invoke)
        # The tools listed as "any arguments" because their schema was refused.
        self._as_any: Set[str] = set()

    def register(
        self,
        tool_name: str,
        schema: Any,
        handler: Optional[Callable[..., Any]] = None,
        **options: Any,
    ) -> None:
        """Registers ``handler`` under ``tool_name``; ``schema`` is stored as given (see the
        module docs for what is listed). ``options`` are plain ``register``'s keywords
        (``description``, ``title``, ``output_schema``, ``meta``, ``timeout``, ...), over
        what a tool object gives.

        Raises ``MCPRegistrationError`` for an invalid name, or a name taken by a different
        definition."""
        arguments, extra = listed_definition(schema)
        extra.update({k: v for k, v in options.items() if v is not None})
        existed = tool_name in self
        # Registered shaped: its tools/call answers are the original's (see .tool_answers).
        shaped = ShapedHandler(handler, tool_name, structured=extra.get("output_schema") is not None)
        try:
            super().register(tool_name, arguments, shaped, **extra)
            self._as_any.discard(tool_name)
        except MCPRegistrationError:
            # A schema the Rust registry refuses (a broken `$ref`, a non-JSON default) is
            # still stored; it lists as "any arguments". A name taken by another definition
            # stays refused.
            if arguments == _ANY_ARGUMENTS or (existed and tool_name not in self._as_any):
                raise
            super().register(tool_name, dict(_ANY_ARGUMENTS), shaped, **extra)
            self._as_any.add(tool_name)
        # Stored as given, as the original stores it.
        self._entries[tool_name] = {"name": tool_name, "schema": schema, "handler": handler}

    def unregister(self, tool_name: str) -> bool:
        """Removes a tool; returns whether it was registered."""
        self._as_any.discard(tool_name)
        return super().unregister(tool_name)

    def output_schema(self, tool_name: str) -> Optional[Dict[str, Any]]:
        """The output schema the tool is listed with, or None."""
        text = self._core.definition_json(tool_name)
        if text is None:
            return None
        value = json.loads(text).get("outputSchema")
        return value if isinstance(value, dict) else None
