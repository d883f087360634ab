"""``codomyrmex.model_context_protocol.versioning.version_registry`` in compatibility mode.

A registry of tool versions: each registration is kept in the tool's history, a tool can be
deprecated, and migration steps between versions can be recorded and listed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

from .versioning import APIVersion, DeprecationInfo, VersionedTool

__all__ = ["MigrationStep", "VersionRegistry"]


@dataclass
class MigrationStep:
    """One step of moving ``tool_name`` from one version to another."""

    tool_name: str
    from_version: str
    to_version: str
    action: str = ""
    details: str = ""


class VersionRegistry:
    """Tools by name (the latest registration), their version histories and migrations."""

    def __init__(self) -> None:
        self._tools: Dict[str, VersionedTool] = {}
        self._history: Dict[str, List[VersionedTool]] = {}
        self._migrations: List[MigrationStep] = []

    @property
    def tool_count(self) -> int:
        """How many tools are registered."""
        return len(self._tools)

    def register(self, name: str, version: str = "1.0.0", introduced: str = "") -> None:
        """Registers ``name`` at ``version`` (introduced then, unless said otherwise).
        Raises ``ValueError`` for a version that does not parse."""
        tool = VersionedTool(
            name=name,
            version=APIVersion.parse(version),
            introduced=APIVersion.parse(introduced or version),
        )
        self._tools[name] = tool
        self._history.setdefault(name, []).append(tool)

    def deprecate(self, name: str, since: str = "", removal: str = "", replacement: str = "") -> bool:
        """Marks ``name`` deprecated; ``False`` if it is not registered."""
        tool = self._tools.get(name)
        if tool is None:
            return False
        tool.deprecated = True
        tool.deprecation = DeprecationInfo(since=since, removal=removal, replacement=replacement)
        return True

    def is_deprecated(self, name: str) -> bool:
        """Whether ``name`` is registered and deprecated."""
        tool = self._tools.get(name)
        return tool.deprecated if tool is not None else False

    def get_tool(self, name: str) -> Optional[VersionedTool]:
        """The tool's latest registration, or ``None``."""
        return self._tools.get(name)

    def list_versions(self, name: str) -> List[APIVersion]:
        """Every version ``name`` was registered at, in order."""
        return [t.version for t in self._history.get(name, [])]

    def list_deprecated(self) -> List[str]:
        """The names of the deprecated tools."""
        return [name for name, tool in self._tools.items() if tool.deprecated]

    def list_all(self) -> List[VersionedTool]:
        """Every tool's latest registration."""
        return list(self._tools.values())

    def add_migration(
        self, tool_name: str, from_version: str, to_version: str, action: str, details: str = ""
    ) -> None:
        """Records a migration step."""
        self._migrations.append(MigrationStep(tool_name, from_version, to_version, action, details))

    def migration_guide(self, from_ver: str = "", to_ver: str = "") -> List[MigrationStep]:
        """The steps recorded, limited to those from ``from_ver`` and/or to ``to_ver``."""
        return [
            step
            for step in self._migrations
            if (not from_ver or step.from_version == from_ver)
            and (not to_ver or step.to_version == to_ver)
        ]

    def to_markdown(self) -> str:
        """A Markdown list of the tools by name, with deprecations and their replacements."""
        lines = ["# API Version Registry", ""]
        for tool in sorted(self._tools.values(), key=lambda t: t.name):
            status = "⚠️ DEPRECATED" if tool.deprecated else "✅"
            lines.append(f"- **{tool.name}** {tool.version} {status}")
            if tool.deprecated and tool.deprecation is not None:
                if tool.deprecation.replacement:
                    lines.append(f"  - Use `{tool.deprecation.replacement}` instead")
                if tool.deprecation.removal:
                    lines.append(f"  - Removal planned: {tool.deprecation.removal}")
        return "\n".join(lines)
