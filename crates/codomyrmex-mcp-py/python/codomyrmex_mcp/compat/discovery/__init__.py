"""``codomyrmex.model_context_protocol.discovery`` in compatibility mode.

:class:`MCPDiscovery` finds ``@mcp_tool`` functions (anything carrying ``_mcp_tool_meta``,
as both ``codomyrmex_mcp.mcp_tool`` and compatibility mode's decorator set it) across a
package tree: it imports the package, walks every submodule, and scans each one's members
and the methods of the classes it defines. A submodule that fails to import does not stop
the scan: it is recorded as a :class:`FailedModule` in the :class:`DiscoveryReport`, with
the exception's text and type. A tool whose ``requires`` packages cannot be found is kept
but marked unavailable, with the reason. :class:`DiscoveryMetrics` counts the scans.

Discovery only imports and inspects; registering what it found with a server is the
caller's (``DiscoveredTool.handler`` is the function).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import pkgutil
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List, Optional, cast

from ..quality.validation import _generate_schema_from_func
from ..tool_tagging import manifest_tags

__all__ = [
    "DiscoveredServer",
    "DiscoveredTool",
    "DiscoveryMetrics",
    "DiscoveryReport",
    "FailedModule",
    "MCPDiscovery",
    "mcp_tool",
]

logger = logging.getLogger(__name__)


@dataclass
class DiscoveredTool:
    """A tool found by introspection: its name, description, where it lives, its input
    schema (``parameters``), tags, version, requirements and availability."""

    name: str
    description: str
    module_path: str
    callable_name: str
    parameters: Dict[str, Any] = field(default_factory=dict)
    tags: List[str] = field(default_factory=list)
    version: str = "1.0"
    requires: List[str] = field(default_factory=list)
    available: bool = True
    unavailable_reason: Optional[str] = None
    handler: Optional[Callable[..., Any]] = None

    def to_mcp_schema(self) -> Dict[str, Any]:
        """The tool as an MCP tool entry, with its origin under ``x-codomyrmex``; an
        unavailable tool's description ends with ``(UNAVAILABLE: reason)``."""
        description = str(self.description)
        if not self.available:
            description += f" (UNAVAILABLE: {self.unavailable_reason})"
        return {
            "name": self.name,
            "description": description,
            "inputSchema": self.parameters,
            "tags": self.tags,
            "x-codomyrmex": {
                "module": self.module_path,
                "callable": self.callable_name,
                "version": self.version,
                "available": self.available,
            },
        }


@dataclass
class DiscoveredServer:
    """An MCP server found by introspection, with its tools and resource URIs."""

    name: str
    module_path: str
    tools: List[DiscoveredTool] = field(default_factory=list)
    resources: List[str] = field(default_factory=list)


@dataclass
class FailedModule:
    """A module that failed to import during a scan: its name, the error's text and the
    exception type's name."""

    module: str
    error: str
    error_type: str


@dataclass
class DiscoveryReport:
    """One scan's result: the tools found, the modules that failed, the time it took and
    how many modules it visited."""

    tools: List[DiscoveredTool] = field(default_factory=list)
    failed_modules: List[FailedModule] = field(default_factory=list)
    scan_duration_ms: float = 0.0
    modules_scanned: int = 0


@dataclass
class DiscoveryMetrics:
    """The engine's counters: tools known, the last scan's duration and module count, the
    modules that have failed, cache hits and the last scan's time (UTC)."""

    total_tools: int = 0
    scan_duration_ms: float = 0.0
    failed_modules: List[str] = field(default_factory=list)
    modules_scanned: int = 0
    cache_hits: int = 0
    last_scan_time: Optional[datetime] = None


def _elapsed_ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000.0


def _failure(module: str, exc: BaseException) -> FailedModule:
    return FailedModule(module, str(exc), type(exc).__name__)


def _missing(requirements: List[str]) -> List[str]:
    """The requirements that cannot be imported (a bad name counts as missing)."""
    missing = []
    for requirement in requirements:
        try:
            found = importlib.util.find_spec(requirement) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(requirement)
    return missing


