"""``codomyrmex.model_context_protocol.mcp_deprecation``: the tools marked ``deprecated_in``.

As in the original, the tools come from ``codomyrmex.model_context_protocol.get_all_tools``;
where that does not exist (it does not, in the original either) the lists are empty.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List

__all__ = ["get_deprecated_tools", "get_deprecation_summary", "get_deprecation_timeline"]

logger = logging.getLogger("codomyrmex_mcp.compat")


def get_deprecated_tools() -> List[Dict[str, Any]]:
    """``[{"name", "module", "deprecated_in", "description"}]`` of the deprecated tools."""
    try:
        from . import get_all_tools  # type: ignore[attr-defined]
    except ImportError:
        logger.warning("MCP get_all_tools not available")
        return []
    deprecated = []
    for tool in get_all_tools():
        meta = getattr(tool, "metadata", {}) or {}
        if meta.get("deprecated_in"):
            deprecated.append(
                {
                    "name": getattr(tool, "name", str(tool)),
                    "module": getattr(tool, "module", "unknown"),
                    "deprecated_in": meta["deprecated_in"],
                    "description": getattr(tool, "description", ""),
                }
            )
    return deprecated


def get_deprecation_timeline() -> Dict[str, List[Dict[str, Any]]]:
    """The deprecated tools by the version they were deprecated in, versions sorted."""
    timeline: Dict[str, List[Dict[str, Any]]] = {}
    for tool in get_deprecated_tools():
        timeline.setdefault(tool["deprecated_in"], []).append(tool)
    return dict(sorted(timeline.items()))


def get_deprecation_summary() -> Dict[str, Any]:
    """``{"total_deprecated", "by_version" (counts), "tools"}``."""
    tools = get_deprecated_tools()
    by_version: Dict[str, int] = {}
    for tool in tools:
        by_version[tool["deprecated_in"]] = by_version.get(tool["deprecated_in"], 0) + 1
    return {"total_deprecated": len(tools), "by_version": dict(sorted(by_version.items())), "tools": tools}
