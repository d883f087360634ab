"""``codomyrmex.model_context_protocol.validators`` in compatibility mode.

Codomyrmex's light checks of messages and tool data, with its messages: a
:class:`SchemaValidator` for the ``type``/``properties``/``required``/``items`` core of a
schema, :class:`ToolCallValidator` for calls and ``{status, data, error}`` results,
:class:`MessageValidator` for JSON-RPC requests and responses, and
:class:`SpecificationValidator` for ``MCP_TOOL_SPECIFICATION.md`` files.

Full JSON Schema validation of tool arguments is :mod:`..quality.validation`, on the Rust
core's validator; the registry runs that same validator on every ``tools/call``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List

__all__ = [
    "MessageValidator",
    "SchemaValidator",
    "SpecificationValidator",
    "ToolCallValidator",
    "ValidationResult",
    "validate_message",
    "validate_tool_call",
]

#: The deepest nesting :class:`SchemaValidator` follows; deeper data is reported, not walked.
_MAX_DEPTH = 64


@dataclass
class ValidationResult:
    """Whether the check passed (also the object's truth value), errors and warnings."""

    valid: bool
    errors: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.valid


def _result(errors: List[str], warnings: List[str]) -> ValidationResult:
    return ValidationResult(valid=not errors, errors=errors, warnings=warnings)


class SchemaValidator:
    """Checks data against a schema's ``type``, and for objects ``required`` and
    ``properties``, for arrays ``items``; other keywords are not checked."""

    def __init__(self, schema: Dict[str, Any]) -> None:
        self.schema = schema

    def validate(self, data: Any) -> ValidationResult:
        """The errors, e.g. ``Expected string, got int`` or ``name: Missing required field``."""
        return _result(self._errors(data, 0), [])

    def _errors(self, data: Any, depth: int) -> List[str]:
        if depth > _MAX_DEPTH:
            return [f"Nested deeper than {_MAX_DEPTH} levels"]
        kind = self.schema.get("type") if isinstance(self.schema, dict) else None
        got = type(data).__name__
        if kind == "object":
            if not isinstance(data, dict):
                return [f"Expected object, got {got}"]
            return self._object_errors(data, depth)
        if kind == "array":
            if not isinstance(data, list):
                return [f"Expected array, got {got}"]
            return self._array_errors(data, depth)
        if kind == "string" and not isinstance(data, str):
            return [f"Expected string, got {got}"]
        if kind == "integer" and (not isinstance(data, int) or isinstance(data, bool)):
            return [f"Expected integer, got {got}"]
        if kind == "number" and (not isinstance(data, (int, float)) or isinstance(data, bool)):
            return [f"Expected number, got {got}"]
        if kind == "boolean" and not isinstance(data, bool):
            return [f"Expected boolean, got {got}"]
        return []

    def _object_errors(self, data: Dict[str, Any], depth: int) -> List[str]:
        errors = [f"Missing required field: {r}" for r in self.schema.get("required", []) if r not in data]
        properties = self.schema.get("properties", {})
        for key, value in data.items():
            if key in properties:
                inner = SchemaValidator(properties[key])._errors(value, depth + 1)
                errors.extend(f"{key}: {e}" for e in inner)
        return errors

    def _array_errors(self, data: List[Any], depth: int) -> List[str]:
        items = self.schema.get("items")
        if not items:
            return []
        inner = SchemaValidator(items)
        errors: List[str] = []
        for index, item in enumerate(data):
            errors.extend(f"[{index}]: {e}" for e in inner._errors(item, depth + 1))
        return errors


class ToolCallValidator:
    """Checks calls against a map of tool name to input schema."""

    def __init__(self, tool_schemas: Dict[str, Dict[str, Any]]) -> None:
        self.tool_schemas = tool_schemas

    def validate_call(self, tool_name: str, arguments: Dict[str, Any]) -> ValidationResult:
        """``Unknown tool: name``, or the arguments' :class:`SchemaValidator` errors."""
        if tool_name not in self.tool_schemas:
            return ValidationResult(valid=False, errors=[f"Unknown tool: {tool_name}"])
        return SchemaValidator(self.tool_schemas[tool_name]).validate(arguments)

    def validate_result(self, result: Dict[str, Any]) -> ValidationResult:
        """A ``{status, data, error}`` result: ``status`` is required; a failing status
        needs an ``error`` and should have no ``data``; an unusual status is a warning."""
        errors: List[str] = []
        warnings: List[str] = []
        if "status" not in result:
            errors.append("Missing required field: status")
            return _result(errors, warnings)
        status = result["status"]
        if status not in ("success", "failure", "partial"):
            warnings.append(f"Non-standard status: {status}")
        if "fail" in str(status).lower():
            if result.get("error") is None:
                errors.append("Error field required on failure")
            if result.get("data") is not None:
                warnings.append("Data should be null on failure")
        return _result(errors, warnings)


class MessageValidator:
    """Checks the JSON-RPC 2.0 envelope of requests and responses."""

    JSONRPC_VERSION = "2.0"

    def validate_request(self, message: Dict[str, Any]) -> ValidationResult:
        """``jsonrpc``, a string ``method``, an id of the right type, params object/array."""
        errors: List[str] = []
        if message.get("jsonrpc") != self.JSONRPC_VERSION:
            errors.append(f"Invalid jsonrpc version: {message.get('jsonrpc')}")
        if "method" not in message:
            errors.append("Missing required field: method")
        elif not isinstance(message["method"], str):
            errors.append("method must be a string")
        if "id" in message and not isinstance(message["id"], (str, int, type(None))):
            errors.append("id must be string, number, or null")
        if "params" in message and not isinstance(message["params"], (dict, list)):
            errors.append("params must be object or array")
        return _result(errors, [])

    def validate_response(self, message: Dict[str, Any]) -> ValidationResult:
        """``jsonrpc``, an ``id``, exactly one of ``result``/``error``, and an error with an
        integer ``code`` and a string ``message``."""
        errors: List[str] = []
        if message.get("jsonrpc") != self.JSONRPC_VERSION:
            errors.append(f"Invalid jsonrpc version: {message.get('jsonrpc')}")
        if "id" not in message:
            errors.append("Missing required field: id")
        has_result, has_error = "result" in message, "error" in message
        if has_result and has_error:
            errors.append("Response cannot have both result and error")
        elif not has_result and not has_error:
            errors.append("Response must have either result or error")
        if has_error:
            error = message["error"]
            if not isinstance(error, dict):
                errors.append("error must be an object")
            else:
                if "code" not in error:
                    errors.append("error.code is required")
                elif not isinstance(error["code"], int):
                    errors.append("error.code must be an integer")
                if "message" not in error:
                    errors.append("error.message is required")
                elif not isinstance(error["message"], str):
                    errors.append("error.message must be a string")
        return _result(errors, [])


class SpecificationValidator:
    """Recommendations for an ``MCP_TOOL_SPECIFICATION.md``: always valid, with warnings."""

    REQUIRED_SECTIONS = ["description", "invocation name", "input schema", "output schema"]

    def validate_spec_file(self, content: str) -> ValidationResult:
        """Warns of missing sections, ``##`` tool headers, JSON examples and security notes."""
        lower = content.lower()
        warnings = [f"Missing recommended section: {s}" for s in self.REQUIRED_SECTIONS if s not in lower]
        if "## " not in content:
            warnings.append("No tool definitions found (expected ## headers)")
        if "```json" not in content:
            warnings.append("No JSON examples found (recommended for schemas)")
        if "security" not in lower:
            warnings.append("Missing security considerations section")
        return ValidationResult(valid=True, errors=[], warnings=warnings)


def validate_tool_call(
    tool_name: str, arguments: Dict[str, Any], schemas: Dict[str, Dict[str, Any]]
) -> ValidationResult:
    """:meth:`ToolCallValidator.validate_call` in one call."""
    return ToolCallValidator(schemas).validate_call(tool_name, arguments)


def validate_message(message: Dict[str, Any], message_type: str = "request") -> ValidationResult:
    """A request (the default) or, for any other ``message_type``, a response."""
    validator = MessageValidator()
    if message_type == "request":
        return validator.validate_request(message)
    return validator.validate_response(message)
