"""``Context``: what a running tool can ask of its call (progress, logging, cancellation,
elicitation).

A tool asks for it by declaring a parameter annotated ``Context`` (any name); that parameter
is not part of the tool's input schema. Progress and log notifications go to the client that
made the call, on its request's stream, when the client asked for them (a progress token; a
log level that lets the message through). Not available to plain ``MCPToolRegistry`` handlers
registered without ``@mcp_tool``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from . import _core

__all__ = ["Context", "ClientRequestFailed"]

ClientRequestFailed = _core.ClientRequestFailed
"""A request to the client failed: it did not declare the capability, it answered with an
error, or the call was cancelled. A ``RuntimeError``."""


class Context:
    """The running call: progress, logging, cancellation."""

    __slots__ = ("_state",)

    def __init__(self, state: Any) -> None:
        self._state = state

    @property
    def tool_name(self) -> str:
        """The invocation name of the tool being called."""
        return self._state.tool_name() if self._state is not None else ""

    def is_cancelled(self) -> bool:
        """Whether the call was cancelled or timed out (its answer has then been sent; stop)."""
        return self._state is not None and self._state.cancelled()

    def report_progress(self, progress: float, total: Optional[float] = None, message: Optional[str] = None) -> bool:
        """Sends ``notifications/progress``; returns whether it was sent."""
        if self._state is None:
            return False
        return bool(self._state.progress(float(progress), None if total is None else float(total), message))

    def log(self, level: str, data: Any) -> bool:
        """Sends ``notifications/message`` at an MCP level (``"debug"``, ``"info"``,
        ``"warning"``, ``"error"``, ...); returns whether it was sent."""
        if self._state is None:
            return False
        return bool(self._state.log(level, json.dumps(data, default=str)))

    def elicit(self, message: str, schema: Dict[str, Any]) -> Dict[str, Any]:
        """Asks the user for input matching ``schema`` (a flat object schema) and returns the
        client's answer: ``{"action": "accept", "content": {...}}``, or ``"decline"`` /
        ``"cancel"``. One API for both eras: in 2025-11-25 a request to the client, awaited;
        in 2026-07-28 the tool ends here (an ``InputRequired``, which is not an ``Exception``:
        let it propagate) and runs again, from the start, with the answer, so a tool must do
        nothing irreversible before its last ``elicit``. Blocks its thread (in an async tool,
        the tool loop): ``await asyncio.to_thread(ctx.elicit, ...)`` keeps the loop free.
        Raises ``ClientRequestFailed`` if the client cannot or will not answer."""
        if self._state is None:
            raise ClientRequestFailed("no client to ask: the tool is not running under a server")
        return json.loads(self._state.elicit(message, json.dumps(schema)))  # type: ignore[no-any-return]

    def debug(self, data: Any) -> bool:
        """``log("debug", data)``."""
        return self.log("debug", data)

    def info(self, data: Any) -> bool:
        """``log("info", data)``."""
        return self.log("info", data)

    def warning(self, data: Any) -> bool:
        """``log("warning", data)``."""
        return self.log("warning", data)

    def error(self, data: Any) -> bool:
        """``log("error", data)``."""
        return self.log("error", data)
