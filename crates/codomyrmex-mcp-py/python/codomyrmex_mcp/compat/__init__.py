"""Compatibility mode: Codomyrmex's ``codomyrmex.model_context_protocol`` on codomyrmex_mcp.

The package tree mirrors the original module's (``errors``, ``schemas``, ``transport``,
``discovery``, ``quality``, ``reliability``, ...) and exports the names its ``__init__``
exports. Registry, engine and transports are plain :mod:`codomyrmex_mcp`'s (Rust); this
layer shapes what is registered and how the in-process server answers, as Codomyrmex does
(see :mod:`.transport.server`, :mod:`.decorators`, :mod:`.schemas.mcp_schemas`).

Moving a Codomyrmex checkout onto it is one line (docs/migrating-from-codomyrmex.md):
:func:`install`, which makes every ``codomyrmex.model_context_protocol[.…]`` import resolve
to the module of the same name here.
"""

import contextlib
from typing import Any, Dict

from . import adapters, discovery, quality, reliability, schemas, transport, validators
from .aliasing import install, uninstall
from .decorators import mcp_tool
from .discovery import DiscoveryMetrics, DiscoveryReport, FailedModule, MCPDiscovery
from .errors import FieldError, MCPErrorCode, MCPToolError
from .quality.taxonomy import (
    TaxonomyReport,
    ToolCategory,
    categorize_all_tools,
    categorize_tool,
    generate_taxonomy_report,
)
from .quality.validation import ValidationResult, validate_tool_arguments
from .reliability.circuit_breaker import (
    CircuitBreaker,
    CircuitBreakerConfig,
    CircuitOpenError,
    CircuitState,
    get_all_circuit_metrics,
    get_circuit_breaker,
    reset_all_circuits,
)
from .reliability.rate_limiter import RateLimiter, RateLimiterConfig
from .schemas.mcp_schemas import MCPErrorDetail, MCPMessage, MCPToolCall, MCPToolRegistry, MCPToolResult
from .transport.client import MCPClient, MCPClientConfig, MCPClientError
from .transport.main import main, run_server
from .transport.server import MCPServer, MCPServerConfig

# Codomyrmex's shared result schema, when the checkout has it (as the original imports it).
with contextlib.suppress(ImportError):
    from codomyrmex.validation.schemas import Result, ResultStatus  # type: ignore[import-not-found]  # noqa: F401


def cli_commands() -> Dict[str, Dict[str, Any]]:
    """The module's CLI commands (``tools``, ``status``): name to ``{"help", "handler"}``."""
    return {
        "tools": {
            "help": "list registered MCP tools",
            "handler": lambda **kwargs: print(
                "MCP Tool Registry:\n"
                f"  Registry class: {MCPToolRegistry.__name__}\n"
                f"  Message class: {MCPMessage.__name__}\n"
                f"  Tool call class: {MCPToolCall.__name__}\n"
                f"  Tool result class: {MCPToolResult.__name__}\n"
                f"  Error detail class: {MCPErrorDetail.__name__}\n"
                "  Submodules: adapters, discovery, schemas, validators"
            ),
        },
        "status": {
            "help": "Show MCP server status and configuration",
            "handler": lambda **kwargs: print(
                f"MCP Server: {MCPServer.__name__}\n"
                f"MCP Config: {MCPServerConfig.__name__}\n"
                "Adapters module loaded: True\n"
                "Discovery module loaded: True\n"
                "Validators module loaded: True"
            ),
        },
    }


from . import versioning as versioning_module  # noqa: E402
from .mcp_deprecation import get_deprecated_tools, get_deprecation_summary, get_deprecation_timeline  # noqa: E402

__all__ = [
    "CircuitBreaker",
    "CircuitBreakerConfig",
    "CircuitOpenError",
    "CircuitState",
    "DiscoveryMetrics",
    "DiscoveryReport",
    "FailedModule",
    "FieldError",
    "MCPClient",
    "MCPClientConfig",
    "MCPClientError",
    "MCPDiscovery",
    "MCPErrorCode",
    "MCPErrorDetail",
    "MCPMessage",
    "MCPServer",
    "MCPServerConfig",
    "MCPToolCall",
    "MCPToolError",
    "MCPToolRegistry",
    "MCPToolResult",
    "RateLimiter",
    "RateLimiterConfig",
    "TaxonomyReport",
    "ToolCategory",
    "ValidationResult",
    "adapters",
    "categorize_all_tools",
    "categorize_tool",
    "cli_commands",
    "discovery",
    "generate_taxonomy_report",
    "get_all_circuit_metrics",
    "get_circuit_breaker",
    "get_deprecated_tools",
    "get_deprecation_summary",
    "get_deprecation_timeline",
    "install",
    "main",
    "mcp_tool",
    "quality",
    "reliability",
    "reset_all_circuits",
    "run_server",
    "schemas",
    "transport",
    "validate_tool_arguments",
    "validators",
]
