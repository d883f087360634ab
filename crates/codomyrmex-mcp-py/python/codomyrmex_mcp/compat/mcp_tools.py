"""``codomyrmex.model_context_protocol.mcp_tools``: the module's own introspection tools
(``codomyrmex.inspect_server``, ``codomyrmex.list_registered_tools``,
``codomyrmex.get_tool_schema``), with the names, descriptions and schemas Codomyrmex lists.

The two that list tools walk the installed ``codomyrmex`` package for ``*.mcp_tools``
modules; a module that fails to import is left out, as in the original.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Dict, Iterator, List, Tuple

from .decorators import mcp_tool
from .schema_generation import schema_from_signature

__all__ = ["inspect_server", "list_registered_tools", "get_tool_schema"]


def _tool_modules() -> Iterator[Tuple[str, Any]]:
    """``(name, module)`` of each ``codomyrmex.*.mcp_tools`` module that imports."""
    import codomyrmex  # type: ignore[import-not-found]

    for _finder, name, _ispkg in pkgutil.walk_packages(codomyrmex.__path__, prefix="codomyrmex."):
        if name.endswith(".mcp_tools"):
            try:
                yield name, importlib.import_module(name)
            except ImportError:
                continue


@mcp_tool(category="model_context_protocol")
def inspect_server(server_name: str = "default") -> Dict[str, Any]:
    """Inspect the running MCP server's configuration and state.

    Args:
        server_name: Name of the server to inspect

    Returns:
        Server info including name, version, tool count, resource count.
    """
    return {
        "status": "success",
        "server_name": server_name,
        "protocol_version": "2025-06-18",
        "capabilities": ["tools", "resources", "prompts"],
    }


@mcp_tool(category="model_context_protocol")
def list_registered_tools() -> Dict[str, Any]:
    """list all tools registered across the MCP ecosystem.

    Returns:
        Dictionary with all registered tool names and their modules.
    """
    try:
        tools: List[Dict[str, str]] = []
        for module_name, module in _tool_modules():
            for attribute in dir(module):
                value = getattr(module, attribute)
                meta = getattr(value, "_mcp_tool_meta", None)
                if callable(value) and meta is not None:
                    category = meta.get("category", "unknown") if isinstance(meta, dict) else "unknown"
                    tools.append({"name": attribute, "module": module_name, "category": category})
        return {"status": "success", "tools": tools, "total_count": len(tools)}
    except Exception as e:
        return {"status": "error", "message": str(e)}


@mcp_tool(category="model_context_protocol")
def get_tool_schema(tool_name: str) -> Dict[str, Any]:
    """Get the JSON schema for a specific registered MCP tool.

    Args:
        tool_name: Fully qualified tool name

    Returns:
        JSON schema for the tool's input parameters.
    """
    try:
        for module_name, module in _tool_modules():
            if hasattr(module, tool_name):
                schema = schema_from_signature(getattr(module, tool_name))
                return {"status": "success", "tool_name": tool_name, "module": module_name, "schema": schema}
        return {"status": "error", "message": f"Tool not found: {tool_name}"}
    except Exception as e:
        return {"status": "error", "message": str(e)}