class MCPDiscovery:
    """Finds ``@mcp_tool`` functions in packages and modules and keeps what it found by name.

    A later tool of the same name replaces an earlier one.
    """

    def __init__(self) -> None:
        self._registry: Dict[str, DiscoveredTool] = {}
        self._failed_modules: List[FailedModule] = []
        self._metrics = DiscoveryMetrics()

    def scan_package(self, package_name: str) -> DiscoveryReport:
        """Imports ``package_name`` and scans every submodule, each in isolation.

        A root that cannot be imported gives a report with that one failure. A plain
        module (no ``__path__``) is scanned as :meth:`scan_module` does.
        """
        start = time.perf_counter()
        try:
            root = importlib.import_module(package_name)
        except ImportError as exc:
            logger.error("cannot import package %s: %s", package_name, exc)
            return DiscoveryReport(failed_modules=[_failure(package_name, exc)])
        path = getattr(root, "__path__", None)
        if not path:
            report = self.scan_module(package_name)
            self._update_metrics(report)
            return report
        tools: List[DiscoveredTool] = []
        failed: List[FailedModule] = []
        scanned = 0

        def on_walk_error(name: str) -> None:
            # walk_packages imports each subpackage again to descend into it; the loop
            # below has already imported it and recorded any failure, so none is lost.
            logger.debug("cannot descend into %s", name)

        for _finder, name, _is_pkg in pkgutil.walk_packages(
            list(path), prefix=f"{package_name}.", onerror=on_walk_error
        ):
            scanned += 1
            try:
                module = importlib.import_module(name)
                found = self._scan_module(module)
            except Exception as exc:
                logger.debug("cannot scan %s: %s", name, exc)
                failed.append(_failure(name, exc))
                self._failed_modules.append(_failure(name, exc))
                continue
            tools.extend(found)
            for tool in found:
                self._registry[tool.name] = tool
        report = DiscoveryReport(
            tools=tools,
            failed_modules=failed,
            scan_duration_ms=_elapsed_ms(start),
            modules_scanned=scanned,
        )
        self._update_metrics(report)
        return report

    def scan_module(self, module_name: str) -> DiscoveryReport:
        """Imports and scans one module, merging its tools into those already found."""
        start = time.perf_counter()
        try:
            module = importlib.import_module(module_name)
            tools = self._scan_module(module)
        except Exception as exc:
            duration = _elapsed_ms(start)
            failure = _failure(module_name, exc)
            self._failed_modules.append(failure)
            self._metrics.scan_duration_ms += duration
            self._metrics.failed_modules.append(module_name)
            return DiscoveryReport(
                failed_modules=[failure], scan_duration_ms=duration, modules_scanned=1
            )
        for tool in tools:
            self._registry[tool.name] = tool
        report = DiscoveryReport(tools=tools, scan_duration_ms=_elapsed_ms(start), modules_scanned=1)
        self._update_metrics(report)
        return report

    def _scan_module(self, module: Any) -> List[DiscoveredTool]:
        """The tools among an imported module's members and its own classes' methods."""
        tools: List[DiscoveredTool] = []
        module_name = getattr(module, "__name__", "")
        for name, obj in inspect.getmembers(module):
            self._add_if_tool(tools, module_name, name, obj)
            if inspect.isclass(obj) and getattr(obj, "__module__", None) == module_name:
                for method_name, method in inspect.getmembers(obj):
                    self._add_if_tool(tools, module_name, method_name, method)
        return tools

    @staticmethod
    def _add_if_tool(tools: List[DiscoveredTool], module_name: str, name: str, obj: Any) -> None:
        meta = getattr(obj, "_mcp_tool_meta", None)
        if not isinstance(meta, dict):
            return
        requires = list(meta.get("requires") or [])
        missing = _missing(requires)
        reason = None
        if missing:
            reason = (
                f"Missing dependencies: {', '.join(missing)}. "
                f"Install via 'uv add {' '.join(missing)}'"
            )
        tags = manifest_tags(category=str(meta.get("category", "general")), explicit=meta.get("tags"))
        # The server decorator's ``schema``, else this module's ``parameters``.
        parameters = cast(Dict[str, Any], meta.get("schema", meta.get("parameters", {})))
        tools.append(
            DiscoveredTool(
                name=meta.get("name") or name,
                description=meta.get("description") or (getattr(obj, "__doc__", None) or "").strip(),
                module_path=module_name,
                callable_name=name,
                parameters=parameters,
                tags=tags,
                version=meta.get("version", "1.0"),
                requires=requires,
                available=not missing,
                unavailable_reason=reason,
                handler=obj,
            )
        )

    def _update_metrics(self, report: DiscoveryReport) -> None:
        self._metrics.total_tools = len(self._registry)
        self._metrics.scan_duration_ms = report.scan_duration_ms
        self._metrics.modules_scanned = report.modules_scanned
        self._metrics.last_scan_time = datetime.now(timezone.utc)
        self._metrics.failed_modules = [m.module for m in self._failed_modules]

    def register_tool(self, tool: DiscoveredTool) -> None:
        """Adds (or replaces) ``tool`` by name."""
        self._registry[tool.name] = tool

    def get_tool(self, name: str) -> Optional[DiscoveredTool]:
        """The tool of that name, or ``None``."""
        return self._registry.get(name)

    def list_tools(self, tag: Optional[str] = None) -> List[DiscoveredTool]:
        """Every tool found, or those carrying ``tag``, in the order first found."""
        if tag:
            return [t for t in self._registry.values() if tag in t.tags]
        return list(self._registry.values())

    @property
    def tool_count(self) -> int:
        """How many tools are known."""
        return len(self._registry)

    def record_cache_hit(self) -> None:
        """Counts one cache hit (for callers that cache discovery results)."""
        self._metrics.cache_hits += 1

    def get_metrics(self) -> DiscoveryMetrics:
        """The engine's counters (the live object)."""
        return self._metrics


def mcp_tool(
    name: Optional[str] = None,
    description: str = "",
    tags: Optional[List[str]] = None,
    version: str = "1.0",
    requires: Optional[List[str]] = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Marks a function for discovery (this module's lighter marker, not the server's).

    The function is returned unchanged with ``_mcp_tool_meta``: the name and description
    given (empty means the function's name and docstring at scan time), tags, version,
    ``requires`` and a flat parameter schema.
    """

    def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
        try:
            params = _generate_schema_from_func(func)
        except (TypeError, ValueError):
            # No signature to read (some builtins): an empty schema, as Codomyrmex does.
            params = {}
        func._mcp_tool_meta = {  # type: ignore[attr-defined]
            "name": name,
            "description": description,
            "tags": list(tags or []),
            "parameters": params,
            "version": version,
            "requires": list(requires or []),
        }
        return func

    return decorator
