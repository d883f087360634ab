#!/usr/bin/env python3
"""Compares the tool catalogue of each of Codomyrmex's ``mcp_tools.py`` modules under the
original ``codomyrmex.model_context_protocol`` and under ``codomyrmex_mcp.compat`` (issue #28,
item 4).

    python3 scripts/codomyrmex-catalogue.py CHECKOUT [--python PY] [--original-python PY] [--json OUT]

``CHECKOUT`` is a Codomyrmex checkout (its ``src/codomyrmex`` is read, never written). Two
subprocesses each import every ``src/codomyrmex/**/mcp_tools.py`` module, register the tools
each module defines as Codomyrmex's own server does (``MCPServer.register_tool(name,
{"name", "description", "inputSchema"}, handler)``, from the ``@mcp_tool`` metadata), and
list them with ``tools/list`` through ``handle_request``:

- the original: ``CHECKOUT/src`` as it is;
- ours: a scratch copy of the tree (symbolic links) whose ``model_context_protocol`` package
  is the one line of docs/migrating-from-codomyrmex.md (``codomyrmex_mcp.compat.install()``).

Both need Codomyrmex's dependencies (its pyproject's, from PyPI) in the interpreter they run
on (``--python``, default this one; ``--original-python`` for the original if it differs);
ours needs ``codomyrmex_mcp`` there too. Each module's tools (name, description, input
schema, as JSON) are compared; prints the differences, then
``N modules equal, M differ`` (modules that do not import under the original are counted
apart). With ``--sdk``, ours also serves every module's tools on one server over stdio and
over Streamable HTTP, and the official Python SDK client (PyPI ``mcp``, in ``--python``)
must list exactly the in-process catalogue. Exits 1 when anything differs.
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import json
import os
import pathlib
import subprocess
import sys
import tempfile
from typing import Any, Dict, List

# Where each worker says which MCPServer it used.
SERVER_KEY = "(server)"

SHIM = "import codomyrmex_mcp.compat\n\ncodomyrmex_mcp.compat.install()\n"


def module_names(src: pathlib.Path) -> List[str]:
    """The import names of ``src/codomyrmex/**/mcp_tools.py``, sorted."""
    names = []
    for path in sorted((src / "codomyrmex").rglob("mcp_tools.py")):
        parts = path.relative_to(src).with_suffix("").parts
        names.append(".".join(parts))
    return names


def shim_tree(src: pathlib.Path, scratch: pathlib.Path) -> pathlib.Path:
    """``scratch/src``: ``src`` by symbolic links, with ``model_context_protocol`` replaced by
    a package whose ``__init__`` is the migration's one line."""
    package = scratch / "src" / "codomyrmex"
    package.mkdir(parents=True)
    for entry in (src / "codomyrmex").iterdir():
        if entry.name != "model_context_protocol":
            (package / entry.name).symlink_to(entry.resolve())
    (package / "model_context_protocol").mkdir()
    (package / "model_context_protocol" / "__init__.py").write_text(SHIM)
    return scratch / "src"


# ----- the worker: runs in each subprocess -------------------------------------------------


def tools_of(module: Any) -> List[Any]:
    """The ``@mcp_tool`` callables a module holds (functions and the methods of its classes),
    by name, each once, as Codomyrmex's discovery finds them."""
    found: Dict[str, Any] = {}

    def add(value: Any) -> None:
        meta = getattr(value, "_mcp_tool_meta", None)
        if isinstance(meta, dict) and meta.get("name"):
            found.setdefault(str(meta["name"]), value)

    for _, value in inspect.getmembers(module):
        add(value)
        if inspect.isclass(value) and getattr(value, "__module__", None) == module.__name__:
            for _, method in inspect.getmembers(value):
                add(method)
    return [found[name] for name in sorted(found)]


