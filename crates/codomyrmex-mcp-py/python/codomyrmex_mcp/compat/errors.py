"""``codomyrmex.model_context_protocol.errors`` in compatibility mode.

The structured error envelope Codomyrmex's tools and clients exchange: an
:class:`MCPErrorCode`, a message, the tool and module it came from, the fields that failed
validation and a correlation id. It travels as the JSON text of a tool result's first
content block with ``isError: true``, which is what :meth:`MCPToolError.to_mcp_response`
builds and :meth:`MCPToolError.from_mcp_response` reads back.
"""

from __future__ import annotations

import enum
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = [
    "FieldError",
    "MCPErrorCode",
    "MCPToolError",
    "execution_error",
    "not_found_error",
    "timeout_error",
    "validation_error",
]


class MCPErrorCode(str, enum.Enum):
    """The error codes of a tool invocation; each member is its own name as a string."""

    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    TIMEOUT = "TIMEOUT"
    NOT_FOUND = "NOT_FOUND"
    RATE_LIMITED = "RATE_LIMITED"
    CIRCUIT_OPEN = "CIRCUIT_OPEN"
    DEPENDENCY_MISSING = "DEPENDENCY_MISSING"
    ACCESS_DENIED = "ACCESS_DENIED"
    INTERNAL = "INTERNAL"

    # A string enum formats as its value (as ``enum.StrEnum`` does on 3.11+).
    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


def _new_correlation_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True)
class FieldError:
    """One field that failed validation: its name, the constraint and (optionally) the value."""

    field: str
    constraint: str
    value: Any = None

    def to_dict(self) -> Dict[str, Any]:
        """The field and constraint, and the value when there is one."""
        out: Dict[str, Any] = {"field": self.field, "constraint": self.constraint}
        if self.value is not None:
            out["value"] = self.value
        return out


@dataclass
class MCPToolError:
    """A tool invocation's failure, for programs to act on and for the wire.

    ``code`` may be given as an :class:`MCPErrorCode` or its string value.
    """

    code: MCPErrorCode
    message: str
    tool_name: str = ""
    module: str = ""
    field_errors: List[FieldError] = field(default_factory=list)
    suggestion: Optional[str] = None
    correlation_id: str = field(default_factory=_new_correlation_id)

    def to_dict(self) -> Dict[str, Any]:
        """The envelope as a JSON-ready dict; empty optional parts are left out."""
        code = self.code.value if isinstance(self.code, MCPErrorCode) else str(self.code)
        out: Dict[str, Any] = {
            "code": code,
            "message": self.message,
            "correlation_id": self.correlation_id,
        }
        if self.tool_name:
            out["tool_name"] = self.tool_name
        if self.module:
            out["module"] = self.module
        if self.field_errors:
            out["field_errors"] = [e.to_dict() for e in self.field_errors]
        if self.suggestion:
            out["suggestion"] = self.suggestion
        return out

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON text."""
        return json.dumps(self.to_dict())

    def to_mcp_response(self) -> Dict[str, Any]:
        """A ``tools/call`` result carrying this error: one text block, ``isError: true``."""
        return {"content": [{"type": "text", "text": self.to_json()}], "isError": True}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "MCPToolError":
        """The envelope from its dict form; ``code`` and ``message`` are required.

        Raises ``KeyError`` for a missing key and ``ValueError`` for an unknown code.
        """
        fields = [FieldError(**entry) for entry in data.get("field_errors", [])]
        correlation = data.get("correlation_id")
        return cls(
            code=MCPErrorCode(data["code"]),
            message=data["message"],
            tool_name=data.get("tool_name", ""),
            module=data.get("module", ""),
            field_errors=fields,
            suggestion=data.get("suggestion"),
            correlation_id=correlation if correlation is not None else _new_correlation_id(),
        )

    @classmethod
    def from_json(cls, text: str) -> "MCPToolError":
        """The envelope from its JSON text (see :meth:`from_dict` for the errors)."""
        return cls.from_dict(json.loads(text))

    @classmethod
    def from_mcp_response(cls, response: Dict[str, Any]) -> Optional["MCPToolError"]:
        """The envelope in a ``tools/call`` result, or ``None`` if it is not an error.

        An error result whose first block is not an envelope becomes an ``INTERNAL`` error
        whose message is that block's text.
        """
        if not response.get("isError"):
            return None
        content = response.get("content") or []
        if not content:
            return None
        first = content[0]
        text = first.get("text", "") if isinstance(first, dict) else ""
        try:
            return cls.from_json(text)
        except (ValueError, KeyError, TypeError, AttributeError):
            # json.JSONDecodeError is a ValueError; JSON that is not an object is one of the others.
            return cls(code=MCPErrorCode.INTERNAL, message=text)


def validation_error(
    tool_name: str, message: str, field_errors: Optional[List[FieldError]] = None
) -> MCPToolError:
    """A ``VALIDATION_ERROR`` for ``tool_name``."""
    return MCPToolError(
        code=MCPErrorCode.VALIDATION_ERROR,
        message=message,
        tool_name=tool_name,
        field_errors=list(field_errors or []),
    )


def not_found_error(tool_name: str) -> MCPToolError:
    """A ``NOT_FOUND`` error for a tool that is not registered."""
    return MCPToolError(
        code=MCPErrorCode.NOT_FOUND,
        message=f"Tool not found: {tool_name!r}",
        tool_name=tool_name,
    )


def timeout_error(tool_name: str, seconds: float) -> MCPToolError:
    """A ``TIMEOUT`` error: the tool ran longer than ``seconds``."""
    return MCPToolError(
        code=MCPErrorCode.TIMEOUT,
        message=f"Tool {tool_name!r} timed out after {seconds}s",
        tool_name=tool_name,
    )


def execution_error(
    tool_name: str,
    exception: BaseException,
    *,
    module: str = "",
    suggestion: Optional[str] = None,
) -> MCPToolError:
    """An ``EXECUTION_ERROR`` from an exception the tool raised: ``Type: message``."""
    return MCPToolError(
        code=MCPErrorCode.EXECUTION_ERROR,
        message=f"{type(exception).__name__}: {exception}",
        tool_name=tool_name,
        module=module,
        suggestion=suggestion,
    )
