"""``codomyrmex.model_context_protocol.tool_tagging``: the tags a tool is indexed under."""

from __future__ import annotations

from typing import List, Optional

__all__ = ["manifest_tags"]


def manifest_tags(*, category: str, explicit: Optional[List[str]] = None) -> List[str]:
    """A tool's tags, each once, in order, always ending with ``mcp`` if it was not given:
    the explicit ones if any; else ``hermes, agent, mcp`` for the ``hermes`` category, the
    category and ``mcp`` for any other named category, and ``mcp`` alone for ``general``
    or none."""
    if explicit:
        base = list(explicit)
    elif category == "hermes":
        base = ["hermes", "agent", "mcp"]
    elif category not in ("", "general"):
        base = [category, "mcp"]
    else:
        base = ["mcp"]
    tags: List[str] = []
    for tag in base:
        if tag and tag not in tags:
            tags.append(tag)
    if "mcp" not in tags:
        tags.append("mcp")
    return tags
