"""Runs Codomyrmex's own tests of its `model_context_protocol` module against the installed
`codomyrmex_mcp`, through a shim that only re-exports (issue #28, item 7). Called by
scripts/codomyrmex-suite.sh, which documents the use; run with the Python that has the
package installed.

    python scripts/codomyrmex_suite.py CHECKOUT [--list] [--keep] [--junit PATH] [-- PYTEST_ARGS...]

CHECKOUT is a Codomyrmex checkout (at least `src/`, `tests/` and `pyproject.toml`; the
commit of record is 5007d90bf97677bec5393af5d2b7770a3abf6203). Nothing of it is changed: the
script copies it to a scratch directory, replaces `src/codomyrmex/model_context_protocol/`
there by one `__init__.py` that calls `codomyrmex_mcp.compat.install()` (so that every
`codomyrmex.model_context_protocol[.sub.module]` import is the same module object as
`codomyrmex_mcp.compat[.sub.module]`), and runs the selected test files in one pytest run
with the checkout's own pytest configuration. Prints the files, then per file its counts,
then the closing line `N passed, M failed, K skipped`.

Which files: those under tests/unit/model_context_protocol/, tests/unit/mcp/,
tests/integration/ and tests/performance/ that exercise the module's API: they import
`codomyrmex.model_context_protocol`, use one of the seed's names (`MCPServer`,
`MCPServerConfig`, `MCPToolRegistry`, `mcp_tool`, `MCPToolCall`, `MCPToolResult`,
`MCPErrorDetail`, `MCPMessage`, `MCPRegistrationError`), and need no other Codomyrmex package
to be collected, nor any third-party package but pytest and the module's own dependencies
(no module-level import of one). At that commit: 21 files, 423 tests (the original passes
408 of them where FastAPI is not installed, skipping 11: the issue counts 407).

A file that cannot be collected counts all its tests (its `test_*` functions) as failed; a
test that fails and whose teardown errors counts once.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Dict, List, Tuple

ROOTS = ("tests/unit/model_context_protocol", "tests/unit/mcp", "tests/integration", "tests/performance")
MODULE = "codomyrmex.model_context_protocol"
SEED_NAMES = re.compile(
    r"\b(MCPServer|MCPServerConfig|MCPToolRegistry|mcp_tool|MCPToolCall|MCPToolResult"
    r"|MCPErrorDetail|MCPMessage|MCPRegistrationError)\b"
)
EXPECTED_FILES = 21

SHIM = '''"""Shim laid by codomyrmex-mcp's scripts/codomyrmex_suite.py: this package is
codomyrmex_mcp.compat (compatibility mode), re-exported, nothing else."""

import codomyrmex_mcp.compat

codomyrmex_mcp.compat.install()
'''


# What a selected file may import at module level besides the standard library and the module:
# pytest, the checkout's own test helpers, and the module's own third-party dependencies. A
# file that needs anything else to be collected (another Codomyrmex package, matplotlib) tests
# something else.
ALLOWED_TOP = {"pytest", "tests", "httpx", "pydantic", "jsonschema"}


def _foreign_top_level(tree: ast.Module) -> set:
    """The top-level packages imported at module level that are not allowed (see above)."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    stdlib = set(getattr(sys, "stdlib_module_names", ()))
    return {n for n in names if n not in stdlib and n not in ALLOWED_TOP and n not in {"codomyrmex", "__future__"}}


def _imports(tree: ast.Module) -> Tuple[set, set]:
    """The `codomyrmex.X` packages a test file imports: (at module level, anywhere)."""
    top, anywhere = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if name == "codomyrmex" or name.startswith("codomyrmex."):
                package = ".".join(name.split(".")[:2])
                anywhere.add(package)
                if node in tree.body:
                    top.add(package)
    return top, anywhere


def select(checkout: Path) -> List[str]:
    """The test files (relative paths, sorted) that exercise the module (see the docstring)."""
    chosen = []
    for root in ROOTS:
        for path in sorted((checkout / root).rglob("test_*.py")):
            text = path.read_text(encoding="utf-8", errors="replace")
            if MODULE not in text or not SEED_NAMES.search(text):
                continue
            try:
                tree = ast.parse(text)
            except SyntaxError:
                continue
            top, anywhere = _imports(tree)
            if MODULE in anywhere and not (top - {MODULE}) and not _foreign_top_level(tree):
                chosen.append(path.relative_to(checkout).as_posix())
    return sorted(chosen)


def static_count(path: Path) -> int:
    """`test_*` functions at module level and in `Test*` classes: a file's tests when it
    cannot be collected (none of the selected files parametrizes)."""
    tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    n = 0
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
            n += 1
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            n += sum(
                1
                for f in node.body
                if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("test_")
            )
    return n


