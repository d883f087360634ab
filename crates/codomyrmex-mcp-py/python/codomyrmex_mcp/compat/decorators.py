"""``@mcp_tool`` in compatibility mode: Codomyrmex's decorator, so its tool modules register
the catalogue they registered under the original.

Against plain :func:`codomyrmex_mcp.mcp_tool`, this one:

- prefixes ``codomyrmex.`` to the name (unless it already starts with it);
- takes the description from ``__doc__.strip()`` (plain: ``inspect.cleandoc``);
- writes the original's schema (:mod:`.schema_generation`); ``schema={}`` (falsy) means
  "generate", as in the original;
- takes ``tags=`` and keeps them in the metadata;
- returns a plain synchronous wrapper (an async function's wrapper returns its coroutine,
  which the registry awaits), carrying ``_mcp_tool_meta`` and ``_mcp_tool``; the function
  itself carries them too.

Registering is the caller's: Codomyrmex's discovery, or
``MCPServer.register_tool(meta["name"], {"name", "description", "inputSchema"}, func)``.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, Dict, List, Optional

from .schema_generation import annotation_schema, json_default, json_type_name, schema_from_signature

__all__ = ["mcp_tool"]

PREFIX = "codomyrmex."


def mcp_tool(
    name: Optional[str] = None,
    description: Optional[str] = None,
    schema: Optional[Dict[str, Any]] = None,
    category: str = "general",
    tags: Optional[List[str]] = None,
    version: Optional[str] = None,
    deprecated_in: Optional[str] = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Marks a function as an MCP tool, with Codomyrmex's metadata (``name``,
    ``description``, ``schema``, ``category``, ``tags``, ``module``, ``version``,
    ``deprecated_in``). Calling a tool with ``deprecated_in`` warns (``DeprecationWarning``)."""

    def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
        base = name or func.__name__
        tool_name = base if base.startswith(PREFIX) else PREFIX + base
        meta: Dict[str, Any] = {
            "name": tool_name,
            "description": description or (func.__doc__ or "").strip(),
            "schema": schema or schema_from_signature(func),
            "category": category,
            "tags": list(tags or []),
            "module": func.__module__,
            "version": version or "1.0",
            "deprecated_in": deprecated_in,
        }

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if deprecated_in:
                warnings.warn(f"MCP tool {tool_name!r} deprecated since v{deprecated_in}.", DeprecationWarning, stacklevel=2)
            return func(*args, **kwargs)

        for target in (func, wrapper):
            setattr(target, "_mcp_tool_meta", meta)
            setattr(target, "_mcp_tool", meta)
        return wrapper

    return decorator


# The original's private helpers, under the names its callers (its own ``mcp_tools``) use.
_generate_schema_from_signature = schema_from_signature
_annotation_to_json_schema = annotation_schema
_safe_default = json_default
_map_python_type_to_json_string = json_type_name
_map_python_type_to_json = json_type_name
