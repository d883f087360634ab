"""``codomyrmex.model_context_protocol.tools`` in compatibility mode.

Codomyrmex's built-in file and Python-analysis tools, with its result shape: a dict with
``success`` and either the data or an ``error`` text; they never raise for bad input.

Every path goes through the library's one confinement, the Rust ``ConfinedRoot``
(``codomyrmex_mcp._core.ConfinedRoot``): a path must stay inside the *tools root*, which is
``CODOMYRMEX_MCP_TOOLS_ROOT`` if set, else the current directory when a tool is first used,
or whatever :func:`set_root` chose. Relative paths are relative to that root; an absolute
path is accepted when it is inside it. A path that leaves the root (``..``, an absolute
path elsewhere, a symlink out) is refused. This differs from Codomyrmex, whose tools read
and write any path the process can reach.

``list_directory`` and ``search_codebase`` walk directories one listing at a time, each
listing resolved inside the root by ``ConfinedRoot.list``; they do not descend into
symlinked directories. The tools that cannot be confined are refused in compatibility mode,
with an error naming the reason: ``git_status`` and ``git_diff`` (a subprocess in a
directory) and ``run_shell_command`` (a shell).

The confinement exists on Unix only (it opens each path component from its parent's
descriptor with ``O_NOFOLLOW``). Elsewhere the module imports, :func:`set_root` raises
``NotImplementedError`` and every file tool fails with that reason (:data:`UNIX_ONLY`).
"""

from __future__ import annotations

import ast
import fnmatch
import hashlib
import json
import os
import re
import threading
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any, Dict, Iterator, List, Optional, Tuple

try:
    from .._core import ConfinedRoot
except ImportError:  # not built on this platform (see UNIX_ONLY)
    ConfinedRoot = None  # type: ignore[assignment,misc]

__all__ = [
    "analyze_python_file",
    "checksum_file",
    "git_diff",
    "git_status",
    "json_query",
    "list_directory",
    "read_file",
    "run_shell_command",
    "search_codebase",
    "set_root",
    "write_file",
]

#: The environment variable naming the tools root.
ROOT_ENV = "CODOMYRMEX_MCP_TOOLS_ROOT"
#: The most bytes a tool reads from one file when it has no ``max_size`` of its own.
READ_CAP = 64 * 1024 * 1024
#: The most entries listed from one directory.
_LIST_LIMIT = 65_536

#: Why the tools fail where the extension has no ``ConfinedRoot``: it is built on Unix only.
UNIX_ONLY = (
    "compatibility mode's file tools need Unix: every path goes through the confinement "
    "(codomyrmex_mcp._core.ConfinedRoot), which resolves each path component from its parent "
    "directory's descriptor (openat with O_NOFOLLOW) and is not built on this platform"
)

_root: Optional[ConfinedRoot] = None
_root_lock = threading.Lock()


def set_root(path: str) -> str:
    """Confines the tools to the directory ``path``; returns its canonical path.

    Raises ``OSError`` if it is not an existing directory.
    """
    global _root
    root = _new_root(path)
    with _root_lock:
        _root = root
    return root.path


def _confined() -> ConfinedRoot:
    global _root
    with _root_lock:
        if _root is None:
            _root = _new_root(os.environ.get(ROOT_ENV) or os.getcwd())
        return _root


def _new_root(path: str) -> ConfinedRoot:
    """``ConfinedRoot(path)``; raises ``NotImplementedError`` (:data:`UNIX_ONLY`) where the
    extension has none, so every tool fails with that reason."""
    if ConfinedRoot is None:
        raise NotImplementedError(UNIX_ONLY)
    return ConfinedRoot(path)


def _failure(error: Any) -> Dict[str, Any]:
    return {"error": str(error), "success": False}


def _absolute(root: ConfinedRoot, rel: str) -> str:
    return root.path if rel == "." else os.path.join(root.path, rel)


def _refused(tool: str, why: str) -> Dict[str, Any]:
    return _failure(
        f"{tool} is not available in compatibility mode: {why} cannot be confined to the "
        "tools root (see codomyrmex_mcp.compat.tools)"
    )


