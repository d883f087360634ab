"""``MCPServer`` in compatibility mode: plain :class:`codomyrmex_mcp.MCPServer` (the Rust
engine and transports), answering ``handle_request`` in process as Codomyrmex's server does.

What differs from plain, in process (``handle_request``, ``_call_tool``, ``_dispatch``):

- **An implicit session.** Any request is answered without a prior ``initialize``: the first
  message opens the in-memory connection's session (with the client's ``initialize`` when
  that is the first message, else as the newest legacy revision). A later ``initialize``
  is answered from that session, with the client's version when it is supported.
- **Capabilities only for kinds with something registered** (``tools``, ``resources``,
  ``prompts``).
- **A tool error's text is the original's JSON error object** (``code``, ``message``,
  ``correlation_id``, ``tool_name``, ``module``), whatever failed: the tool, its arguments,
  its deadline, the rate limit.
- **No ``structuredContent`` for a tool without an output schema**, success or error.
  What a tool answers itself (its result, or what it raised) is shaped before the engine
  sends it (:mod:`..tool_answers`), so it is the same over stdio, HTTP and in process;
  the failures the engine decides (arguments, deadline, rate limit) are reshaped here, in
  process only.
- **Arguments coerced** before they are validated, as the original does (a string for an
  integer, number or boolean property, when it reads as one).
- ``MCPServer(call_tool_fn=...)`` answers ``tools/call`` with that function;
  ``tool()`` writes the original's simple schema (each parameter ``{"type",
  "description"}``); ``register_tool`` and the registry take Codomyrmex's looser schemas.

Kept as the specification says (listed as exceptions in docs/codomyrmex-compat.md): an
unknown tool is a JSON-RPC error, an unknown method ``-32601``, ``initialize`` answers the
client's version when supported. Over stdio and HTTP, what is registered (names,
descriptions, schemas) and what a tool answers are Codomyrmex's; the session, capabilities,
argument coercion and the engine's own failures are plain's there.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import inspect
import itertools
import json
import logging
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..._core import ConfinedRoot
from ...server import MCPServer as _PlainServer
from ...server import MCPServerConfig
from ..schemas.mcp_schemas import MCPToolRegistry
from ..tool_answers import error_result, is_error_object

__all__ = ["MCPServer", "MCPServerConfig"]

logger = logging.getLogger("codomyrmex_mcp.compat")

# The legacy (initialize) revisions the engine negotiates, newest first.
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

_CLIENT_INFO = {"name": "codomyrmex-mcp-compat", "version": "0"}
_LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1"}
_MIME_TYPES = {".txt": "text/plain", ".json": "application/json", ".md": "text/markdown", ".py": "text/x-python"}

#: The most bytes one ``resources/read`` of a ``register_file_resource`` file reads (the same
#: cap as the library's ``ServeDirectory``); a larger file is refused, whatever size it reports.
FILE_RESOURCE_CAP = 16 * 1024 * 1024


class _ConfinedFile:
    """One file read through ``ConfinedRoot``: its directory is the root, its name the path.
    Every refusal is an ``OSError`` (or ``PermissionError``, ``FileNotFoundError``,
    ``IsADirectoryError``) or ``ValueError`` whose message names the file by ``name`` only."""

    def __init__(self, directory: str, name: str) -> None:
        self._directory = directory
        self._name = name
        self._lock = threading.Lock()
        self._root: Optional[ConfinedRoot] = None
        with contextlib.suppress(OSError):
            self._root = ConfinedRoot(directory)

    def _opened(self) -> ConfinedRoot:
        with self._lock:
            if self._root is None:
                try:
                    self._root = ConfinedRoot(self._directory)
                except OSError:
                    # ConfinedRoot's message carries the directory's path: not for the client.
                    raise FileNotFoundError(f"{self._name}: its directory does not exist or cannot be opened") from None
            return self._root

    def read_text(self) -> str:
        root = self._opened()
        if self._name in ("", ".", ".."):
            raise IsADirectoryError(f"{self._name}: is a directory")
        # The name as a relative path: ConfinedRoot's message is "<name>: <reason>".
        data = root.read(self._name, FILE_RESOURCE_CAP)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"{self._name}: is not UTF-8 text") from None

_ids = itertools.count(1)

def _failure_of(result: Dict[str, Any], structured: Any) -> Tuple[str, str, Any]:
    """``(error_type, message, details)`` of an ``isError`` result: from its failure detail
    when sent, else from its text (``Type: message``)."""
    if isinstance(structured, dict) and isinstance(structured.get("error_type"), str):
        return structured["error_type"], str(structured.get("error_message", "")), structured.get("error_details")
    content = result.get("content")
    text = ""
    if isinstance(content, list) and content and isinstance(content[0], dict):
        text = str(content[0].get("text", ""))
    first, _, rest = text.partition("\nDetails: ")
    try:
        details = json.loads(rest) if rest else None
    except ValueError:
        details = None
    kind, sep, message = first.partition(": ")
    return (kind, message, details) if sep and kind.isidentifier() else ("", first, details)


# Codomyrmex's `with_correlation(cid)`, when the checkout has it; False when it does not.
_with_correlation: Any = None


def _correlation(correlation_id: Optional[str]) -> Any:
    """The context in which a request is handled: Codomyrmex's correlation context (its
    ``logging_monitoring.core.correlation.with_correlation``) when importable, as the
    original's server enters it, else none."""
    global _with_correlation
    if _with_correlation is None:
        try:
            from codomyrmex.logging_monitoring.core.correlation import with_correlation  # type: ignore[import-not-found]

            _with_correlation = with_correlation
        except ImportError:
            _with_correlation = False
    return _with_correlation(correlation_id) if _with_correlation else contextlib.nullcontext()


