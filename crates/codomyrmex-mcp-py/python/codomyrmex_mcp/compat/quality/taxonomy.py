"""``codomyrmex.model_context_protocol.quality.taxonomy`` in compatibility mode.

Sorts tools into five semantic categories by their names, for filtering, documentation and
access control: ``analysis`` (read-only inspection), ``generation`` (creates content),
``execution`` (runs code or commands), ``query`` (retrieves data) and ``mutation`` (changes
persistent state). The rules are Codomyrmex's, tried in order on the name's last dotted
part; a name no rule matches is a ``query``.
"""

from __future__ import annotations

import enum
import logging
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Pattern, Tuple

__all__ = [
    "TaxonomyReport",
    "ToolCategory",
    "categorize_all_tools",
    "categorize_tool",
    "generate_taxonomy_report",
]

logger = logging.getLogger(__name__)


class ToolCategory(enum.Enum):
    """A tool's semantic category."""

    ANALYSIS = "analysis"
    GENERATION = "generation"
    EXECUTION = "execution"
    QUERY = "query"
    MUTATION = "mutation"


def _rule(pattern: str, category: ToolCategory) -> Tuple[Pattern[str], ToolCategory]:
    return re.compile(pattern), category


# First match wins: state changes, then execution, generation, analysis and queries.
_RULES: List[Tuple[Pattern[str], ToolCategory]] = [
    _rule(r"git_(commit|push|pull|init|create_branch|switch_branch|clone)$", ToolCategory.MUTATION),
    _rule(r"write_file$", ToolCategory.MUTATION),
    _rule(r"obsidian_(create|update|delete)_note$", ToolCategory.MUTATION),
    _rule(r"invalidate_cache$", ToolCategory.MUTATION),
    _rule(
        r"(execute_code|code_execute|run_command|run_tests|call_module_function)$",
        ToolCategory.EXECUTION,
    ),
    _rule(r"code_debug$", ToolCategory.EXECUTION),
    _rule(r"create_(bar_chart|line_plot|pie_chart|ascii_art)$", ToolCategory.GENERATION),
    _rule(
        r"create_(commit_timeline|git_branch|git_workflow|repository_structure)_diagram$",
        ToolCategory.GENERATION,
    ),
    _rule(r"generate_documentation$", ToolCategory.GENERATION),
    _rule(r"(analyze_file|analyze_project|analyze_python)$", ToolCategory.ANALYSIS),
    _rule(r"code_review_(file|project)$", ToolCategory.ANALYSIS),
    _rule(r"checksum_file$", ToolCategory.ANALYSIS),
    _rule(r"obsidian_find_broken_links$", ToolCategory.ANALYSIS),
    _rule(r"obsidian_vault_stats$", ToolCategory.ANALYSIS),
    _rule(r"(list_|get_|search_|read_|module_info|pai_|json_query|code_list)", ToolCategory.QUERY),
    _rule(r"obsidian_(load_vault|read_|search|list_tags|get_backlinks)", ToolCategory.QUERY),
    _rule(
        r"git_(diff|log|status|repo_status|is_repo|check_availability|current_branch)$",
        ToolCategory.QUERY,
    ),
]


def categorize_tool(tool_name: str) -> ToolCategory:
    """The category of ``tool_name`` (e.g. ``codomyrmex.write_file`` is a mutation)."""
    short = tool_name.rsplit(".", 1)[-1]
    for pattern, category in _RULES:
        if pattern.search(short):
            return category
    logger.debug("no category rule matches %r; it is a query", tool_name)
    return ToolCategory.QUERY


def categorize_all_tools(tool_names: List[str]) -> Dict[str, ToolCategory]:
    """Each name's category."""
    return {name: categorize_tool(name) for name in tool_names}


@dataclass
class TaxonomyReport:
    """How many tools there are, per category, and each tool's category value."""

    total: int = 0
    by_category: Dict[str, int] = field(default_factory=dict)
    tools: Dict[str, str] = field(default_factory=dict)

    def summary(self) -> Dict[str, Any]:
        """``total``, ``by_category`` and ``coverage`` as ``"categorized/total"``."""
        return {
            "total": self.total,
            "by_category": self.by_category,
            "coverage": f"{sum(self.by_category.values())}/{self.total}",
        }


def generate_taxonomy_report(tool_names: List[str]) -> TaxonomyReport:
    """Categorizes ``tool_names`` and counts them per category."""
    by_category: Dict[str, int] = {}
    tools: Dict[str, str] = {}
    for name, category in categorize_all_tools(tool_names).items():
        by_category[category.value] = by_category.get(category.value, 0) + 1
        tools[name] = category.value
    return TaxonomyReport(total=len(tool_names), by_category=by_category, tools=tools)