def read_file(path: str, encoding: str = "utf-8", max_size: int = 1_000_000) -> Dict[str, Any]:
    """The text of the file at ``path`` (at most ``max_size`` bytes) and its metadata."""
    try:
        root = _confined()
        data = root.read(path, max(0, int(max_size)))
        _size, mtime, _ = root.stat(path)
        content = data.decode(encoding)
        return {
            "success": True,
            "content": content,
            "path": _absolute(root, root.relative_path(path)),
            "size": len(data),
            "lines": content.count("\n") + 1,
            "encoding": encoding,
            "modified": datetime.fromtimestamp(mtime).isoformat(),
        }
    except FileNotFoundError:
        return _failure(f"File not found: {path}")
    except Exception as exc:
        return _failure(exc)


def write_file(path: str, content: str, create_dirs: bool = True) -> Dict[str, Any]:
    """Writes ``content`` (UTF-8) to ``path``, replacing it; makes missing parent directories
    when ``create_dirs``."""
    try:
        root = _confined()
        data = content.encode()
        rel = root.write(path, data, bool(create_dirs))
        return {
            "success": True,
            "path": _absolute(root, rel),
            "bytes_written": len(data),
            "lines": content.count("\n") + 1,
        }
    except Exception as exc:
        return _failure(exc)


def _join(base: str, name: str) -> str:
    return name if base == "." else f"{base}/{name}"


def _walk(root: ConfinedRoot, base: str, recursive: bool) -> Iterator[Tuple[str, str, str, int, float]]:
    """``(relative_to_base, name, kind, size, mtime)`` of each entry under ``base`` (a path
    relative to the root), depth first; every directory is listed by ``ConfinedRoot.list``,
    which resolves it inside the root again. Directories reached through a symlink are not
    descended into; a symlink's kind and size are its target's when that is inside the root,
    and it is left out otherwise."""
    stack = [""]
    while stack:
        sub = stack.pop()
        entries = root.list(_join(base, sub) if sub else base, _LIST_LIMIT)
        children = []
        for name, kind, size, mtime in entries:
            rel = _join(sub, name) if sub else name
            if kind == "symlink":
                try:
                    size, mtime, is_dir = root.stat(_join(base, rel))
                except OSError:
                    continue
                kind = "directory" if is_dir else "file"
                yield rel, name, kind, size, mtime
                continue
            yield rel, name, kind, size, mtime
            if recursive and kind == "directory":
                children.append(rel)
        stack.extend(reversed(children))


def list_directory(
    path: str = ".", pattern: str = "*", recursive: bool = False, max_items: int = 200
) -> Dict[str, Any]:
    """The entries of the directory at ``path`` whose names match the glob ``pattern``
    (in every subdirectory when ``recursive``), at most ``max_items``."""
    try:
        root = _confined()
        try:
            base = root.relative_path(path)
            _, _, is_dir = root.stat(path)
        except FileNotFoundError:
            return _failure(f"Directory not found: {path}")
        if not is_dir:
            return _failure(f"Not a directory: {path}")
        items: List[Dict[str, Any]] = []
        for rel, name, kind, size, mtime in _walk(root, base, bool(recursive)):
            if len(items) >= max_items:
                break
            if not fnmatch.fnmatchcase(rel if "/" in pattern else name, pattern):
                continue
            items.append(
                {
                    "name": name,
                    "path": rel,
                    "type": "directory" if kind == "directory" else "file",
                    "size": size if kind == "file" else None,
                    "modified": datetime.fromtimestamp(mtime).isoformat(),
                }
            )
        return {
            "success": True,
            "path": _absolute(root, base),
            "items": items,
            "total": len(items),
            "truncated": len(items) >= max_items,
        }
    except Exception as exc:
        return _failure(exc)


_SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv"})


