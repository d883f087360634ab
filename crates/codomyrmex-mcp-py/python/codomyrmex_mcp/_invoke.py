"""How the Rust registry calls a Python handler: the invoker, the asyncio loop that runs
async tools, and the wrapping of return values into ``MCPToolResult`` JSON.

Rust calls :func:`invoke` on a blocking thread with the GIL, after the arguments passed the
tool's schema. It never raises: whatever the handler does becomes an ``MCPToolResult``. A
``str`` return value is marked (:data:`TEXT_RESULT`) so that the client's text block is the
string, not its JSON.
Not public API.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import json
import math
import os
import re
import sys
import threading
from typing import Any, Dict, Iterator, Optional, Tuple

from . import _core

_loop: Optional[asyncio.AbstractEventLoop] = None
_loop_lock = threading.Lock()

# How often a thread waiting for an async tool checks whether its call was cancelled.
_CANCEL_POLL_SECONDS = 0.05


class Adapter:
    """A handler that wants the raw arguments and the call's state (``@mcp_tool`` and
    ``MCPServer.tool`` functions: Pydantic conversion of the arguments, a context)."""

    def invoke(self, arguments: Dict[str, Any], state: Any) -> Any:  # pragma: no cover - interface
        raise NotImplementedError


def tool_loop() -> asyncio.AbstractEventLoop:
    """The asyncio loop async tools run on: one daemon thread, started on first use."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=run, name="codomyrmex-mcp-asyncio", daemon=True).start()
            ready.wait()
            _loop = loop
        return _loop


class _Cancelled(Exception):
    pass


def _await(awaitable: Any, state: Any) -> Any:
    if _loop_blocked:
        # An async tool called `execute` synchronously, blocking the tool loop: a nested async
        # tool runs on a loop of its own (this thread is a worker, not in any loop), or it
        # would wait forever for the loop it is blocking.
        return asyncio.run(_as_coroutine(awaitable))
    future = asyncio.run_coroutine_threadsafe(_as_coroutine(awaitable), tool_loop())
    while True:
        done, _ = concurrent.futures.wait([future], timeout=_CANCEL_POLL_SECONDS)
        if done:
            return future.result()
        if state is not None and state.cancelled():
            future.cancel()
            raise _Cancelled()


_loop_blocked = 0


@contextlib.contextmanager
def blocking_call() -> Iterator[None]:
    """Marks a synchronous call into Rust (``MCPToolRegistry.execute``); made from the tool
    loop's thread, it blocks the loop, so async tools it reaches must not be sent there."""
    global _loop_blocked
    try:
        here = _loop is not None and asyncio.get_running_loop() is _loop
    except RuntimeError:
        here = False
    if not here:
        yield
        return
    with _loop_lock:
        _loop_blocked += 1
    try:
        yield
    finally:
        with _loop_lock:
            _loop_blocked -= 1


async def _as_coroutine(awaitable: Any) -> Any:
    return await awaitable


def _failure(error_type: str, message: str, details: Any = None) -> str:
    # An ``MCPToolResult`` failure's JSON, written without Pydantic (the Rust side reads it
    # as its own ``McpToolResult``).
    error = {"error_type": error_type, "error_message": message, "error_details": details}
    return json.dumps({"status": "failure", "error": error}, default=str)


# An absolute path in a message: a `/` that starts a word (not a URL's `//host/...`, not the
# middle of a relative path), then everything up to a space, quote or bracket.
_ABSOLUTE_PATH = re.compile(r"(?<![\w.~/:\\-])/[^\s'\"`,;()<>\[\]{}]+")


def _basename(path: str) -> str:
    name = os.path.basename(path.rstrip("/"))
    return name or "/"


def _without_paths(text: str) -> str:
    """``text`` with every absolute path cut to its last component: the server's layout
    never reaches the client (SECURITY.md)."""
    return _ABSOLUTE_PATH.sub(lambda m: _basename(m.group(0)), text)


