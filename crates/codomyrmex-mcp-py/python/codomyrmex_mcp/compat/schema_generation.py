"""Codomyrmex's argument schemas, as its ``@mcp_tool`` writes them (compatibility mode only).

Plain :mod:`codomyrmex_mcp` derives a tool's schema with Pydantic (titles, ``$defs``, exact
types). A Codomyrmex tool module served in compatibility mode must list the catalogue it
listed under the original, so this module writes the original generator's schemas, quirks
included:

- every parameter is a property; those without a default are ``required`` (the list is always
  there, even empty); no ``title``s;
- a default is written as JSON (tuples as lists, enum members by value, other objects as
  their ``str``); ``None`` and callables are not written;
- ``str``/``int``/``float``/``bool``/``None`` map to their JSON types; ``list[X]`` to an
  array of ``X`` (a bare ``list``, or ``list[Any]``, to an array of strings); any ``dict``
  to ``{"type": "object"}``; a union to ``anyOf`` of its members (``Optional[X]`` is
  ``X`` or null);
- everything else, ``Any`` included, is a string: ``Sequence[str]``, ``tuple``, ``set``,
  ``Literal``, ``bytes``, classes, dataclasses, Pydantic models. These are the original's
  quirks, kept here and nowhere else (docs/migrating-from-codomyrmex.md lists them).

When the signature or its hints cannot be read (a forward reference that does not resolve),
the schema is ``{"type": "object", "properties": {}}``, as in the original.
"""

from __future__ import annotations

import enum
import inspect
import logging
import types
from typing import Any, Callable, Dict, List, Union, get_args, get_origin, get_type_hints

__all__ = ["schema_from_signature", "annotation_schema", "json_default", "json_type_name"]

logger = logging.getLogger("codomyrmex_mcp.compat")

_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
_UNIONS = (Union, getattr(types, "UnionType", Union))


def json_default(value: Any) -> Any:
    """``value`` (a parameter's default) as the JSON the schema shows; None when none is
    shown (``None`` itself, and callables such as ``list`` used as factories)."""
    if value is None:
        return None
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [json_default(item) for item in value]
    if isinstance(value, dict):
        return {str(key): json_default(item) for key, item in value.items()}
    if isinstance(value, enum.Enum):
        return value.value
    if callable(value):
        return None
    return str(value)


def json_type_name(hint: Any) -> str:
    """The one JSON type name a non-union hint maps to: a scalar's, ``array`` for lists,
    ``object`` for dicts, else ``string``."""
    for kind, name in _SCALARS.items():
        if hint is kind and kind is not type(None):
            return name
    if hint is list or get_origin(hint) is list:
        return "array"
    if hint is dict or get_origin(hint) is dict:
        return "object"
    return "string"


def annotation_schema(hint: Any) -> Dict[str, Any]:
    """The schema fragment of one parameter's hint (a new dict at every call)."""
    if hint is Any:
        return {"type": "string"}
    if get_origin(hint) in _UNIONS:
        members = [annotation_schema(member) for member in get_args(hint)]
        if not members:
            return {"type": "string"}
        return members[0] if len(members) == 1 else {"anyOf": members}
    if hint is list or get_origin(hint) is list:
        args = get_args(hint)
        item = args[0] if args else Any
        return {"type": "array", "items": {"type": "string"} if item is Any else annotation_schema(item)}
    if hint is dict or get_origin(hint) is dict:
        return {"type": "object"}
    for kind, name in _SCALARS.items():
        if hint is kind:
            return {"type": name}
    return {"type": json_type_name(hint)}


def schema_from_signature(func: Callable[..., Any]) -> Dict[str, Any]:
    """The argument schema of ``func`` as Codomyrmex's ``@mcp_tool`` generates it."""
    try:
        signature = inspect.signature(func)
        hints = get_type_hints(func)
    except Exception as e:  # the original falls back the same way
        logger.warning("cannot generate a schema for %s: %s", getattr(func, "__name__", "?"), e)
        return {"type": "object", "properties": {}}
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for name, parameter in signature.parameters.items():
        if name in ("self", "cls") or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        fragment = annotation_schema(hints.get(name, Any))
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
        else:
            shown = json_default(parameter.default)
            if shown is not None:
                fragment["default"] = shown
        properties[name] = fragment
    return {"type": "object", "properties": properties, "required": required}