def _client_info(params: Dict[str, Any]) -> Dict[str, Any]:
    info = params.get("clientInfo")
    if isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str):
        return info
    return dict(_CLIENT_INFO)


class MCPServer(_PlainServer):
    """Codomyrmex's ``MCPServer``: plain's engine and transports, Codomyrmex's answers in
    process (see the module docs)."""

    _registry_class = MCPToolRegistry
    _tool_registry: MCPToolRegistry

    def __init__(self, config: Optional[MCPServerConfig] = None, call_tool_fn: Optional[Callable[..., Any]] = None) -> None:
        super().__init__(config)
        self._resources: Dict[str, Dict[str, Any]] = {}
        self._prompts: Dict[str, Dict[str, Any]] = {}
        self._initialized = False
        self._session: Optional[Dict[str, Any]] = None
        self._session_lock = threading.Lock()
        if call_tool_fn is not None:
            # As in the original: tools/call goes to this function instead of the registry.
            self._call_tool = call_tool_fn  # type: ignore[method-assign]

    # ----- counts --------------------------------------------------------------------------

    @property
    def tool_count(self) -> int:
        """Number of registered tools."""
        return len(self._tool_registry)

    @property
    def resource_count(self) -> int:
        """Number of registered resources."""
        return len(self._resources)

    @property
    def prompt_count(self) -> int:
        """Number of registered prompts."""
        return len(self._prompts)

    # ----- registration --------------------------------------------------------------------

    def tool(
        self,
        name: Optional[str] = None,
        description: Optional[str] = None,
        title: Optional[str] = None,
        output_schema: Optional[Dict[str, Any]] = None,
        ui: Optional[str] = None,
        visibility: Optional[Sequence[str]] = None,
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Registers the decorated function as the original does: its own name (no prefix),
        the description or the raw docstring, and a simple schema (each parameter a
        ``string``, ``integer``, ``number`` or ``boolean`` with ``"<name> parameter"`` as
        its description; those without a default required).

        The original has no MCP Apps: ``ui`` and ``visibility`` raise ``NotImplementedError``
        here (``codomyrmex_mcp.MCPServer.tool`` takes them)."""
        if ui is not None or visibility is not None:
            raise NotImplementedError(
                "MCP Apps (ui=, visibility=) are not part of Codomyrmex compatibility mode; "
                "use codomyrmex_mcp.MCPServer.tool"
            )

        def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
            tool_name = name or func.__name__
            self._tool_registry.register(tool_name, _simple_tool_object(func, tool_name, description, title, output_schema), func)
            return func

        return decorator

    def register_tool(
        self,
        name: str,
        schema: Dict[str, Any],
        handler: Callable[..., Any],
        title: Optional[str] = None,
        output_schema: Optional[Dict[str, Any]] = None,
    ) -> None:
        """Registers ``handler``; ``schema`` is a tool object (``name``, ``description``,
        ``inputSchema``) or an argument schema, stored as given (``title`` and
        ``output_schema`` are written into it, as the original does)."""
        if title:
            schema["title"] = title
        if output_schema:
            schema["outputSchema"] = output_schema
        self._tool_registry.register(name, schema, handler)

    def register_resource(
        self,
        uri: str,
        name: str,
        description: Optional[str] = None,
        mime_type: str = "text/plain",
        content_provider: Optional[Callable[[], str]] = None,
    ) -> None:
        """Registers a resource whose text is ``content_provider()`` at each read."""
        super().register_resource(uri, name, description, mime_type, content_provider)
        self._resources[uri] = {"uri": uri, "name": name, "description": description, "mimeType": mime_type, "provider": content_provider}

    def register_file_resource(self, path: str) -> None:
        """Registers the file at ``path`` as a resource (``file://`` and its absolute path),
        read at each ``resources/read``; the MIME type from its suffix.

        Unlike the original's ``Path.read_text()``, each read goes through the library's one
        confinement (``ConfinedRoot``, issue #26): the file's directory is the root, opened
        once here (or at the first read when it does not exist yet), and the file is read from
        it by name, its type checked on the opened descriptor, at most
        :data:`FILE_RESOURCE_CAP` bytes. A symlink that leaves the directory, a directory, a
        FIFO or device, a missing or over-cap file and text that is not UTF-8 are refused with
        an error that names the file by its name only, never the server's path."""
        file = Path(path)
        directory = str(file.absolute().parent)
        reader = _ConfinedFile(directory, file.name)

        def read() -> str:
            return reader.read_text()

        self.register_resource(
            uri=f"file://{file.absolute()}",
            name=file.name,
            description=f"File: {file.name}",
            mime_type=_MIME_TYPES.get(file.suffix, "text/plain"),
            content_provider=read,
        )

    def register_prompt(
        self,
        name: str,
        description: Optional[str] = None,
        arguments: Optional[List[Dict[str, Any]]] = None,
        template: Optional[str] = None,
    ) -> None:
        """Registers a prompt template (``{argument}`` placeholders)."""
        super().register_prompt(name, description, arguments, template)
        self._prompts[name] = {"name": name, "description": description, "arguments": arguments or [], "template": template}

    # ----- in-process requests -------------------------------------------------------------

    async def handle_request(
        self,
        message: Dict[str, Any],
        correlation_id: Optional[str] = None,
        *,
        on_client_request: Optional[Callable[[Dict[str, Any]], Any]] = None,
        on_notification: Optional[Callable[[Dict[str, Any]], Any]] = None,
    ) -> Optional[Dict[str, Any]]:
        """Handles one JSON-RPC message as Codomyrmex's server does (see the module docs) and
        returns the response, or None for a notification.
        Codomyrmex's correlation context (``correlation_id``, or a new one) is entered while
        it is handled, when the checkout has it; the callbacks are plain ``handle_request``'s."""
        with _correlation(correlation_id):
            return await self._handle(message, correlation_id, on_client_request, on_notification)

    async def _handle(
        self,
        message: Dict[str, Any],
        correlation_id: Optional[str],
        on_client_request: Optional[Callable[[Dict[str, Any]], Any]],
        on_notification: Optional[Callable[[Dict[str, Any]], Any]],
    ) -> Optional[Dict[str, Any]]:
        options = {"on_client_request": on_client_request, "on_notification": on_notification}
        if not isinstance(message, dict):
            return await super().handle_request(message, correlation_id, **options)
        method = message.get("method")
        request_id = message.get("id")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if isinstance(method, str) and request_id is None:
            if method == "notifications/initialized":
                self._initialized = True
                return None
            await self._open_session()
            return await super().handle_request(message, correlation_id, **options)
        if method == "initialize":
            session, error = await self._open_session(params)
            if session is None:
                return {"jsonrpc": "2.0", "id": request_id, "error": error}
            return {"jsonrpc": "2.0", "id": request_id, "result": self._initialize_result(session, params)}
        if method == "tools/call" and "_call_tool" in self.__dict__:
            return await self._injected_call(request_id, params)
        if method == "tools/call":
            message = self._coerced(message, params)
        await self._open_session()
        reply = await super().handle_request(message, correlation_id, **options)
        if method == "tools/call" and isinstance(reply, dict):
            self._shape_call(reply, params)
        return reply

    def _coerced(self, message: Dict[str, Any], params: Dict[str, Any]) -> Dict[str, Any]:
        """``message`` with its arguments coerced as the original's server coerces them
        before validating (``"3"`` for an integer is 3): compat's ``quality.validation``
        coercion, against the schema the tool is listed with."""
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, dict) or not arguments:
            return message
        definition = self._tool_registry.definition(name)
        schema = definition.get("inputSchema") if definition else None
        if not isinstance(schema, dict):
            return message
        from ..quality.validation import _coerce_types

        coerced = _coerce_types(arguments, schema)
        if coerced == arguments:
            return message
        return {**message, "params": {**params, "arguments": coerced}}

    async def _open_session(self, params: Optional[Dict[str, Any]] = None) -> Tuple[Optional[Dict[str, Any]], Any]:
        """The in-memory session's ``initialize`` result, opening the session first if it is
        not open: ``(result, None)``, or ``(None, error)`` when the engine refused."""
        if self._session is not None:
            return self._session, None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, self._open_session_now, params or {})

    def _open_session_now(self, params: Dict[str, Any]) -> Tuple[Optional[Dict[str, Any]], Any]:
        with self._session_lock:
            if self._session is None:
                version = params.get("protocolVersion")
                capabilities = params.get("capabilities")
                initialize = {
                    "jsonrpc": "2.0",
                    "id": "codomyrmex-compat-initialize",
                    "method": "initialize",
                    "params": {
                        "protocolVersion": version if version in LEGACY_VERSIONS else LEGACY_VERSIONS[0],
                        "capabilities": capabilities if isinstance(capabilities, dict) else {},
                        "clientInfo": _client_info(params),
                    },
                }
                reply = json.loads(self._core.handle_json(json.dumps(initialize)) or "{}")
                if not isinstance(reply.get("result"), dict):
                    return None, reply.get("error", {"code": -32603, "message": "Internal server error"})
                self._core.handle_json(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                self._session = reply["result"]
            return self._session, None

    def _initialize_result(self, session: Dict[str, Any], params: Dict[str, Any]) -> Dict[str, Any]:
        result = copy.deepcopy(session)
        if params.get("protocolVersion") in LEGACY_VERSIONS:
            result["protocolVersion"] = params["protocolVersion"]
        capabilities = result.setdefault("capabilities", {})
        for kind, present in (("tools", len(self._tool_registry) > 0), ("resources", bool(self._resources)), ("prompts", bool(self._prompts))):
            if present:
                capabilities.setdefault(kind, {})
            else:
                capabilities.pop(kind, None)
        self._initialized = True
        return result

    def _shape_call(self, reply: Dict[str, Any], params: Dict[str, Any]) -> None:
        """A failure the engine decided (invalid arguments, a deadline, the rate limit) as
        the original's: its error object as the text, no ``structuredContent`` without an
        output schema. What the tool answered itself comes shaped already, as over stdio
        and HTTP (:mod:`..tool_answers`), and is left as it is."""
        result = reply.get("result")
        if not isinstance(result, dict) or not result.get("isError") or is_error_object(result):
            return
        name = params.get("name")
        name = name if isinstance(name, str) else ""
        structured = result.get("structuredContent")
        if self._tool_registry.output_schema(name) is None:
            result.pop("structuredContent", None)
        error_type, message, details = _failure_of(result, structured)
        timeout = (self.config.per_tool_timeouts or {}).get(name, self.config.default_tool_timeout)
        result["content"] = error_result(name, error_type, message, details, timeout)["content"]

    async def _injected_call(self, request_id: Any, params: Dict[str, Any]) -> Dict[str, Any]:
        try:
            value: Any = self._call_tool(params)
            if inspect.isawaitable(value):
                value = await value
        except Exception:  # as the original: logged here, an internal error for the client
            logger.exception("call_tool_fn raised")
            return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": "Internal server error"}}
        return {"jsonrpc": "2.0", "id": request_id, "result": value}

    async def _dispatch(self, method: str, params: Dict[str, Any]) -> Any:
        """The result of ``method`` with ``params``; raises ``ValueError`` with the error's
        message when the server answers with an error."""
        reply = await self.handle_request({"jsonrpc": "2.0", "id": f"codomyrmex-compat-{next(_ids)}", "method": method, "params": params or {}})
        if reply is None or "result" not in reply:
            error = (reply or {}).get("error") or {}
            raise ValueError(error.get("message") or f"{method} failed")
        return reply["result"]

    async def _call_tool(self, params: Dict[str, Any]) -> Dict[str, Any]:
        """Calls a tool in process and returns the ``tools/call`` result; a tool that is not
        registered is an ``isError`` result with the original's ``NOT_FOUND`` object (this is
        not the wire, where it is a JSON-RPC error)."""
        name = params.get("name", "") if isinstance(params, dict) else ""
        try:
            return await MCPServer._dispatch(self, "tools/call", params)  # type: ignore[no-any-return]
        except ValueError as e:
            if name not in self._tool_registry:
                return error_result(str(name), "ToolNotFound", f"Tool not found: {name!r}")
            return error_result(str(name), "INTERNAL", str(e))

    async def _initialize(self, params: Dict[str, Any]) -> Dict[str, Any]:
        return await self._dispatch("initialize", params)  # type: ignore[no-any-return]

    async def _list_tools(self, params: Dict[str, Any]) -> Dict[str, Any]:
        return await self._dispatch("tools/list", params)  # type: ignore[no-any-return]

    async def _list_resources(self, params: Dict[str, Any]) -> Dict[str, Any]:
        return await self._dispatch("resources/list", params)  # type: ignore[no-any-return]

    async def _read_resource(self, params: Dict[str, Any]) -> Dict[str, Any]:
        return await self._dispatch("resources/read", params)  # type: ignore[no-any-return]

    async def _list_prompts(self, params: Dict[str, Any]) -> Dict[str, Any]:
        return await self._dispatch("prompts/list", params)  # type: ignore[no-any-return]

    async def _get_prompt(self, params: Dict[str, Any]) -> Dict[str, Any]:
        return await self._dispatch("prompts/get", params)  # type: ignore[no-any-return]

    # ----- serving -------------------------------------------------------------------------

    def _create_http_app(self, *, allowed_origins: Optional[List[str]] = None, auth_token: Optional[str] = None) -> Any:
        """The original's HTTP application (health, JSON-RPC at ``/mcp``, REST listings and
        calls) as an ASGI app over this server; see :mod:`.http_app`. CORS only for
        explicit origins (a wildcard raises ``ValueError``); with ``auth_token`` every
        request but a CORS preflight needs the bearer token."""
        from .http_app import create_http_app

        return create_http_app(self, allowed_origins=allowed_origins, auth_token=auth_token)

    async def run_http(  # type: ignore[override]
        self,
        host: str = "127.0.0.1",
        port: int = 8080,
        *,
        allowed_origins: Optional[List[str]] = None,
        auth_token: Optional[str] = None,
        **options: Any,
    ) -> None:
        """Serves Streamable HTTP (plain ``run_http``; port 8080 by default, as the original).
        A non-loopback ``host`` without ``auth_token`` (or JWT validation) raises
        ``ValueError`` before anything is bound."""
        if host.strip("[]").lower() not in _LOOPBACK_HOSTS and not auth_token and not options.get("jwks"):
            raise ValueError(f"auth_token is required when binding MCP HTTP transport to non-loopback host {host!r}")
        await super().run_http(host, port, auth_token=auth_token, allowed_origins=allowed_origins or (), **options)


_TYPE_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _simple_tool_object(
    func: Callable[..., Any],
    tool_name: str,
    description: Optional[str],
    title: Optional[str],
    output_schema: Optional[Dict[str, Any]],
) -> Dict[str, Any]:
    """The tool object the original's ``MCPServer.tool`` registers."""
    from typing import get_type_hints

    signature = inspect.signature(func)
    hints = get_type_hints(func) if hasattr(func, "__annotations__") else {}
    properties: Dict[str, Any] = {}
    required: List[str] = []
    for pname, parameter in signature.parameters.items():
        if pname in ("self", "cls"):
            continue
        properties[pname] = {"type": _TYPE_NAMES.get(hints.get(pname, str), "string"), "description": f"{pname} parameter"}
        if parameter.default is inspect.Parameter.empty:
            required.append(pname)
    tool: Dict[str, Any] = {
        "name": tool_name,
        "description": description or func.__doc__ or "",
        "inputSchema": {"type": "object", "properties": properties, "required": required},
    }
    if title:
        tool["title"] = title
    if output_schema:
        tool["outputSchema"] = output_schema
    return tool