def catalogue(module_name: str) -> Dict[str, Any]:
    """``{"tools": [...]}`` as listed over ``tools/list``, or ``{"error": ...}``."""
    import asyncio
    import importlib

    try:
        module = importlib.import_module(module_name)
    except BaseException as e:  # a module that does not import is reported, not fatal
        return {"error": f"import: {type(e).__name__}: {e}"}
    from codomyrmex.model_context_protocol.transport.server import MCPServer  # type: ignore[import-not-found]

    server = MCPServer()
    try:
        for tool in tools_of(module):
            meta = tool._mcp_tool_meta
            definition = {"name": meta["name"], "description": meta["description"], "inputSchema": meta["schema"]}
            server.register_tool(meta["name"], definition, tool)
    except BaseException as e:
        return {"error": f"register: {type(e).__name__}: {e}"}

    async def listing() -> List[Dict[str, Any]]:
        tools: List[Dict[str, Any]] = []
        params: Dict[str, Any] = {}
        while True:
            reply = await server.handle_request({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
            result = reply["result"]
            tools.extend(result["tools"])
            if not result.get("nextCursor"):
                return tools
            params = {"cursor": result["nextCursor"]}

    try:
        listed = asyncio.run(listing())
    except BaseException as e:
        return {"error": f"tools/list: {type(e).__name__}: {e}"}
    keep = ("name", "description", "inputSchema")
    return {"tools": sorted(({k: t.get(k) for k in keep} for t in listed), key=lambda t: str(t["name"]))}


def worker(names: List[str]) -> None:
    import logging

    logging.disable(logging.CRITICAL)
    out = sys.stdout
    sys.stdout = sys.stderr  # modules that print do not garble the answer
    results: Dict[str, Any] = {}
    for name in names:
        results[name] = catalogue(name)
    try:
        from codomyrmex.model_context_protocol.transport.server import MCPServer  # type: ignore[import-not-found]

        results[SERVER_KEY] = MCPServer.__module__
    except BaseException as e:
        results[SERVER_KEY] = f"{type(e).__name__}: {e}"
    out.write(json.dumps(results))
    out.flush()
    os._exit(0)  # a module's non-daemon thread does not keep the worker alive


def serve(transport: str, names: List[str]) -> None:
    """Serves every tool of ``names`` (each name once: some modules re-export others' tools)
    on one compat server over ``transport`` (``stdio``, or ``http`` on a free port)."""
    import asyncio
    import importlib
    import logging

    logging.disable(logging.CRITICAL)
    saved, sys.stdout = sys.stdout, sys.stderr  # imports that print do not reach the protocol
    from codomyrmex.model_context_protocol.transport.server import MCPServer  # type: ignore[import-not-found]

    server = MCPServer()
    for name in names:
        try:
            module = importlib.import_module(name)
        except BaseException:
            continue
        for tool in tools_of(module):
            meta = tool._mcp_tool_meta
            if meta["name"] not in server.registry:
                definition = {"name": meta["name"], "description": meta["description"], "inputSchema": meta["schema"]}
                server.register_tool(meta["name"], definition, tool)
    sys.stdout = saved
    if transport == "stdio":
        asyncio.run(server.run_stdio())
    else:
        asyncio.run(server.run_http("127.0.0.1", 0))
    os._exit(0)


async def sdk_listing(python: str, src: pathlib.Path, names: List[str], transport: str) -> List[Dict[str, Any]]:
    """The tools the official SDK client lists from :func:`serve` over ``transport``."""
    import asyncio
    import re

    from mcp import Client, StdioServerParameters  # the official SDK (PyPI `mcp`)

    env = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")
    command = [python, os.path.abspath(__file__), "--serve", transport, *names]

    async def listing(client: Any) -> List[Dict[str, Any]]:
        tools: List[Dict[str, Any]] = []
        cursor = None
        while True:
            result = await client.list_tools(cursor=cursor)
            tools.extend({"name": t.name, "description": t.description, "inputSchema": t.input_schema} for t in result.tools)
            cursor = result.next_cursor
            if not cursor:
                return sorted(tools, key=lambda t: t["name"])

    if transport == "stdio":
        params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(src.parent))
        async with Client(params, mode="legacy", read_timeout_seconds=300) as client:
            return await listing(client)
    from mcp.client.streamable_http import streamable_http_client

    process = await asyncio.create_subprocess_exec(*command, env=env, cwd=str(src.parent), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert process.stderr is not None
        while True:
            line = (await asyncio.wait_for(process.stderr.readline(), 300)).decode()
            if not line:
                raise SystemExit("the HTTP server exited before listening")
            found = re.search(r"serving MCP at (http://127\.0\.0\.1:\d+/mcp)", line)
            if found:
                break
        async with Client(streamable_http_client(found.group(1)), mode="legacy", read_timeout_seconds=300) as client:
            return await listing(client)
    finally:
        process.kill()
        await process.wait()


def check_sdk(python: str, src: pathlib.Path, names: List[str], ours: Dict[str, Any]) -> bool:
    """Whether the SDK client lists, over stdio and over Streamable HTTP, exactly the tools
    the in-process catalogues list (by name); prints what differs."""
    import asyncio

    expected: Dict[str, Any] = {}
    for name in names:
        for tool in ours.get(name, {}).get("tools", []):
            expected.setdefault(tool["name"], tool)
    wanted = [expected[n] for n in sorted(expected)]
    same = True
    for transport in ("stdio", "http"):
        listed = asyncio.run(sdk_listing(python, src, names, transport))
        if listed == wanted:
            print(f"official SDK client over {transport}: {len(listed)} tools listed, equal to the in-process catalogue")
            continue
        same = False
        print(f"official SDK client over {transport}: {len(listed)} tools listed, {len(wanted)} expected; differences:")
        for line in difflib.unified_diff(pretty(wanted), pretty(listed), "in process", f"sdk {transport}", lineterm="", n=2):
            print("    " + line)
    return same


# ----- the driver ------------------------------------------------------------------------


def run_side(python: str, src: pathlib.Path, names: List[str]) -> Dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run(
        [python, os.path.abspath(__file__), "--worker", *names],
        env=env,
        cwd=src.parent,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode != 0 or not done.stdout.strip():
        sys.exit(f"the worker on {src} failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return json.loads(done.stdout)


def pretty(value: Any) -> List[str]:
    return json.dumps(value, indent=2, sort_keys=True).splitlines()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2:])
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve(sys.argv[2], sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkout", type=pathlib.Path)
    parser.add_argument("--python", default=sys.executable, help="the interpreter ours runs on")
    parser.add_argument("--original-python", help="the interpreter the original runs on (default: --python)")
    parser.add_argument("--json", type=pathlib.Path, help="also write both catalogues here")
    parser.add_argument(
        "--sdk", action="store_true", help="also serve ours over stdio and Streamable HTTP to the official SDK client (PyPI mcp)"
    )
    args = parser.parse_args()
    src = args.checkout.resolve() / "src"
    if not (src / "codomyrmex" / "model_context_protocol").is_dir():
        sys.exit(f"{args.checkout} is not a Codomyrmex checkout (no src/codomyrmex/model_context_protocol)")
    names = module_names(src)
    original = run_side(args.original_python or args.python, src, names)
    with tempfile.TemporaryDirectory(prefix="codomyrmex-catalogue-") as scratch:
        shimmed = shim_tree(src, pathlib.Path(scratch))
        ours = run_side(args.python, shimmed, names)
        sdk_same = check_sdk(args.python, shimmed, names, ours) if args.sdk else True
    if ours.get(SERVER_KEY) != "codomyrmex_mcp.compat.transport.server":
        sys.exit(f"ours did not run on codomyrmex_mcp.compat: its MCPServer is from {ours.get(SERVER_KEY)!r}")
    print(f"original: MCPServer from {original.get(SERVER_KEY)}; ours: from {ours.get(SERVER_KEY)}")
    if args.json:
        args.json.write_text(json.dumps({"original": original, "ours": ours}, indent=1))

    equal = differ = skipped = 0
    tools_original = tools_ours = 0
    for name in names:
        before, after = original.get(name, {}), ours.get(name, {})
        if "error" in before:
            skipped += 1
            continue
        tools_original += len(before["tools"])
        tools_ours += len(after.get("tools", []))
        if after == before:
            equal += 1
            continue
        differ += 1
        print(f"--- {name}")
        if "error" in after:
            print(f"    ours: {after['error']}")
            continue
        for line in difflib.unified_diff(pretty(before["tools"]), pretty(after["tools"]), "original", "ours", lineterm="", n=2):
            print("    " + line)
    print(
        f"{len(names)} modules: {skipped} do not import under the original; of the other {len(names) - skipped}, "
        f"{tools_original} tools under the original, {tools_ours} under ours"
    )
    print(f"{equal} modules equal, {differ} differ")
    sys.exit(1 if differ or not sdk_same else 0)


if __name__ == "__main__":
    main()
