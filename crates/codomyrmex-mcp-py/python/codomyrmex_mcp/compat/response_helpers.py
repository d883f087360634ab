"""``codomyrmex.model_context_protocol.response_helpers``: the dicts Codomyrmex's tool modules
return (``{"status": "success", "message": ..., **data}`` and ``{"status": "error", ...}``)."""

from __future__ import annotations

from typing import Any, Dict, Optional

__all__ = ["ok_response", "error_response"]


def ok_response(data: Optional[Dict[str, Any]] = None, message: str = "OK") -> Dict[str, Any]:
    """``{"status": "success", "message": message}`` with ``data``'s items merged in."""
    response: Dict[str, Any] = {"status": "success", "message": message}
    response.update(data or {})
    return response


def error_response(message: str, data: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """``{"status": "error", "message": message}`` with ``data``'s items merged in."""
    response: Dict[str, Any] = {"status": "error", "message": message}
    response.update(data or {})
    return response
