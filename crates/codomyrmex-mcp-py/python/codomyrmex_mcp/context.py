"""``Context``: what a running tool can ask of its call (progress, logging, cancellation) and
of its client (elicitation, sampling, roots).

A tool asks for it by declaring a parameter annotated ``Context`` (any name); that parameter
is not part of the tool's input schema. Progress and log notifications go to the client that
made the call, on its request's stream, when the client asked for them (a progress token; a
log level that lets the message through). Not available to plain ``MCPToolRegistry`` handlers
registered without ``@mcp_tool``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _core

__all__ = ["Context", "ClientRequestFailed"]

ClientRequestFailed = _core.ClientRequestFailed
"""A request to the client failed: it did not declare the capability, it answered with an
error, or the call was cancelled. A ``RuntimeError``."""


class Context:
    """The running call: progress, logging, cancellation, and requests to the client
    (elicitation, sampling, roots)."""

    __slots__ = ("_state", "_counts")

    def __init__(self, state: Any) -> None:
        self._state = state
        self._counts: Dict[str, int] = {}

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

    # ----- requests to the client: elicitation, sampling, roots ----------------------------
    #
    # One API for both eras: in 2025-11-25 a server-to-client request, awaited; in 2026-07-28
    # a multi round-trip: a request not yet answered ends the tool (an ``InputRequired``,
    # which is not an ``Exception``: let it propagate), the client answers, and the tool runs
    # again, from the start, with every answer so far. So a tool must do nothing
    # irreversible before its last request, and must make its requests in the same order
    # each time: the n-th request of a kind is keyed ``kind`` (``"elicitation"``,
    # ``"sampling"``, ``"roots"``) for the first and ``kind-n`` after, unless ``key=`` names
    # it. Each sync method blocks its thread until the client answers; in an async tool use
    # its ``*_async`` twin, which keeps the tool loop free. All raise ``ClientRequestFailed``
    # if the client cannot or will not answer (it did not declare the capability, it
    # answered with an error, or the call was cancelled).

    def _key(self, kind: str, key: Optional[str]) -> str:
        if key is not None:
            return key
        count = self._counts.get(kind, 0) + 1
        self._counts[kind] = count
        return kind if count == 1 else f"{kind}-{count}"

    def _input(self, kind: str, key: Optional[str], params: Dict[str, Any]) -> Any:
        if self._state is None:
            raise ClientRequestFailed("no client to ask: the tool is not running under a server")
        return json.loads(self._state.input(kind, self._key(kind, key), json.dumps(params)))

    async def _input_async(self, kind: str, key: Optional[str], params: Dict[str, Any]) -> Any:
        if self._state is None:
            raise ClientRequestFailed("no client to ask: the tool is not running under a server")
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[Tuple[str, str]]" = loop.create_future()

        def settle(status: str, text: str) -> None:
            if not future.done():
                future.set_result((status, text))

        def done(status: str, text: str) -> None:  # called from a Rust thread
            loop.call_soon_threadsafe(settle, status, text)

        self._state.input_async(kind, self._key(kind, key), json.dumps(params), done)
        status, text = await future
        if status == "answered":
            return json.loads(text)
        if status == "input_required":
            raise _core.InputRequired(text)
        raise ClientRequestFailed(text)

    def elicit(self, message: str, schema: Dict[str, Any], *, key: Optional[str] = None) -> Dict[str, Any]:
        """Asks the user for input matching ``schema`` (a flat object schema;
        ``elicitation/create``, form mode) and returns the client's answer:
        ``{"action": "accept", "content": {...}}``, or ``"decline"`` / ``"cancel"``."""
        return self._input("elicitation", key, _form(message, schema))  # type: ignore[no-any-return]

    async def elicit_async(self, message: str, schema: Dict[str, Any], *, key: Optional[str] = None) -> Dict[str, Any]:
        """:meth:`elicit` for async tools."""
        return await self._input_async("elicitation", key, _form(message, schema))  # type: ignore[no-any-return]

    def create_message(
        self,
        messages: Union[str, List[Dict[str, Any]]],
        max_tokens: int,
        *,
        key: Optional[str] = None,
        **params: Any,
    ) -> Dict[str, Any]:
        """Asks the client's model for a completion (``sampling/createMessage``) and returns
        its ``CreateMessageResult`` (``{"role", "content", "model", "stopReason"}``).
        ``messages`` is a text (one user message) or MCP ``SamplingMessage`` objects; other
        params (``systemPrompt``, ``temperature``, ``stopSequences``, ``modelPreferences``,
        ``includeContext``, ``metadata``) are passed as they are."""
        return self._input("sampling", key, _sampling(messages, max_tokens, params))  # type: ignore[no-any-return]

    async def create_message_async(
        self,
        messages: Union[str, List[Dict[str, Any]]],
        max_tokens: int,
        *,
        key: Optional[str] = None,
        **params: Any,
    ) -> Dict[str, Any]:
        """:meth:`create_message` for async tools."""
        return await self._input_async("sampling", key, _sampling(messages, max_tokens, params))  # type: ignore[no-any-return]

    def list_roots(self, *, key: Optional[str] = None) -> List[Dict[str, Any]]:
        """The client's roots (``roots/list``): ``[{"uri": "file:///...", "name": ...}]``."""
        return list(self._input("roots", key, {}).get("roots", []))

    async def list_roots_async(self, *, key: Optional[str] = None) -> List[Dict[str, Any]]:
        """:meth:`list_roots` for async tools."""
        return list((await self._input_async("roots", key, {})).get("roots", []))

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


def _form(message: str, schema: Dict[str, Any]) -> Dict[str, Any]:
    return {"mode": "form", "message": message, "requestedSchema": schema}


def _sampling(messages: Union[str, List[Dict[str, Any]]], max_tokens: int, params: Dict[str, Any]) -> Dict[str, Any]:
    if isinstance(messages, str):
        messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
    return {**params, "messages": messages, "maxTokens": max_tokens}
