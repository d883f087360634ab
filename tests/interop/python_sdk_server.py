"""A server built on the official Python MCP SDK (PyPI `mcp`), run over stdio, for the
client interop check `client_interop.sh`: each of its tools asks the client for input, so a
call succeeds only when the client answered it. The tools use the SDK's resolvers, which
follow the negotiated era: a 2025-11-25 client gets a server-to-client request mid-call, a
2026-07-28 client an `InputRequiredResult` to answer and retry.

- `ask_model`: sampling (`sampling/createMessage`); returns the model and its text.
- `ask_user`: a form elicitation (`elicitation/create`) for a name; returns the answer.
- `show_roots`: `roots/list`; returns the root URIs, one a line.

Usage: python python_sdk_server.py   (speaks MCP on stdin/stdout)
"""

from __future__ import annotations

import warnings
from typing import Annotated

from pydantic import BaseModel

from mcp import types
from mcp.server.mcpserver import Elicit, ListRoots, MCPServer, Resolve, Sample

# Sampling and roots are deprecated in 2026-07-28 but still part of it; this server tests them.
warnings.simplefilter("ignore")

server = MCPServer("python-sdk-input-server")


class Name(BaseModel):
    name: str


def sample(question: str) -> Sample:
    return Sample(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))],
        max_tokens=50,
    )


def elicit_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


def roots() -> ListRoots:
    return ListRoots()


@server.tool()
async def ask_model(
    question: str, answer: Annotated[types.CreateMessageResult, Resolve(sample)]
) -> str:
    """Asks the client's model a question (sampling)."""
    text = getattr(answer.content, "text", None)
    return f"model {answer.model} said: {text}"


@server.tool()
async def ask_user(who: Annotated[Name, Resolve(elicit_name)]) -> str:
    """Asks the user for a name (form elicitation)."""
    return f"hello {who.name}"


@server.tool()
async def show_roots(listed: Annotated[types.ListRootsResult, Resolve(roots)]) -> str:
    """Lists the client's roots."""
    return "\n".join(str(root.uri) for root in listed.roots)


if __name__ == "__main__":
    server.run("stdio")