def lay_scratch(checkout: Path, scratch: Path) -> None:
    """Copies the checkout's src, tests and pyproject.toml, and lays the shim."""
    for part in ("src", "tests", "pyproject.toml"):
        source = checkout / part
        if not source.exists():
            raise SystemExit(f"codomyrmex-suite: {source} is missing: CHECKOUT must hold src/, tests/ and pyproject.toml")
        if source.is_dir():
            shutil.copytree(source, scratch / part, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(source, scratch / part)
    module = scratch / "src" / "codomyrmex" / "model_context_protocol"
    if not module.is_dir():
        raise SystemExit(f"codomyrmex-suite: {module.relative_to(scratch)} is missing from the checkout")
    shutil.rmtree(module)
    module.mkdir()
    (module / "__init__.py").write_text(SHIM)


def tally(junit: Path, files: List[str], scratch: Path) -> Tuple[Dict[str, List[int]], List[str]]:
    """Per file [passed, failed, skipped] from pytest's JUnit XML, and the ids that did not
    pass. A test fails if its call or its setup or teardown did; a file whose collection
    failed counts all its tests as failed."""
    per_file: Dict[str, List[int]] = {f: [0, 0, 0] for f in files}
    outcome: Dict[str, str] = {}
    uncollected = set()
    for case in ET.parse(junit).getroot().iter("testcase"):
        file = case.get("file", "")
        if file not in per_file:
            continue
        kinds = {child.tag for child in case}
        if any(child.get("message") == "collection failure" for child in case):
            uncollected.add(file)
            continue
        dotted = file[: -len(".py")].replace("/", ".")
        classes = case.get("classname", "")[len(dotted) + 1 :].replace(".", "::")
        key = "::".join(part for part in (file, classes, case.get("name", "")) if part)
        if "failure" in kinds or "error" in kinds:
            outcome[key] = "failed"
        elif "skipped" in kinds:
            if outcome.get(key) != "failed":
                outcome[key] = "skipped"
        else:
            outcome.setdefault(key, "passed")
    not_passed = []
    for key, result in sorted(outcome.items()):
        file = key.split("::", 1)[0]
        per_file[file][("passed", "failed", "skipped").index(result)] += 1
        if result == "failed":
            not_passed.append(key)
    for file in sorted(uncollected):
        per_file[file] = [0, static_count(scratch / file), 0]
        not_passed.append(f"{file} (not collected)")
    return per_file, not_passed


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--list", action="store_true", help="print the selected files and stop")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("--junit", type=Path, help="also keep pytest's JUnit XML here")
    pytest_args: List[str] = []
    if "--" in argv:
        argv, pytest_args = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    args = parser.parse_args(argv)
    checkout = args.checkout.resolve()
    files = select(checkout)
    print(f"codomyrmex-suite: {len(files)} test files exercise {MODULE}:")
    for f in files:
        print(f"  {f}")
    if len(files) != EXPECTED_FILES:
        print(f"codomyrmex-suite: note: {EXPECTED_FILES} at commit 5007d90; this checkout has {len(files)}")
    if args.list:
        return 0
    try:
        import codomyrmex_mcp.compat as compat  # noqa: F401 -- checked before the run
    except ImportError as e:
        print(f"codomyrmex-suite: codomyrmex_mcp is not installed for {sys.executable}: {e}", file=sys.stderr)
        return 2
    if not callable(getattr(compat, "install", None)):
        print("codomyrmex-suite: this codomyrmex_mcp has no codomyrmex_mcp.compat.install()", file=sys.stderr)
        return 2
    for plugin in ("pytest", "pytest_asyncio", "pytest_timeout"):
        try:
            __import__(plugin)
        except ImportError:
            print(
                f"codomyrmex-suite: {plugin} is missing for {sys.executable} (the checkout's pytest "
                "configuration needs pytest, pytest-asyncio and pytest-timeout)",
                file=sys.stderr,
            )
            return 2
    scratch = Path(tempfile.mkdtemp(prefix="codomyrmex-suite-"))
    try:
        lay_scratch(checkout, scratch)
        junit = scratch / "junit.xml"
        command = [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--timeout=120", "--continue-on-collection-errors",
            f"--junitxml={junit}", "-o", "junit_family=xunit1", f"--basetemp={scratch / 'pytest-tmp'}",
            *pytest_args, *files,
        ]
        # Compatibility mode's file tools are confined to one root (the operator's setting,
        # CODOMYRMEX_MCP_TOOLS_ROOT): here the scratch directory, which holds pytest's temporary
        # directories, so the tests' own files are inside it and everything else stays outside.
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
        env.setdefault("CODOMYRMEX_MCP_TOOLS_ROOT", str(scratch))
        print(f"codomyrmex-suite: running in {scratch}", flush=True)
        subprocess.run(command, cwd=scratch, env=env, stdin=subprocess.DEVNULL)
        if not junit.exists():
            print("codomyrmex-suite: pytest wrote no report", file=sys.stderr)
            return 2
        if args.junit:
            shutil.copy2(junit, args.junit)
        per_file, not_passed = tally(junit, files, scratch)
        print("codomyrmex-suite: per file (passed failed skipped):")
        for f in files:
            p, m, k = per_file[f]
            print(f"  {p:4d} {m:4d} {k:4d}  {f}")
        print("codomyrmex-suite: not passed:")
        for key in not_passed:
            print(f"  {key}")
        passed = sum(v[0] for v in per_file.values())
        failed = sum(v[1] for v in per_file.values())
        skipped = sum(v[2] for v in per_file.values())
        print(f"{passed} passed, {failed} failed, {skipped} skipped")
        return 0 if failed == 0 else 1
    finally:
        if args.keep:
            print(f"codomyrmex-suite: kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