def client_message(e: BaseException) -> str:
    """The message of a tool's exception as the client sees it: an ``OSError``'s file names
    by their last component (``[Errno 2] No such file or directory: 'name.txt'``), and any
    other absolute path in the text likewise."""
    if isinstance(e, OSError) and e.strerror is not None:
        text = f"[Errno {e.errno}] {e.strerror}" if e.errno is not None else str(e.strerror)
        names = [n for n in (e.filename, e.filename2) if n is not None]
        shown = [repr(_basename(os.fsdecode(n))) if isinstance(n, (str, bytes)) else repr(n) for n in names]
        if shown:
            text += ": " + " -> ".join(shown)
        return _without_paths(text)
    return _without_paths(str(e))


def _not_plain(value: Any) -> Any:
    raise TypeError("not plain JSON")


# Made once: `json.dumps` with options builds an encoder at every call.
_encode = json.JSONEncoder(allow_nan=False, default=_not_plain, separators=(",", ":")).encode


def _plain_json(value: Any) -> str:
    """``value`` as JSON if it is plain JSON (scalars written directly, as ``json`` writes
    them); raises ``TypeError`` or ``ValueError`` otherwise."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value)
    if kind is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if kind is float and math.isfinite(value):
        return float.__repr__(value)
    return _encode(value)


def wrap(value: Any) -> str:
    """A handler's return value as ``MCPToolResult`` JSON: a result as it is, anything else
    as ``data={"result": value}``. Plain JSON values (``str``, numbers, ``bool``, ``None``,
    lists and dicts of them) are written by ``json``; anything else (models, dataclasses,
    dates, NaN, ...) by Pydantic, as before."""
    try:
        return '{"status":"success","data":{"result":' + _plain_json(value) + "}}"
    except (TypeError, ValueError, RecursionError):
        pass
    from pydantic_core import to_jsonable_python

    from .schemas.mcp_schemas import MCPToolResult

    if isinstance(value, MCPToolResult):
        return value.model_dump_json()
    return MCPToolResult(status="success", data={"result": to_jsonable_python(value)}).model_dump_json()


# Put by `invoke` before the JSON of a result whose value is a string: the Rust side sends
# that string as the text block (registry.rs, `TEXT_RESULT`).
TEXT_RESULT = "text:"


def invoke(handler: Any, arguments_json: str, state: Any) -> str:
    """Calls ``handler`` with the arguments and returns the outcome as ``MCPToolResult`` JSON,
    after :data:`TEXT_RESULT` when the handler returned a ``str``."""
    value, failure = run(handler, arguments_json, state)
    if failure is not None:
        return failure
    try:
        if type(value) is str:
            # A model reads a string as text: the text block is the string itself, with
            # {"result": value} as structuredContent, as the Python SDK sends it.
            return TEXT_RESULT + wrap(value)
        return wrap(value)
    except Exception as e:
        return result_not_serializable(e)


def result_not_serializable(e: BaseException) -> str:
    """The failure for a return value that :func:`wrap` cannot write."""
    return _failure(
        "ResultNotSerializable", f"the tool's return value cannot be written as JSON: {client_message(e)}"
    )


def run(handler: Any, arguments_json: str, state: Any) -> Tuple[Any, Optional[str]]:
    """Calls ``handler`` with the arguments: ``(value, None)`` with what it returned, or
    ``(None, failure)`` with the ``MCPToolResult`` JSON of its failure. Never raises."""
    if handler is None:
        return None, _failure("NoHandler", "No handler registered for this tool")
    try:
        arguments = json.loads(arguments_json)
        if isinstance(handler, Adapter):
            value = handler.invoke(arguments, state)
        else:
            value = handler(**arguments)
        if inspect.isawaitable(value):
            value = _await(value, state)
    except _core.InputRequired:
        # The engine answers InputRequiredResult from the requests the tool made.
        return None, _failure("InputRequired", "input is required from the client")
    except (_Cancelled, concurrent.futures.CancelledError, asyncio.CancelledError):
        return None, _failure("Cancelled", "The call was cancelled")
    except Exception as e:  # a tool's exception is its failure, never the server's
        # Without Pydantic imported, nothing raised is one of its ValidationErrors.
        pydantic = sys.modules.get("pydantic")
        if pydantic is not None and isinstance(e, pydantic.ValidationError):
            return None, _failure("ValidationError", str(e), {"errors": json.loads(e.json())})
        return None, _failure(type(e).__name__, client_message(e))
    return value, None
