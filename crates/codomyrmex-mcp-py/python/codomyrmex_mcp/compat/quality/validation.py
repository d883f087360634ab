"""``codomyrmex.model_context_protocol.quality.validation`` in compatibility mode.

:func:`validate_tool_arguments` checks a tool's arguments against its input schema before
dispatch, after an optional light coercion of strings to the declared scalar types. The
check is the Rust core's JSON Schema validator (the one the registry runs on every
``tools/call``), reached through ``codomyrmex_mcp._core.schema_violations``; this module
only shapes its answer as Codomyrmex's :class:`ValidationResult`.

As in Codomyrmex, a schema that does not name its dialect is read as JSON Schema draft 7.
"""

from __future__ import annotations

import inspect
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

from ..._core import schema_violations as _schema_violations

__all__ = [
    "ValidationResult",
    "_generate_schema_from_func",
    "validate_tool_arguments",
]

logger = logging.getLogger(__name__)

_DRAFT_7 = "http://json-schema.org/draft-07/schema#"
_TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
_FALSE_WORDS = frozenset({"false", "0", "no", "off"})


@dataclass
class ValidationResult:
    """The outcome: ``valid``, the human-readable ``errors`` (``"path: message"``), and on
    success the arguments after coercion."""

    valid: bool
    errors: List[str] = field(default_factory=list)
    coerced_args: Dict[str, Any] = field(default_factory=dict)


def validate_tool_arguments(
    tool_name: str,
    arguments: Optional[Dict[str, Any]],
    schema: Dict[str, Any],
    *,
    coerce: bool = True,
) -> ValidationResult:
    """Validates ``arguments`` against a tool's input schema.

    ``schema`` is either a tool description holding ``inputSchema`` or a bare JSON Schema
    (one with ``type`` or ``properties``); anything else means there is nothing to check and
    the arguments pass unchanged. ``None`` arguments are an empty object. With ``coerce``,
    a string given for an ``integer``, ``number`` or ``boolean`` property is converted first
    when it reads as one (``"42"``, ``"2.5"``, ``"true"``/``"yes"``/``"on"``/``"1"`` and
    their opposites); otherwise it is left for the validator to reject.

    ``tool_name`` is used only in log lines.
    """
    args: Dict[str, Any] = {} if arguments is None else dict(arguments)
    input_schema = _extract_input_schema(schema)
    if input_schema is None:
        return ValidationResult(valid=True, coerced_args=args)
    if not isinstance(input_schema, dict):
        return ValidationResult(
            valid=False,
            errors=[f"<root>: the input schema is a {type(input_schema).__name__}, not an object"],
        )
    if coerce:
        args = _coerce_types(args, input_schema)
    errors = _validate_against_schema(args, input_schema, tool_name)
    if errors:
        return ValidationResult(valid=False, errors=errors)
    return ValidationResult(valid=True, coerced_args=args)


def _extract_input_schema(schema: Any) -> Any:
    """The JSON Schema inside ``schema``, or ``None`` when there is none."""
    if not isinstance(schema, dict):
        return None
    if "inputSchema" in schema:
        return schema["inputSchema"]
    if "type" in schema or "properties" in schema:
        return schema
    return None


def _coerce_types(args: Dict[str, Any], schema: Dict[str, Any]) -> Dict[str, Any]:
    """``args`` with the strings of integer, number and boolean properties converted."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return args
    out = dict(args)
    for key, value in args.items():
        prop = properties.get(key)
        if not isinstance(value, str) or not isinstance(prop, dict):
            continue
        wanted = prop.get("type")
        try:
            if wanted == "integer":
                out[key] = int(value)
            elif wanted == "number":
                out[key] = float(value)
            elif wanted == "boolean":
                word = value.lower()
                if word in _TRUE_WORDS:
                    out[key] = True
                elif word in _FALSE_WORDS:
                    out[key] = False
        except ValueError as exc:
            # Left as the string: the validator reports the type mismatch.
            logger.debug("could not coerce %r to %s: %s", key, wanted, exc)
    return out


def _validate_against_schema(args: Dict[str, Any], schema: Dict[str, Any], tool_name: str) -> List[str]:
    """The violations of ``schema`` by ``args``, by the core's validator, sorted by path."""
    if "$schema" not in schema:
        schema = dict(schema, **{"$schema": _DRAFT_7})
    try:
        instance_json = json.dumps(args, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return [f"<root>: the arguments are not JSON ({exc})"]
    try:
        schema_json = json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return [f"<root>: the input schema is not JSON ({exc})"]
    try:
        found = json.loads(_schema_violations(schema_json, instance_json))
    except ValueError as exc:
        logger.debug("schema of %s refused: %s", tool_name, exc)
        return [f"<root>: {exc}"]
    entries = []
    for violation in found:
        parts = [_unescape(p) for p in violation.get("pointer", "").split("/")[1:]]
        entries.append((parts, violation.get("message", "")))
    entries.sort(key=lambda entry: entry[0])
    return [f"{'.'.join(parts) or '<root>'}: {message}" for parts, message in entries]


# Codomyrmex's name for its fallback checker, used when the ``jsonschema`` package is absent.
# There is no second validator here: the name is the core's, as above.
_validate_builtin = _validate_against_schema


def _unescape(token: str) -> str:
    # A JSON Pointer token (RFC 6901).
    return token.replace("~1", "/").replace("~0", "~")


_SCALAR_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}


def _generate_schema_from_func(func: Callable[..., Any]) -> Dict[str, Any]:
    """A flat object schema for ``func``'s parameters (the discovery decorator's).

    Each parameter other than ``self``/``cls`` is a property typed from its annotation when
    that is exactly ``str``, ``int``, ``float``, ``bool``, ``list`` or ``dict``, and
    ``string`` otherwise; those without a default are required.
    """
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for name, param in inspect.signature(func).parameters.items():
        if name in ("self", "cls"):
            continue
        annotation = param.annotation
        json_type = "string"
        if annotation is not inspect.Parameter.empty:
            for py_type, mapped in _SCALAR_TYPES.items():
                if annotation is py_type:
                    json_type = mapped
                    break
        properties[name] = {"type": json_type}
        if param.default is inspect.Parameter.empty:
            required.append(name)
    return {"type": "object", "properties": properties, "required": required}
