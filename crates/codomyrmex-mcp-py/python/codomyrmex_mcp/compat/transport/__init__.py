"""``codomyrmex.model_context_protocol.transport`` in compatibility mode: the server, the client
and the entry point."""

from .client import MCPClient, MCPClientConfig, MCPClientError
from .main import main, run_server
from .server import MCPServer, MCPServerConfig

__all__ = [
    "MCPClient",
    "MCPClientConfig",
    "MCPClientError",
    "MCPServer",
    "MCPServerConfig",
    "main",
    "run_server",
]
