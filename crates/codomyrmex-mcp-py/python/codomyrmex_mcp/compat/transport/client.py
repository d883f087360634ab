"""``codomyrmex.model_context_protocol.transport.client`` in compatibility mode: ``MCPClient``,
``MCPClientConfig`` and ``MCPClientError``, with the original's API, on the Rust ``McpClient``.

``MCPClient`` keeps the original's shape: a JSON-RPC ``_send`` with retries and exponential
back-off over a ``_transport`` (any object with ``send(message, *, timeout)``,
``send_notification(message)`` and ``close()`` coroutines, as the original's tests plug in).
The transports ``connect_stdio`` and ``connect_http`` open are the library's client
(``codomyrmex_mcp._core.Client``): the handshake, protocol era (``server/discover`` for
2026-07-28, else ``initialize``), Streamable HTTP sessions and streams, OAuth and pagination
are the Rust client's, and no thread waits while a request is in flight. Where the original
differs:

- ``initialize()`` over these transports returns the result of the library's handshake, which
  chose the version (``config.protocol_version`` is what an ``initialize`` of the original's
  shape carries on a transport of your own); ``config.era`` (``"auto"``, ``"modern"``,
  ``"legacy"``) picks the era.
- ``list_tools()`` (and the other lists) return every page, not the first.
- ``connect_http`` posts to ``base_url + "/mcp"`` as the original does, unless ``base_url``
  already ends with ``/mcp``; it also takes ``headers``, ``token``, ``oauth``, ``authorize``
  and ``ca_file``. ``connection_pool_size`` is kept but the library's HTTP client manages its
  own connections.

Both context managers work with ``async with`` (yielding an ``MCPClient``) and with ``with``
(yielding a :class:`SyncMCPClient`, whose methods block). A client left open is closed at
interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib
import json
import logging
import threading
import time
import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from ... import _core

logger = logging.getLogger(__name__)

T = TypeVar("T")

# The list methods whose every page the library's client walks (honouring ``ttlMs``).
_LISTS = frozenset({"tools/list", "resources/list", "resources/templates/list", "prompts/list"})


class MCPClientError(Exception):
    """Raised when the MCP client encounters an error."""


@dataclass
class MCPClientConfig:
    """How an ``MCPClient`` connects: its ``clientInfo`` (``name``, ``version``), the default
    per-request ``timeout_seconds``, the ``protocol_version`` an ``initialize`` of the
    original's shape carries, retries (``max_retries`` attempts, ``retry_delay`` seconds
    doubled after each), ``health_check_interval`` and ``connection_pool_size`` (kept for the
    original's API), and ``era``: which protocol era the library's transports speak
    (``"auto"`` probes with ``server/discover`` and falls back to ``initialize``)."""

    name: str = "codomyrmex-mcp-client"
    version: str = "0.1.0"
    timeout_seconds: float = 30.0
    protocol_version: str = "2025-06-18"
    max_retries: int = 3
    retry_delay: float = 0.5
    health_check_interval: float = 0.0
    connection_pool_size: int = 10
    era: str = "auto"


class MCPClient:
    """A client of one MCP server. Open one with :meth:`connect_stdio` or :meth:`connect_http`
    (as ``async with`` or ``with``), or set ``_transport`` to a transport of your own."""

    def __init__(self, config: Optional[MCPClientConfig] = None) -> None:
        self.config = config or MCPClientConfig()
        self._request_id = 0
        self._initialized = False
        self._server_info: Dict[str, Any] = {}
        self._transport: Optional[Any] = None

    # -- connection factories -------------------------------------------------------------

    @classmethod
    def connect_stdio(
        cls,
        command: Sequence[str],
        *,
        config: Optional[MCPClientConfig] = None,
        env: Optional[Dict[str, str]] = None,
        cwd: Optional[str] = None,
    ) -> "_StdioContextManager":
        """Starts ``command`` (program and arguments; ``env`` added to the inherited
        environment) and speaks MCP over its stdin and stdout. A context manager: ``async
        with`` yields the initialized ``MCPClient``, ``with`` a :class:`SyncMCPClient`."""
        return _StdioContextManager(list(command), config, env, cwd)

    @classmethod
    def connect_http(
        cls,
        base_url: str,
        *,
        config: Optional[MCPClientConfig] = None,
        headers: Optional[Dict[str, str]] = None,
        token: Optional[str] = None,
        oauth: Optional[Dict[str, Any]] = None,
        authorize: Optional[Callable[[str], str]] = None,
        ca_file: Optional[str] = None,
    ) -> "_HTTPContextManager":
        """Connects to the Streamable HTTP endpoint ``base_url + "/mcp"``. ``token`` is sent as
        ``Authorization: Bearer``; ``oauth`` (a dict: ``client_id``, ``client_secret``,
        ``client_credentials``, ``token_file``, ``redirect_uri``, ``dpop``, ``wait``) authorizes
        when the server asks, with ``authorize(url) -> redirected_url`` taking the user through
        an authorization code flow (else a loopback listener and a URL on stderr). ``ca_file``
        adds trusted CA certificates for ``https://``."""
        options = {"headers": headers or {}, "token": token, "oauth": oauth, "ca_file": ca_file}
        return _HTTPContextManager(base_url, config, options, authorize)

    # -- JSON-RPC ---------------------------------------------------------------------------

    def _next_id(self) -> int:
        self._request_id += 1
        return self._request_id

    async def _send(
        self, method: str, params: Optional[Dict[str, Any]] = None, *, timeout: Optional[float] = None
    ) -> Dict[str, Any]:
        """Sends a request and returns its result. A JSON-RPC error is an ``MCPClientError`` at
        once; a timeout or connection failure is tried again, ``config.max_retries`` attempts in
        all, waiting ``retry_delay`` seconds doubled after each."""
        if self._transport is None:
            raise MCPClientError(f"cannot send {method}: the client is not connected (use a context manager)")
        message = {"jsonrpc": "2.0", "id": self._next_id(), "method": method, "params": params or {}}
        wait = timeout or self.config.timeout_seconds
        attempts = max(1, self.config.max_retries)
        failure: Optional[BaseException] = None
        for attempt in range(1, attempts + 1):
            try:
                response = await self._transport.send(message, timeout=wait)
            except (TimeoutError, asyncio.TimeoutError, OSError) as e:
                failure = e
                if attempt == attempts:
                    logger.error("MCP request %s failed after %d attempts: %s", method, attempts, e)
                    break
                delay = self.config.retry_delay * 2 ** (attempt - 1)
                logger.warning("MCP request %s attempt %d/%d failed (%s); again in %.2fs", method, attempt, attempts, e, delay)
                await asyncio.sleep(delay)
                continue
            if not isinstance(response, dict):
                raise MCPClientError(f"RPC error on {method}: the answer is not a JSON object")
            error = response.get("error")
            if error is not None:
                detail = error.get("message", error) if isinstance(error, dict) else error
                raise MCPClientError(f"RPC error on {method}: {detail}")
            result = response.get("result", {})
            return result if isinstance(result, dict) else {"result": result}
        raise MCPClientError(f"Request {method} failed after {attempts} retries: {failure}")

    async def _notify(self, method: str, params: Optional[Dict[str, Any]] = None) -> None:
        """Sends a notification (no answer)."""
        if self._transport is None:
            raise MCPClientError(f"cannot send {method}: the client is not connected")
        await self._transport.send_notification({"jsonrpc": "2.0", "method": method, "params": params or {}})

    # -- lifecycle --------------------------------------------------------------------------

    async def initialize(self) -> Dict[str, Any]:
        """The handshake: ``initialize`` (or, in the 2026-07-28 era, ``server/discover``),
        then ``notifications/initialized``. Returns the server's result."""
        params = {
            "protocolVersion": self.config.protocol_version,
            "clientInfo": {"name": self.config.name, "version": self.config.version},
            "capabilities": {},
        }
        result = await self._send("initialize", params)
        self._server_info = result
        self._initialized = True
        await self._notify("notifications/initialized")
        info = result.get("serverInfo") or {}
        logger.info("MCP client initialized: server %s %s", info.get("name", "?"), info.get("version", "?"))
        return result

    @property
    def server_info(self) -> Dict[str, Any]:
        """The handshake's result (``serverInfo``, ``capabilities``, ``protocolVersion``)."""
        return self._server_info

    @property
    def protocol_version(self) -> Optional[str]:
        """The negotiated protocol version, over the library's transports."""
        transport = self._transport
        return transport.protocol_version() if isinstance(transport, _NativeTransport) else None

    async def close(self) -> None:
        """Closes the connection (a stdio server is asked to exit, then killed); again does
        nothing."""
        transport, self._transport = self._transport, None
        self._initialized = False
        if transport is not None:
            await transport.close()

    # -- requests ---------------------------------------------------------------------------

    async def health_check(self) -> Dict[str, Any]:
        """``{"ok", "latency_ms", "server"}`` after a ``ping`` (or, should the server not answer
        it, a ``tools/list``); ``{"ok": False, "latency_ms", "error"}`` when neither works."""
        start = time.monotonic()

        def elapsed() -> float:
            return round((time.monotonic() - start) * 1000, 2)

        try:
            await self._send("ping", timeout=5.0)
        except MCPClientError:
            try:
                await self._send("tools/list", timeout=5.0)
            except Exception as e:
                return {"ok": False, "latency_ms": elapsed(), "error": str(e)}
        return {"ok": True, "latency_ms": elapsed(), "server": self._server_info}

    async def list_tools(self) -> List[Dict[str, Any]]:
        """The server's tools."""
        return list((await self._send("tools/list")).get("tools", []))

    async def call_tool(
        self, name: str, arguments: Optional[Dict[str, Any]] = None, *, timeout: Optional[float] = None
    ) -> Dict[str, Any]:
        """Calls a tool and returns its ``CallToolResult``. When it is an error result whose text
        is a Codomyrmex ``MCPToolError``, that error is under ``"_error"``."""
        result = await self._send("tools/call", {"name": name, "arguments": arguments or {}}, timeout=timeout)
        if result.get("isError"):
            parsed = _tool_error(result)
            if parsed is not None:
                result["_error"] = parsed
        return result

    async def list_resources(self) -> List[Dict[str, Any]]:
        """The server's resources."""
        return list((await self._send("resources/list")).get("resources", []))

    async def read_resource(self, uri: str) -> Dict[str, Any]:
        """``resources/read``: ``{"contents": [...]}``."""
        return await self._send("resources/read", {"uri": uri})

    async def list_prompts(self) -> List[Dict[str, Any]]:
        """The server's prompts."""
        return list((await self._send("prompts/list")).get("prompts", []))

    async def get_prompt(self, name: str, arguments: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """``prompts/get``: ``{"messages": [...]}``."""
        return await self._send("prompts/get", {"name": name, "arguments": arguments or {}})


def _tool_error(result: Dict[str, Any]) -> Any:
    """The ``MCPToolError`` an error result's first text block holds, if it holds one."""
    try:
        # compat.errors (Codomyrmex's MCPToolError) is looked up when needed: the client
        # works without it.
        errors = importlib.import_module("codomyrmex_mcp.compat.errors")
        content = result.get("content") or [{}]
        return errors.MCPToolError.from_json(content[0].get("text", ""))
    except Exception as e:  # an error result of another shape stays as it is
        logger.debug("not a structured MCPToolError: %s", e)
        return None


# -- transports ---------------------------------------------------------------------------


class _Transport(ABC):
    """What ``MCPClient`` sends through: one JSON-RPC message at a time."""

    @abstractmethod
    async def send(self, message: Dict[str, Any], *, timeout: float = 30.0) -> Dict[str, Any]:
        """Sends a request; its response message."""

    @abstractmethod
    async def send_notification(self, message: Dict[str, Any]) -> None:
        """Sends a notification."""

    @abstractmethod
    async def close(self) -> None:
        """Ends the connection."""


# The library's clients not closed yet, closed at interpreter exit.
_OPEN: "weakref.WeakSet[_NativeTransport]" = weakref.WeakSet()
_OPEN_LOCK = threading.Lock()


@atexit.register
def _close_open_clients() -> None:
    with _OPEN_LOCK:
        left = list(_OPEN)
    for transport in left:
        transport.close_now(grace=0.5)


class _NativeTransport(_Transport):
    """A transport that is the library's client (``_core.Client``): ``initialize`` is its
    handshake, lists are walked to the end, errors come back as JSON-RPC error responses
    (from the server) or as ``TimeoutError`` / ``ConnectionError`` (retried) and
    ``MCPClientError`` (not)."""

    def __init__(self, era: str = "auto") -> None:
        self._era = era
        self._core: Optional[Any] = None
        self._handshaken = False

    def _open(self) -> Any:
        raise NotImplementedError

    def _client(self) -> Any:
        if self._core is None:
            try:
                self._core = self._open()
            except _core.ClientFailure as e:
                raise MCPClientError(_failure_text(e.args)) from None
            with _OPEN_LOCK:
                _OPEN.add(self)
        return self._core

    def protocol_version(self) -> Optional[str]:
        """The negotiated version, once the handshake succeeded."""
        return None if self._core is None else self._core.protocol_version()

    async def _run(self, op: str, method: str, params: Dict[str, Any], timeout: Optional[float]) -> Tuple[Optional[str], str, str]:
        client = self._client()
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[Tuple[Optional[str], str, str]]" = loop.create_future()

        def settle(outcome: Tuple[Optional[str], str, str]) -> None:
            if not future.done():
                future.set_result(outcome)

        def done(kind: Optional[str], text: str, data: str) -> None:  # from a Rust thread
            loop.call_soon_threadsafe(settle, (kind, text, data))

        pending = client.call_async(op, method, json.dumps(params), timeout, done)
        try:
            return await future
        except asyncio.CancelledError:
            pending.cancel()  # the request is cancelled on the server
            raise

    async def send(self, message: Dict[str, Any], *, timeout: float = 30.0) -> Dict[str, Any]:
        method = message.get("method")
        if not isinstance(method, str):
            raise MCPClientError("a request needs a method")
        params = message.get("params") or {}
        if method == "initialize":
            op, name = "handshake", self._era
        elif method in _LISTS and "cursor" not in params:
            op, name = "list", method
        else:
            op, name = "request", method
            if method == "ping" and self._core is not None and self._core.era() == "modern":
                name = "server/discover"  # 2026-07-28 has no ping
        kind, text, data = await self._run(op, name, params, timeout)
        reply: Dict[str, Any] = {"jsonrpc": "2.0", "id": message.get("id")}
        if kind is None:
            result = json.loads(text)
            if op == "handshake":
                self._handshaken = True
                result = self._as_initialize_result(result)
            reply["result"] = result
            return reply
        if kind == "server":
            reply["error"] = json.loads(data)
            return reply
        if kind == "timeout":
            raise TimeoutError(text)
        if kind == "transport":
            raise ConnectionError(text)
        raise MCPClientError(_failure_text((kind, text, data), method))

    def _as_initialize_result(self, result: Any) -> Any:
        """A 2026-07-28 discover result with the fields of an ``initialize`` result a
        Codomyrmex caller reads: ``serverInfo`` (from its ``_meta``) and ``protocolVersion``
        (the one negotiated)."""
        if not isinstance(result, dict):
            return result
        info = (result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo")
        if "serverInfo" not in result and isinstance(info, dict):
            result["serverInfo"] = info
        version = self.protocol_version()
        if "protocolVersion" not in result and version is not None:
            result["protocolVersion"] = version
        return result

    async def send_notification(self, message: Dict[str, Any]) -> None:
        method = message.get("method")
        if method == "notifications/initialized" and self._handshaken:
            return  # the library's handshake sent it
        if not isinstance(method, str):
            raise MCPClientError("a notification needs a method")
        kind, text, data = await self._run("notify", method, message.get("params") or {}, None)
        if kind is not None:
            raise MCPClientError(_failure_text((kind, text, data), method))

    async def close(self) -> None:
        if self._core is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.close_now)

    def close_now(self, grace: float = 2.0) -> None:
        """Closes the library's client, blocking (at most ``grace`` seconds for a stdio
        server to exit, then it is killed)."""
        core, self._core = self._core, None
        with _OPEN_LOCK:
            _OPEN.discard(self)
        if core is not None:
            core.close(grace)


def _failure_text(args: Tuple[Any, ...], method: Optional[str] = None) -> str:
    """A ``ClientFailure``'s ``(kind, message, data)`` as a sentence naming ``method``."""
    kind, message = (tuple(args) + (None, None))[:2]
    what = f"{method} failed: " if method else ""
    if kind == "closed":
        return f"{what}the server closed the connection"
    return f"{what}{message}"


class _StdioTransport(_NativeTransport):
    """A server started as a child process, over its stdin and stdout."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        config: Optional[MCPClientConfig] = None,
        env: Optional[Dict[str, str]] = None,
        cwd: Optional[str] = None,
    ) -> None:
        config = config or MCPClientConfig()
        super().__init__(config.era)
        if not command:
            raise MCPClientError("connect_stdio needs a command to start")
        self._command = list(command)
        self._env = dict(env or {})
        self._cwd = cwd
        self._options = {"name": config.name, "version": config.version}

    def _open(self) -> Any:
        program, *args = self._command
        return _core.Client.stdio(program, args, json.dumps(self._env), self._cwd, json.dumps(self._options))


class _HTTPTransport(_NativeTransport):
    """A Streamable HTTP endpoint, ``base_url + "/mcp"``."""

    def __init__(
        self,
        base_url: str,
        *,
        pool_size: int = 10,
        config: Optional[MCPClientConfig] = None,
        options: Optional[Dict[str, Any]] = None,
        authorize: Optional[Callable[[str], str]] = None,
    ) -> None:
        config = config or MCPClientConfig()
        super().__init__(config.era)
        self._base_url = base_url.rstrip("/")
        self._pool_size = pool_size
        self._options = {"name": config.name, "version": config.version, **(options or {})}
        self._authorize = authorize

    @property
    def url(self) -> str:
        """The endpoint posted to."""
        return self._base_url if self._base_url.endswith("/mcp") else self._base_url + "/mcp"

    def _open(self) -> Any:
        return _core.Client.http(self.url, json.dumps(self._options), self._authorize)


# -- context managers ---------------------------------------------------------------------


class _ContextManager:
    """Opens the transport and the handshake on entry, closes on exit; ``async with`` yields
    the ``MCPClient``, ``with`` a :class:`SyncMCPClient`."""

    def __init__(self, config: Optional[MCPClientConfig]) -> None:
        self._config = config or MCPClientConfig()
        self._client: Optional[MCPClient] = None
        self._sync: Optional[SyncMCPClient] = None

    def _transport(self) -> _NativeTransport:
        raise NotImplementedError

    async def __aenter__(self) -> MCPClient:
        client = MCPClient(self._config)
        client._transport = self._transport()
        try:
            await client.initialize()
        except BaseException:
            await client.close()
            raise
        self._client = client
        return client

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.close()

    def __enter__(self) -> "SyncMCPClient":
        _no_running_loop()
        sync = SyncMCPClient(MCPClient(self._config))
        sync.client._transport = self._transport()
        try:
            sync.initialize()
        except BaseException:
            sync.close()
            raise
        self._sync = sync
        return sync

    def __exit__(self, *exc: object) -> None:
        if self._sync is not None:
            self._sync.close()


class _StdioContextManager(_ContextManager):
    def __init__(
        self, command: List[str], config: Optional[MCPClientConfig], env: Optional[Dict[str, str]], cwd: Optional[str]
    ) -> None:
        super().__init__(config)
        self._command, self._env, self._cwd = command, env, cwd

    def _transport(self) -> _NativeTransport:
        return _StdioTransport(self._command, config=self._config, env=self._env, cwd=self._cwd)


class _HTTPContextManager(_ContextManager):
    def __init__(
        self,
        base_url: str,
        config: Optional[MCPClientConfig],
        options: Dict[str, Any],
        authorize: Optional[Callable[[str], str]],
    ) -> None:
        super().__init__(config)
        self._base_url, self._options, self._authorize = base_url, options, authorize

    def _transport(self) -> _NativeTransport:
        return _HTTPTransport(
            self._base_url,
            pool_size=self._config.connection_pool_size,
            config=self._config,
            options=self._options,
            authorize=self._authorize,
        )


def _no_running_loop() -> None:
    """Refuses blocking use from inside a running event loop (it would stall that loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise MCPClientError("a blocking client cannot run inside a running event loop: use `async with` there")


class SyncMCPClient:
    """An ``MCPClient`` for code without an event loop: the same methods, blocking. Each runs
    on an event loop of the client's own; not for use inside a running loop (use ``async
    with`` there)."""

    def __init__(self, client: MCPClient) -> None:
        self.client = client
        self._loop = asyncio.new_event_loop()

    def _run(self, work: Callable[[], Awaitable[T]]) -> T:
        if self._loop.is_closed():
            raise MCPClientError("the client is closed")
        _no_running_loop()
        return self._loop.run_until_complete(work())

    @property
    def server_info(self) -> Dict[str, Any]:
        """The handshake's result."""
        return self.client.server_info

    @property
    def protocol_version(self) -> Optional[str]:
        """The negotiated protocol version."""
        return self.client.protocol_version

    def initialize(self) -> Dict[str, Any]:
        """:meth:`MCPClient.initialize`."""
        return self._run(lambda: self.client.initialize())

    def health_check(self) -> Dict[str, Any]:
        """:meth:`MCPClient.health_check`."""
        return self._run(lambda: self.client.health_check())

    def list_tools(self) -> List[Dict[str, Any]]:
        """:meth:`MCPClient.list_tools`."""
        return self._run(lambda: self.client.list_tools())

    def call_tool(self, name: str, arguments: Optional[Dict[str, Any]] = None, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """:meth:`MCPClient.call_tool`."""
        return self._run(lambda: self.client.call_tool(name, arguments, timeout=timeout))

    def list_resources(self) -> List[Dict[str, Any]]:
        """:meth:`MCPClient.list_resources`."""
        return self._run(lambda: self.client.list_resources())

    def read_resource(self, uri: str) -> Dict[str, Any]:
        """:meth:`MCPClient.read_resource`."""
        return self._run(lambda: self.client.read_resource(uri))

    def list_prompts(self) -> List[Dict[str, Any]]:
        """:meth:`MCPClient.list_prompts`."""
        return self._run(lambda: self.client.list_prompts())

    def get_prompt(self, name: str, arguments: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        """:meth:`MCPClient.get_prompt`."""
        return self._run(lambda: self.client.get_prompt(name, arguments))

    def close(self) -> None:
        """Closes the connection and the client's loop; again does nothing."""
        if self._loop.is_closed():
            return
        _no_running_loop()
        try:
            self._loop.run_until_complete(self.client.close())
        finally:
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()

    def __enter__(self) -> "SyncMCPClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["MCPClient", "MCPClientConfig", "MCPClientError", "SyncMCPClient"]
