"""A Python server publishing a skills directory: `skills_server.py DIR` serves over stdio
the skills under DIR (`MCPServer.add_skills`), for the official SDK client in
test_skills.py."""

import sys

from codomyrmex_mcp import MCPServer, MCPServerConfig

server = MCPServer(MCPServerConfig(name="py-skills", transport="stdio"))
server.add_skills(sys.argv[1])

if __name__ == "__main__":
    server.run()
