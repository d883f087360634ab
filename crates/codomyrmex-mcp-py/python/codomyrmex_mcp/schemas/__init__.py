"""The seed's models and registry; see :mod:`codomyrmex_mcp.schemas.mcp_schemas`."""

from .mcp_schemas import (
    MCPErrorDetail,
    MCPMessage,
    MCPRegistrationError,
    MCPToolCall,
    MCPToolRegistry,
    MCPToolResult,
)

__all__ = [
    "MCPErrorDetail",
    "MCPToolCall",
    "MCPToolResult",
    "MCPMessage",
    "MCPToolRegistry",
    "MCPRegistrationError",
]