def search_codebase(
    pattern: str,
    path: str = ".",
    file_types: Optional[List[str]] = None,
    case_sensitive: bool = False,
    max_results: int = 100,
) -> Dict[str, Any]:
    """Lines matching the regular expression ``pattern`` in the files under ``path`` whose
    suffix is one of ``file_types`` (``.py .js .ts .md .json`` by default), skipping
    ``.git``, ``node_modules``, ``__pycache__`` and ``.venv``; at most ``max_results``."""
    try:
        root = _confined()
        base = root.relative_path(path)
        suffixes = file_types or [".py", ".js", ".ts", ".md", ".json"]
        regex = re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)
        matches: List[Dict[str, Any]] = []
        searched = 0
        for rel, name, kind, _size, _mtime in _walk(root, base, True):
            if len(matches) >= max_results:
                break
            if kind != "file" or _SKIPPED_DIRS.intersection(rel.split("/")):
                continue
            if PurePosixPath(name).suffix not in suffixes:
                continue
            searched += 1
            try:
                text = root.read(_join(base, rel), READ_CAP).decode("utf-8", errors="ignore")
            except OSError:
                continue
            for number, line in enumerate(text.split("\n"), 1):
                if regex.search(line):
                    matches.append({"file": rel, "line": number, "content": line.strip()[:200]})
                    if len(matches) >= max_results:
                        break
        return {
            "success": True,
            "pattern": pattern,
            "matches": matches,
            "total_matches": len(matches),
            "files_searched": searched,
            "truncated": len(matches) >= max_results,
        }
    except Exception as exc:
        return _failure(exc)


def git_status(path: str = ".") -> Dict[str, Any]:
    """Refused in compatibility mode (a subprocess in a directory)."""
    return _refused("git_status", "a subprocess's working directory")


def git_diff(path: str = ".", staged: bool = False) -> Dict[str, Any]:
    """Refused in compatibility mode (a subprocess in a directory)."""
    return _refused("git_diff", "a subprocess's working directory")


def run_shell_command(
    command: str, cwd: str = ".", timeout: int = 30, env: Optional[Dict[str, str]] = None
) -> Dict[str, Any]:
    """Refused in compatibility mode (a shell)."""
    return _refused("run_shell_command", "a shell command")


def _read_text(path: str) -> str:
    return _confined().read(path, READ_CAP).decode("utf-8")


def analyze_python_file(path: str) -> Dict[str, Any]:
    """The classes (with methods and bases), top-level functions, imports and line counts
    of the Python file at ``path``."""
    try:
        content = _read_text(path)
        tree = ast.parse(content)
        classes: List[Dict[str, Any]] = []
        functions: List[Dict[str, Any]] = []
        imports: List[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                methods = [
                    n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                ]
                classes.append(
                    {
                        "name": node.name,
                        "line": node.lineno,
                        "methods": methods,
                        "bases": [ast.unparse(b) for b in node.bases],
                    }
                )
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if node.col_offset == 0:
                    functions.append(
                        {
                            "name": node.name,
                            "line": node.lineno,
                            "args": [a.arg for a in node.args.args],
                            "is_async": isinstance(node, ast.AsyncFunctionDef),
                        }
                    )
            elif isinstance(node, ast.Import):
                imports.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                imports.extend(f"{node.module or ''}.{alias.name}" for alias in node.names)
        lines = content.split("\n")
        code_lines = sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))
        return {
            "success": True,
            "path": path,
            "classes": classes,
            "functions": functions,
            "imports": imports,
            "metrics": {
                "total_lines": len(lines),
                "code_lines": code_lines,
                "class_count": len(classes),
                "function_count": len(functions),
                "import_count": len(imports),
            },
        }
    except Exception as exc:
        return _failure(exc)


def json_query(path: str, query: Optional[str] = None) -> Dict[str, Any]:
    """The JSON file at ``path``, or the value at ``query`` in it (dots and ``[n]``:
    ``"data.items[0].name"``)."""
    try:
        data = json.loads(_read_text(path))
        if not query:
            return {"success": True, "data": data}
        value = data
        for part in query.replace("[", ".").replace("]", "").split("."):
            value = value[int(part)] if part.isdigit() else value[part]
        return {"success": True, "result": value, "query": query}
    except Exception as exc:
        return _failure(exc)


def checksum_file(path: str, algorithm: str = "sha256") -> Dict[str, Any]:
    """The ``md5``, ``sha1`` or (for any other name) ``sha256`` digest of the file."""
    try:
        root = _confined()
        content = root.read(path, READ_CAP)
        if algorithm == "md5":
            digest = hashlib.md5(content, usedforsecurity=False).hexdigest()
        elif algorithm == "sha1":
            digest = hashlib.sha1(content, usedforsecurity=False).hexdigest()
        else:
            digest = hashlib.sha256(content).hexdigest()
        return {
            "success": True,
            "path": _absolute(root, root.relative_path(path)),
            "algorithm": algorithm,
            "checksum": digest,
            "size": len(content),
        }
    except Exception as exc:
        return _failure(exc)
