"""Interop check: the official Python MCP SDK client against `codomyrmex-mcp gateway`.

Usage: gateway_interop.py PATH_TO_CODOMYRMEX_MCP GATEWAY_TOML FILES_DIR

The gateway (a stdio child of the SDK's client) mounts, as gateway_interop.sh configures it:
`everything` (the official server-everything over stdio, a 2025-11-25 server), `files` (the
official server-filesystem over stdio, allowed FILES_DIR), and our own `serve --http` twice:
`old` spoken to in 2025-11-25 and `new` in 2026-07-28.

For `Client(mode="legacy")` (2025-11-25) and `Client(mode="auto")` (which must settle on
2026-07-28), with sampling and elicitation callbacks:

- every upstream's tools are listed under its namespace, and a call reaches each;
- `everything.trigger-sampling-request` asks this client's sampling callback across the
  gateway (for the 2026-07-28 client, across the era bridge: an input-required result whose
  answer the gateway carries back to the upstream's pending request), and
  `everything.trigger-elicitation-request` likewise asks the elicitation callback;
- (legacy run) the `everything` child is killed with SIGKILL: its tools leave the list and
  come back with a new child, and calls work again.

Exits non-zero on the first mismatch.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from typing import Any

import mcp.types as types
from mcp import Client, StdioServerParameters

SAMPLED = "sampled-through-the-gateway"


class Mismatch(Exception):
    pass


def check(condition: bool, what: str) -> None:
    if not condition:
        raise Mismatch(what)


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(type="text", text=SAMPLED),
        model="interop-model",
    )


elicited: list[str] = []


async def elicitation(context: Any, params: Any) -> types.ElicitResult:
    elicited.append(getattr(params, "message", ""))
    return types.ElicitResult(action="decline")


def pids_of(needle: str, parent: int | None = None) -> list[int]:
    """Processes whose command line contains `needle` (children of `parent` if given)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/status") as f:
                ppid = next(int(l.split()[1]) for l in f if l.startswith("PPid:"))
        except (OSError, StopIteration, ValueError):
            continue
        if needle in cmdline and (parent is None or ppid == parent):
            out.append(int(entry))
    return out


async def names(client: Client) -> set[str]:
    return {t.name for t in (await client.list_tools()).tools}


async def restart_killed_child(client: Client, config: str, label: str) -> None:
    gateways = pids_of(f"gateway --config {config}")
    check(len(gateways) == 1, f"{label}: one gateway process, found {gateways}")
    children = pids_of("server-everything", parent=gateways[0])
    check(len(children) == 1, f"{label}: one server-everything child, found {children}")
    os.kill(children[0], signal.SIGKILL)
    # Its tools leave the list, then a new child brings them back. The new child is looked for
    # before the list is read: the supervisor starts it only after it unmounted the dead
    # upstream, so a tool listed after the new child was seen is the new child's. (Reading the
    # list first raced: it could still show the dead upstream's tools, and a call made once
    # the new child was seen, before its tools were mounted, found no tool.)
    deadline = time.monotonic() + 60
    left = False
    while time.monotonic() < deadline:
        again = pids_of("server-everything", parent=gateways[0])
        present = "everything.echo" in await names(client)
        left = left or not present
        if present and again and again != children:
            break
        await asyncio.sleep(0.2)
    else:
        raise Mismatch(f"{label}: the killed child's tools did not come back within 60 s")
    result = await client.call_tool("everything.echo", {"message": "back again"})
    check("back again" in text_of(result), f"{label}: echo after the restart: {text_of(result)!r}")
    print(f"ok: {label}: a killed child is restarted (its tools left the list: {left}) and answers again")


async def run(binary: str, config: str, files_dir: str, mode: str, expected: str) -> None:
    label = f"Client(mode={mode!r})"
    params = StdioServerParameters(command=binary, args=["gateway", "--config", config])
    async with Client(
        params,
        mode=mode,
        read_timeout_seconds=60,
        sampling_callback=sampling,
        elicitation_callback=elicitation,
    ) as client:
        check(client.protocol_version == expected, f"{label}: negotiated {client.protocol_version!r}")
        wanted = {
            "everything.echo",
            "everything.trigger-sampling-request",
            "files.read_text_file",
            "old.codomyrmex.list_registered_tools",
            "new.codomyrmex.list_registered_tools",
        }
        # The gateway serves after at most a few seconds of start-up; an upstream slower
        # than that joins the catalogue when it answers.
        deadline = time.monotonic() + 60
        while not wanted <= (listed := await names(client)):
            check(time.monotonic() < deadline, f"{label}: not listed: {sorted(wanted - listed)}")
            await asyncio.sleep(0.2)

        echo = await client.call_tool("everything.echo", {"message": "hi"})
        check("Echo: hi" in text_of(echo), f"{label}: everything.echo: {text_of(echo)!r}")
        path = os.path.join(files_dir, f"{mode}.txt")
        await client.call_tool("files.write_file", {"path": path, "content": f"written by {mode}"})
        read = await client.call_tool("files.read_text_file", {"path": path})
        check(f"written by {mode}" in text_of(read), f"{label}: files.read_text_file: {text_of(read)!r}")
        for ns in ["old", "new"]:
            r = await client.call_tool(f"{ns}.codomyrmex.list_registered_tools", {})
            check(not r.is_error, f"{label}: {ns}: {text_of(r)!r}")

        sampled = await client.call_tool(
            "everything.trigger-sampling-request", {"prompt": "say something", "maxTokens": 5}
        )
        check(SAMPLED in text_of(sampled), f"{label}: sampling across the gateway: {text_of(sampled)!r}")
        before = len(elicited)
        answer = await client.call_tool("everything.trigger-elicitation-request", {})
        check(len(elicited) == before + 1, f"{label}: the elicitation callback was not asked")
        check("decline" in text_of(answer).lower(), f"{label}: elicitation: {text_of(answer)!r}")
        print(f"ok: {label} negotiated {expected}; sampling and elicitation round trips through the gateway")
        if mode == "legacy":
            await restart_killed_child(client, config, label)


async def main(binary: str, config: str, files_dir: str) -> None:
    await run(binary, config, files_dir, "legacy", "2025-11-25")
    # "auto": the SDK probes server/discover (for 10 s) and settles on 2026-07-28; the gateway
    # answers it after at most its start-up wait (5 s), however slow an upstream is.
    await run(binary, config, files_dir, "auto", "2026-07-28")


def first_mismatch(e: BaseException) -> Mismatch | None:
    if isinstance(e, Mismatch):
        return e
    if isinstance(e, BaseExceptionGroup):
        for inner in e.exceptions:
            if (found := first_mismatch(inner)) is not None:
                return found
    return None


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: gateway_interop.py PATH_TO_CODOMYRMEX_MCP GATEWAY_TOML FILES_DIR", file=sys.stderr)
        sys.exit(2)
    try:
        asyncio.run(asyncio.wait_for(main(*sys.argv[1:]), timeout=240))
    except TimeoutError:
        print("MISMATCH: the gateway interop run did not finish within 240 s", file=sys.stderr)
        sys.exit(1)
    except BaseException as e:  # noqa: BLE001 - any failure is a failed interop check
        mismatch = first_mismatch(e)
        if mismatch is None:
            raise
        print(f"MISMATCH: {mismatch}", file=sys.stderr)
        sys.exit(1)
    print("gateway interop (Python SDK): all checks passed")
