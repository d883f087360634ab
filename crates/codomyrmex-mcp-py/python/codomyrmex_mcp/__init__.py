"""codomyrmex_mcp: the Codomyrmex ``model_context_protocol`` API, backed by Rust.

The seed's names, so that moving from Codomyrmex's module means changing the import line:
the Pydantic models (``MCPErrorDetail``, ``MCPToolCall``, ``MCPToolResult``, ``MCPMessage``),
``MCPToolRegistry`` and ``MCPRegistrationError``, ``MCPServer`` and ``MCPServerConfig``, and
``@mcp_tool``. Registry, engine and transports are the Rust crate ``codomyrmex-mcp``; the
tool bodies are yours, in Python. ``Context`` is in :mod:`codomyrmex_mcp.context`, module
discovery in :mod:`codomyrmex_mcp.decorators`.

The models are imported on first use (``codomyrmex_mcp.MCPToolResult``, ``from codomyrmex_mcp
import MCPToolResult``), and with them Pydantic: a server whose tools have plain type hints
starts without importing Pydantic at all.
"""

from typing import TYPE_CHECKING, Any, List

from ._registry import MCPRegistrationError, MCPToolRegistry
from .decorators import mcp_tool
from .server import MCPServer, MCPServerConfig

if TYPE_CHECKING:
    from .schemas.mcp_schemas import MCPErrorDetail, MCPMessage, MCPToolCall, MCPToolResult

_MODELS = ("MCPErrorDetail", "MCPToolCall", "MCPToolResult", "MCPMessage")


def __getattr__(name: str) -> Any:
    # The Pydantic models, imported the first time one is asked for (PEP 562).
    if name in _MODELS:
        from .schemas import mcp_schemas

        value = getattr(mcp_schemas, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_MODELS))


__all__ = [
    "MCPErrorDetail",
    "MCPToolCall",
    "MCPToolResult",
    "MCPMessage",
    "MCPToolRegistry",
    "MCPRegistrationError",
    "MCPServer",
    "MCPServerConfig",
    "mcp_tool",
]
