"""``codomyrmex.model_context_protocol.transport.main``: the Codomyrmex MCP server's entry
point. Scans the installed ``codomyrmex`` package for ``@mcp_tool`` functions (the compat
discovery engine), registers each available one, and serves stdio."""

from __future__ import annotations

import asyncio
import logging

from .server import MCPServer, MCPServerConfig

__all__ = ["main", "run_server"]

logger = logging.getLogger("codomyrmex_mcp.compat")


async def run_server() -> None:
    """Serves every discovered Codomyrmex tool over stdio until stdin closes."""
    from ..discovery import MCPDiscovery

    server = MCPServer(MCPServerConfig(name="codomyrmex-mcp", version="0.1.2"))
    report = MCPDiscovery().scan_package("codomyrmex")
    for tool in report.tools:
        if tool.available and tool.handler:
            try:
                server._tool_registry.register(tool_name=tool.name, schema=tool.parameters, handler=tool.handler)
            except Exception as e:  # one tool's refusal is not the server's
                logger.error("Failed to register tool %s: %s", tool.name, e)
    logger.info(
        "Loaded %d MCP tools (%d modules failed to import)", len(server._tool_registry), len(report.failed_modules)
    )
    await server.run_stdio()


def main() -> None:
    """Synchronous entry point."""
    asyncio.run(run_server())


if __name__ == "__main__":
    main()
