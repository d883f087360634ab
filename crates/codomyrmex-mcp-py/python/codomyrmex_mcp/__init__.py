"""codomyrmex_mcp: the Codomyrmex ``model_context_protocol`` API, backed by Rust.

The seed's names, so that moving from Codomyrmex's module means changing the import line:
the Pydantic models (``MCPErrorDetail``, ``MCPToolCall``, ``MCPToolResult``, ``MCPMessage``),
``MCPToolRegistry`` and ``MCPRegistrationError``, ``MCPServer`` and ``MCPServerConfig``, and
``@mcp_tool``. Registry, engine and transports are the Rust crate ``codomyrmex-mcp``; the
tool bodies are yours, in Python. ``Context`` is in :mod:`codomyrmex_mcp.context`, module
discovery in :mod:`codomyrmex_mcp.decorators`.
"""

from .decorators import mcp_tool
from .schemas.mcp_schemas import (
    MCPErrorDetail,
    MCPMessage,
    MCPRegistrationError,
    MCPToolCall,
    MCPToolRegistry,
    MCPToolResult,
)
from .server import MCPServer, MCPServerConfig

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
