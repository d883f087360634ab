"""``MCPServer._create_http_app``: Codomyrmex's HTTP application, as a plain ASGI app (no
FastAPI), for tests and embedders that drive it with an ASGI client or server.

Routes, as the original's: ``GET /`` (a page), ``GET /health``, ``POST /mcp`` (one JSON-RPC
message through the compat server's ``handle_request``; ``202`` for a notification),
``GET /tools``, ``GET /tools/{name}``, ``POST /tools/{name}/call``, ``GET /resources``,
``GET /prompts``. Its safety rules, also the original's: CORS only for explicit origins (a
wildcard raises ``ValueError``), and with ``auth_token`` every request but a CORS preflight
needs ``Authorization: Bearer <token>`` (compared in constant time), else ``401``. A request
body over :data:`MAX_BODY` bytes is refused with ``413`` before it is read further.

``run_http`` does not serve this app: it serves the Rust Streamable HTTP transport.
"""

from __future__ import annotations

import hmac
import json
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

from .web_ui import get_web_ui_html

__all__ = ["create_http_app", "MAX_BODY"]

MAX_BODY = 4 * 1024 * 1024
"""The largest request body read, in bytes."""

Headers = List[Tuple[bytes, bytes]]
Send = Callable[[Dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[Dict[str, Any]]]


async def _respond(send: Send, status: int, body: bytes, content_type: str, headers: Headers) -> None:
    all_headers = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": all_headers})
    await send({"type": "http.response.body", "body": body})


async def _json(send: Send, status: int, value: Any, headers: Headers) -> None:
    await _respond(send, status, json.dumps(value).encode(), "application/json", headers)


async def _body(receive: Receive) -> Optional[bytes]:
    """The request body, or None past :data:`MAX_BODY`."""
    chunks: List[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def create_http_app(server: Any, *, allowed_origins: Optional[List[str]] = None, auth_token: Optional[str] = None) -> Any:
    """The ASGI application of ``server`` (a compat ``MCPServer``)."""
    origins = [origin.rstrip("/") for origin in (allowed_origins or [])]
    if any(not origin or origin == "*" for origin in origins):
        raise ValueError("allowed_origins must contain explicit origins; wildcard CORS is unsafe")
    expected = f"Bearer {auth_token}".encode() if auth_token else None

    async def app(scope: Dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        method, path = scope["method"], scope["path"]
        origin = headers.get("origin", "").rstrip("/")
        cors: Headers = []
        if origin and origin in origins:
            cors = [(b"access-control-allow-origin", origin.encode()), (b"access-control-allow-credentials", b"true"), (b"vary", b"Origin")]
        if method == "OPTIONS" and "access-control-request-method" in headers:
            if not cors:
                await _respond(send, 400, b"Disallowed CORS origin", "text/plain", [])
                return
            allow = [(b"access-control-allow-methods", b"GET, POST, OPTIONS"), (b"access-control-allow-headers", b"Authorization, Content-Type, X-Correlation-ID")]
            await _respond(send, 200, b"OK", "text/plain", cors + allow)
            return
        if expected is not None and not hmac.compare_digest(headers.get("authorization", "").encode("latin-1"), expected):
            await _json(send, 401, {"detail": "Authentication required"}, [(b"www-authenticate", b"Bearer")])
            return
        correlation = headers.get("x-correlation-id")
        extra = cors + ([(b"x-correlation-id", correlation.encode("latin-1"))] if correlation else [])
        await _route(server, method, path, receive, send, extra, correlation)

    return app


async def _route(server: Any, method: str, path: str, receive: Receive, send: Send, headers: Headers, correlation: Optional[str]) -> None:
    parts = [p for p in path.split("/") if p]
    if method == "GET" and not parts:
        await _respond(send, 200, get_web_ui_html().encode(), "text/html; charset=utf-8", headers)
    elif method == "GET" and parts == ["health"]:
        health = {
            "status": "ok",
            "server_name": server.config.name,
            "server_version": server.config.version,
            "protocol_version": "2025-06-18",
            "transport": "http",
            "tool_count": server.tool_count,
            "resource_count": server.resource_count,
            "prompt_count": server.prompt_count,
        }
        await _json(send, 200, health, headers)
    elif method == "GET" and parts in (["tools"], ["resources"], ["prompts"]):
        listing = {"tools": server._list_tools, "resources": server._list_resources, "prompts": server._list_prompts}[parts[0]]
        await _json(send, 200, await listing({}), headers)
    elif method == "GET" and len(parts) == 2 and parts[0] == "tools":
        tool = server.registry.definition(parts[1])
        if tool is None:
            await _json(send, 404, {"error": f"Tool not found: {parts[1]}"}, headers)
        else:
            await _json(send, 200, tool, headers)
    elif method == "POST" and (parts == ["mcp"] or (len(parts) == 3 and parts[0] == "tools" and parts[2] == "call")):
        body = await _body(receive)
        if body is None:
            await _json(send, 413, {"detail": "Request body too large"}, headers)
            return
        try:
            value = json.loads(body) if body else None
        except ValueError:
            value = None
        if parts == ["mcp"]:
            if not isinstance(value, dict):
                error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
                await _json(send, 400, error, headers)
                return
            reply = await server.handle_request(value, correlation_id=correlation)
            if reply is None:
                await _json(send, 202, {"status": "accepted"}, headers)
            else:
                await _json(send, 200, reply, headers)
        else:
            arguments = value if isinstance(value, dict) else {}
            await _json(send, 200, await server._call_tool({"name": parts[1], "arguments": arguments}), headers)
    else:
        await _json(send, 404, {"detail": "Not Found"}, headers)
