"""``codomyrmex.model_context_protocol.reliability.observability`` in compatibility mode.

Prometheus-style counters of tool calls kept in process: calls, errors and cumulative
duration, in total and per tool, readable as a dict or as JSON (the text Codomyrmex serves
as its ``codomyrmex://mcp/metrics`` resource). Callers report each call themselves with
:meth:`MCPObservabilityHooks.on_tool_call_start` / :meth:`~MCPObservabilityHooks.on_tool_call_end`.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any, Dict, Optional

__all__ = ["MCPObservabilityHooks", "ToolMetrics", "get_mcp_observability_hooks"]


@dataclass
class ToolMetrics:
    """One tool's counters."""

    calls: int = 0
    errors: int = 0
    total_duration: float = 0.0
    last_call_time: Optional[float] = None


class MCPObservabilityHooks:
    """Thread-safe counters of tool calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tool_metrics: Dict[str, ToolMetrics] = {}
        self._global_calls = 0
        self._global_errors = 0
        self._global_duration = 0.0

    def on_tool_call_start(self, tool_name: str) -> float:
        """A call begins; returns a monotonic start time to measure it with."""
        return time.monotonic()

    def on_tool_call_end(self, tool_name: str, *, duration: float, error: Optional[str] = None) -> None:
        """A call ended after ``duration`` seconds; an ``error`` (any non-None) counts as one."""
        with self._lock:
            metrics = self._tool_metrics.setdefault(tool_name, ToolMetrics())
            metrics.calls += 1
            metrics.total_duration += duration
            metrics.last_call_time = time.time()
            self._global_calls += 1
            self._global_duration += duration
            if error is not None:
                metrics.errors += 1
                self._global_errors += 1

    def get_metrics(self) -> Dict[str, Any]:
        """Totals and per-tool counters (durations rounded to microseconds)."""
        with self._lock:
            per_tool = {
                name: {
                    "calls": m.calls,
                    "errors": m.errors,
                    "total_duration": round(m.total_duration, 6),
                    "avg_duration": round(m.total_duration / m.calls, 6) if m.calls else 0,
                }
                for name, m in self._tool_metrics.items()
            }
            return {
                "mcp_tool_call_total": self._global_calls,
                "mcp_tool_errors_total": self._global_errors,
                "mcp_tool_duration_seconds": round(self._global_duration, 6),
                "per_tool": per_tool,
            }

    def get_tool_metrics(self, tool_name: str) -> Optional[ToolMetrics]:
        """The counters of ``tool_name``, or ``None`` if it was never reported."""
        with self._lock:
            return self._tool_metrics.get(tool_name)

    def get_metrics_json(self) -> str:
        """:meth:`get_metrics` as indented JSON."""
        return json.dumps(self.get_metrics(), indent=2)

    def reset(self) -> None:
        """Clears every counter."""
        with self._lock:
            self._tool_metrics.clear()
            self._global_calls = 0
            self._global_errors = 0
            self._global_duration = 0.0


_global_hooks: Optional[MCPObservabilityHooks] = None
_global_lock = threading.Lock()


def get_mcp_observability_hooks() -> MCPObservabilityHooks:
    """The process's shared hooks."""
    global _global_hooks
    with _global_lock:
        if _global_hooks is None:
            _global_hooks = MCPObservabilityHooks()
        return _global_hooks
