"""``MCPServer`` and ``MCPServerConfig``: the Codomyrmex server surface, served by the Rust
engine and transports.

Both protocol eras (2026-07-28 stateless, 2025-11-25 sessions) over stdio and Streamable
HTTP, with the Rust server's limits and security defaults: HTTP binds to loopback unless
told otherwise (and a public bind without authentication, a bearer token or JWT validation,
is refused), with no CORS. Python
runs only for tool, resource and prompt bodies, on threads of their own: a slow tool never
holds up ``ping`` or other calls. Not an asyncio server: serving blocks a worker thread with
the GIL released, and the coroutines here wait for it.
"""

from __future__ import annotations

import asyncio
import json
import inspect
import logging
import os
import signal
import sys
import threading
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, Union

from . import _core
from .decorators import mcp_tool, register_function
from ._registry import MCPToolRegistry

__all__ = ["MCPServer", "MCPServerConfig"]

_TRANSPORTS = ("stdio", "http")
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")

logger = logging.getLogger("codomyrmex_mcp")


@dataclass
class MCPServerConfig:
    """Configuration of an ``MCPServer``; read when the server is created.

    Attributes:
        name: server identity (``serverInfo.name``).
        version: server version (``serverInfo.version``).
        transport: what ``run()`` serves: ``"stdio"`` or ``"http"``.
        log_level: level of the ``codomyrmex_mcp`` Python logger.
        default_tool_timeout: seconds a tool call may take (0: no limit); past it the client
            gets a ``TIMEOUT`` failure at once.
        per_tool_timeouts: per-tool overrides, ``{tool_name: seconds}``.
        rate_limit_rate: calls per second over all tools (0: no limit, and over HTTP no
            per-client request limit either).
        rate_limit_burst: calls allowed at once after an idle period.
        warm_up: accepted for compatibility; there is no discovery cache to warm.
    """

    name: str = "codomyrmex-mcp-server"
    version: str = "1.0.0"
    transport: str = "stdio"
    log_level: str = "INFO"
    default_tool_timeout: float = 60.0
    per_tool_timeouts: Optional[Dict[str, float]] = None
    rate_limit_rate: float = 50.0
    rate_limit_burst: int = 100
    warm_up: bool = True

    def __post_init__(self) -> None:
        if self.transport not in _TRANSPORTS:
            raise ValueError(f"transport must be one of {_TRANSPORTS}, got {self.transport!r}")
        if str(self.log_level).upper() not in _LOG_LEVELS:
            raise ValueError(f"log_level must be one of {_LOG_LEVELS}, got {self.log_level!r}")
        if not self.default_tool_timeout >= 0:
            raise ValueError(f"default_tool_timeout must be >= 0 seconds, got {self.default_tool_timeout!r}")
        for tool, seconds in (self.per_tool_timeouts or {}).items():
            if not isinstance(seconds, (int, float)) or not seconds >= 0:
                raise ValueError(f"per_tool_timeouts[{tool!r}] must be >= 0 seconds, got {seconds!r}")
        if not self.rate_limit_rate >= 0:
            raise ValueError(f"rate_limit_rate must be >= 0, got {self.rate_limit_rate!r}")
        if not isinstance(self.rate_limit_burst, int) or self.rate_limit_burst < 1:
            raise ValueError(f"rate_limit_burst must be an integer >= 1, got {self.rate_limit_burst!r}")


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _watch_sigint(loop: asyncio.AbstractEventLoop, on_sigint: Callable[[], None]) -> bool:
    """Makes Ctrl-C reach this loop while it waits for a serving thread: Python's own handler
    only sets a flag for the main thread, which an idle loop blocked in `select` does not see
    when the signal lands on another thread (a Rust one). ``asyncio.run``'s own handler (3.11
    and later) has the same gap: it is installed with ``signal.signal``, which wakes no loop,
    so about one Ctrl-C in seven was never seen. The loop's handler is installed here in every
    version (``add_signal_handler`` wakes the loop through its self-pipe). A SIGINT the
    process ignores (a background job) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return False
    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError, ValueError):
        return False
    return True


async def _serve_in_thread(serve: Callable[[Any], None], stops: Set[Any]) -> None:
    """Runs ``serve(stop)`` on a worker thread. If this coroutine is cancelled, interrupted
    or Ctrl-C is pressed, asks serving to stop, waits for the graceful end, and re-raises
    (``KeyboardInterrupt`` for Ctrl-C). The stop stays in ``stops`` while serving, for
    ``run()`` to set should the loop end without reaching this coroutine."""
    loop = asyncio.get_running_loop()
    stop = _core.Stop()
    stops.add(stop)
    task = asyncio.current_task()
    interrupted = []

    def on_sigint() -> None:
        interrupted.append(True)
        if task is not None:
            task.cancel()

    watching = _watch_sigint(loop, on_sigint)
    try:
        future = loop.run_in_executor(None, serve, stop)
        try:
            await asyncio.shield(future)
        except BaseException:
            stop.set()
            await future
            if interrupted:
                raise KeyboardInterrupt from None
            raise
    finally:
        stops.discard(stop)
        if watching:
            loop.remove_signal_handler(signal.SIGINT)


class MCPServer:
    """An MCP server: tools, resources and prompts, served over stdio or Streamable HTTP."""

    # The registry a server serves (compatibility mode serves its own).
    _registry_class = MCPToolRegistry

    def __init__(self, config: Optional[MCPServerConfig] = None) -> None:
        self.config = config or MCPServerConfig()
        logger.setLevel(str(self.config.log_level).upper())
        self._tool_registry = self._registry_class()
        self._stops: Set[Any] = set()
        self._core = _core.Server(self._tool_registry._core, json.dumps(asdict(self.config)))

    @property
    def registry(self) -> MCPToolRegistry:
        """The served tool registry; tools added to it are announced to connected clients."""
        return self._tool_registry

    # ----- tools ---------------------------------------------------------------------------

    def tool(
        self,
        name: Optional[str] = None,
        description: Optional[str] = None,
        title: Optional[str] = None,
        output_schema: Optional[Dict[str, Any]] = None,
        ui: Optional[str] = None,
        visibility: Optional[Sequence[str]] = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Registers the decorated function (sync or async) as a tool. The schema comes from
        its type hints, the description from its docstring; the function is returned as is.
        With ``output_schema``, results (``{"result": value}``) are checked against it.

        MCP Apps: ``ui="ui://..."`` links the tool to a UI resource this server already serves
        (``add_ui_resource``), as ``_meta.ui.resourceUri``; ``visibility`` (``["model"]``,
        ``["app"]`` or both, the default) says who may call it. A ``ui`` no resource serves
        raises ``ValueError``; metadata the extension does not allow raises
        ``MCPRegistrationError``."""
        ui_meta: Dict[str, Any] = {}
        if ui is not None:
            if not isinstance(ui, str) or not self._core.serves(ui):
                raise ValueError(
                    f"tool ui={ui!r}: no resource of this server serves it; add it first with add_ui_resource()"
                )
            ui_meta["resourceUri"] = ui
        if visibility is not None:
            ui_meta["visibility"] = list(visibility)

        def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
            # An @mcp_tool function keeps its metadata; any other function is decorated here.
            tool = func if hasattr(func, "_mcp_adapter") else mcp_tool()(func)
            extra: Dict[str, Any] = {"meta": {"ui": ui_meta}} if ui_meta else {}
            register_function(
                self._tool_registry,
                tool,
                name=name,
                description=description,
                title=title,
                output_schema=output_schema,
                **extra,
            )
            return func

        return decorator

    def add_ui_resource(
        self,
        uri: str,
        html: str,
        *,
        name: Optional[str] = None,
        title: Optional[str] = None,
        description: Optional[str] = None,
        csp: Optional[Dict[str, List[str]]] = None,
        permissions: Optional[Sequence[str]] = None,
        domain: Optional[str] = None,
        prefers_border: Optional[bool] = None,
    ) -> None:
        """Serves an MCP App: ``html`` as the ``ui://`` resource ``uri``, MIME type
        ``text/html;profile=mcp-app``. ``csp`` maps ``connectDomains``, ``resourceDomains``,
        ``frameDomains`` and ``baseUriDomains`` to lists of origins; ``permissions`` names
        ``camera``, ``microphone``, ``geolocation`` or ``clipboardWrite``; ``domain`` and
        ``prefers_border`` go in ``_meta.ui`` as ``domain`` and ``prefersBorder``. Raises
        ``ValueError`` for a URI outside ``ui://`` or metadata the extension does not allow."""
        ui: Dict[str, Any] = {}
        if csp is not None:
            ui["csp"] = csp
        if permissions is not None:
            ui["permissions"] = {p: {} for p in permissions}
        if domain is not None:
            ui["domain"] = domain
        if prefers_border is not None:
            ui["prefersBorder"] = prefers_border
        self._core.add_ui_resource(uri, name or uri, html, title, description, json.dumps(ui))

    def register_tool(
        self,
        name: str,
        schema: Dict[str, Any],
        handler: Callable[..., Any],
        title: Optional[str] = None,
        output_schema: Optional[Dict[str, Any]] = None,
    ) -> None:
        """Registers ``handler`` (called with the arguments as keyword arguments). ``schema``
        is either the arguments' JSON Schema or a tool object with ``inputSchema`` (and
        optionally ``description``, ``title``, ``outputSchema``), as Codomyrmex passes it."""
        if "inputSchema" in schema:
            input_schema = schema["inputSchema"]
            description = schema.get("description")
            title = title or schema.get("title")
            output_schema = output_schema or schema.get("outputSchema")
        else:
            input_schema, description = schema, None
        self._tool_registry.register(
            name, input_schema, handler, description=description or None, title=title, output_schema=output_schema
        )

    # ----- resources and prompts -----------------------------------------------------------

    def register_resource(
        self,
        uri: str,
        name: str,
        description: Optional[str] = None,
        mime_type: str = "text/plain",
        content_provider: Optional[Callable[[], str]] = None,
    ) -> None:
        """Registers a resource whose text is ``content_provider()`` at each read."""
        self._core.add_resource(uri, name, description, mime_type, content_provider)

    def add_skills(self, path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
        """Publishes every skill under the directory ``path`` (the Skills extension, SEP-2640:
        ``skills/list``, ``skills/get``, ``resources/directory/read``, and each file as a
        ``skill://`` resource). Every directory holding a ``SKILL.md`` is a skill; its path
        under ``path`` is its skill path. The files are read once, now, through the same
        confinement as the file tools (no symlink is followed, hidden names are left out) and
        served from memory, so each digest describes exactly what a read returns.

        Returns ``{"skills": [SKILL.md URIs published], "refused": [(path, reason), ...]}``.
        Raises ``OSError`` when the directory cannot be read and ``ValueError`` when a skill is
        already published at the same URI. Call it before serving.
        """
        published, refused = self._core.add_skills(os.fspath(path))
        for skill_path, reason in refused:
            logger.warning("skill %s refused: %s", skill_path, reason)
        return {"skills": list(published), "refused": [tuple(r) for r in refused]}

    def register_prompt(
        self,
        name: str,
        description: Optional[str] = None,
        arguments: Optional[List[Dict[str, Any]]] = None,
        template: Optional[str] = None,
    ) -> None:
        """Registers a prompt: ``template`` with ``{argument}`` placeholders, filled from the
        client's arguments (``[{"name", "description", "required"}]``)."""
        text = template or ""

        def render(values: Dict[str, str]) -> str:
            return text.format_map(values)

        self._core.add_prompt(name, description or "", json.dumps(arguments or []), render)

    # ----- serving -------------------------------------------------------------------------

    async def handle_request(
        self,
        message: Dict[str, Any],
        correlation_id: Optional[str] = None,
        *,
        on_client_request: Optional[Callable[[Dict[str, Any]], Any]] = None,
        on_notification: Optional[Callable[[Dict[str, Any]], Any]] = None,
    ) -> Optional[Dict[str, Any]]:
        """Handles one JSON-RPC message on this server's in-memory connection (a legacy
        session lasts across calls) and returns the response, or None for a notification.
        ``correlation_id`` is accepted for compatibility and not used.

        ``on_notification(notification)`` (sync or async; the whole JSON-RPC notification)
        receives what the server sends while the request runs: a tool's progress
        (``notifications/progress``, when the request's ``_meta`` has a ``progressToken``)
        and log messages (``notifications/message``, at the level the client set: in
        2025-11-25 with ``logging/setLevel``, in 2026-07-28 with the request's
        ``io.modelcontextprotocol/logLevel`` in ``_meta``), in order, each before the
        response. Progress goes to the call whose token it carries; log messages and other
        notifications (list changes, resource updates: not ordered against responses) to a
        waiting call that passed ``on_notification`` (with calls in flight at once, any one
        of them). Each call's notifications are handled one at a time, in order, through a
        bounded queue (past its bound they are dropped); the listener may send requests
        itself (``handle_request`` from an async listener). What it raises is logged, not
        raised here. Without it they are dropped.

        A tool that asks the client something (``Context.elicit``, ``create_message``,
        ``list_roots``): in 2026-07-28 the response is an ``input_required`` result, and the
        caller sends the request again with ``inputResponses`` and ``requestState``, as over
        any transport. In 2025-11-25 the server sends a request of its own while the call
        waits: ``on_client_request(request)`` (sync or async; ``{"jsonrpc", "method",
        "params"}``, without an ``id``: the in-memory connection numbers its requests itself)
        returns its result (a dict), or raises to answer with an error; without it the
        request is answered with an error (``-32601``) at once, and the tool's request fails
        (``ClientRequestFailed``)."""
        text = json.dumps(message)
        loop = asyncio.get_running_loop()

        def resolved(value: Any) -> Any:  # on a Rust thread, with the GIL
            if inspect.isawaitable(value):
                value = asyncio.run_coroutine_threadsafe(_awaited(value), loop).result()
            return value

        answer: Optional[Callable[[str], str]] = None
        if on_client_request is not None:
            callback = on_client_request

            def answer_with(request_json: str) -> str:
                value = resolved(callback(json.loads(request_json)))
                if hasattr(value, "model_dump"):
                    value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
                return json.dumps(value)

            answer = answer_with
        notify: Optional[Callable[[str], None]] = None
        if on_notification is not None:
            listener = on_notification

            def notify_with(notification_json: str) -> None:
                try:
                    resolved(listener(json.loads(notification_json)))
                except Exception:  # the listener's failure is not the request's
                    logger.exception("on_notification raised")

            notify = notify_with
        # Cancelled (as asyncio.run cancels what is left at its end), the wait is abandoned
        # at once, so that the executor's thread is free and the program can exit.
        stop = _core.Stop()
        try:
            reply = await loop.run_in_executor(None, self._core.handle_json, text, answer, notify, stop)
        except asyncio.CancelledError:
            stop.set()
            raise
        return json.loads(reply) if reply is not None else None

    async def run_stdio(self) -> None:
        """Serves stdin/stdout until stdin closes or the task is cancelled. While serving,
        ``print`` goes to stderr: stdout carries the protocol."""
        saved, sys.stdout = sys.stdout, sys.stderr
        try:
            await _serve_in_thread(self._core.serve_stdio, self._stops)
        finally:
            sys.stdout = saved

    async def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        on_ready: Optional[Callable[[int], None]] = None,
        auth_token: Optional[str] = None,
        jwks: Union[str, "os.PathLike[str]", Dict[str, Any], None] = None,
        issuer: Optional[str] = None,
        audience: Optional[str] = None,
        required_scopes: Sequence[str] = (),
        allowed_hosts: Sequence[str] = (),
        allowed_origins: Sequence[str] = (),
    ) -> None:
        """Serves Streamable HTTP at ``http://host:port/mcp`` until the task is cancelled.
        Loopback by default; ``port=0`` lets the OS pick one. Once listening, writes the URL
        to stderr and calls ``on_ready(port)``.

        Authentication, as the Rust server's ``serve --http`` (a non-loopback ``host`` is
        refused without it): ``auth_token`` requires ``Authorization: Bearer <auth_token>``
        (compared in constant time; better read from the environment than written in code);
        ``jwks`` (a JWKS file's path, or the JWKS as a dict), ``issuer`` and ``audience`` (this
        server's canonical URL) verify JWT access tokens, each of which must carry every
        ``required_scopes``. A request without a valid token gets ``401`` with
        ``WWW-Authenticate``. ``allowed_hosts`` and ``allowed_origins`` add ``Host`` and
        ``Origin`` values to the loopback ones (a public name the server is reached by)."""
        options = {
            "auth_token": auth_token,
            "jwks": json.dumps(jwks) if isinstance(jwks, dict) else (None if jwks is None else os.fspath(jwks)),
            "issuer": issuer,
            "audience": audience,
            "required_scopes": list(required_scopes),
            "allowed_hosts": list(allowed_hosts),
            "allowed_origins": list(allowed_origins),
            "rate_limits": self.config.rate_limit_rate > 0,
        }
        options_json = json.dumps(options)

        def ready(bound: int) -> None:
            print(f"codomyrmex_mcp: serving MCP at http://{host}:{bound}/mcp", file=sys.stderr, flush=True)
            if on_ready is not None:
                on_ready(bound)

        await _serve_in_thread(lambda stop: self._core.serve_http(host, port, stop, ready, options_json), self._stops)

    def run(self, host: str = "127.0.0.1", port: int = 8000, **http_options: Any) -> None:
        """Serves ``config.transport`` until the input ends or Ctrl-C; in-flight calls get a
        grace period to finish. Over HTTP, ``http_options`` are :meth:`run_http`'s (such as
        ``auth_token``)."""
        if http_options and self.config.transport != "http":
            raise ValueError(f"{sorted(http_options)} are options of the HTTP transport, not of stdio")
        main = self.run_stdio() if self.config.transport == "stdio" else self.run_http(host, port, **http_options)
        try:
            asyncio.run(main)
        except KeyboardInterrupt:
            pass
        finally:
            # Should Ctrl-C have ended the loop without reaching the serving coroutine (it
            # can land anywhere before Python 3.11), serving still stops: interpreter exit
            # waits for its thread.
            for stop in list(self._stops):
                stop.set()
