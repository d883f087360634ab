"""``codomyrmex.model_context_protocol.transport`` in compatibility mode: the server, the client
and the entry point."""

from .client import MCPClient, MCPClientConfig, MCPClientError
from .main import main, run_server
from .server import MCPServer, MCPServerConfig
from .web_ui import get_web_ui_html

__all__ = [
    "MCPClient",
    "MCPClientConfig",
    "MCPClientError",
    "MCPServer",
    "MCPServerConfig",
    "get_web_ui_html",
    "main",
    "run_server",
]
