"""Compatibility mode's built-in `tools`: Codomyrmex's file and Python-analysis tools, every
path through the library's ConfinedRoot (issue #28, item 2)."""

import hashlib
import os

import pytest

from codomyrmex_mcp import _core
from codomyrmex_mcp.compat import tools


@pytest.fixture
def root(tmp_path):
    base = tmp_path / "root"
    base.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    canonical = tools.set_root(str(base))
    yield base
    tools._root = None
    assert canonical == os.path.realpath(base)


def test_read_and_write_inside_the_root(root):
    w = tools.write_file("sub/dir/a.txt", "one\ntwo")
    assert w == {"success": True, "path": str(root / "sub/dir/a.txt"), "bytes_written": 7, "lines": 2}
    r = tools.read_file("sub/dir/a.txt")
    assert r["success"] and r["content"] == "one\ntwo" and r["size"] == 7 and r["lines"] == 2
    assert r["path"] == str(root / "sub/dir/a.txt") and r["encoding"] == "utf-8" and "T" in r["modified"]
    # An absolute path inside the root is accepted.
    assert tools.read_file(str(root / "sub/dir/a.txt"))["content"] == "one\ntwo"
    assert tools.write_file(str(root / "b.txt"), "x")["success"]
    assert not tools.write_file("c/d.txt", "x", create_dirs=False)["success"]


@pytest.mark.parametrize("path", ["../outside.txt", "sub/../../outside.txt", "/etc/passwd", "link/outside.txt", "esc"])
def test_paths_that_leave_the_root_are_refused(root, path):
    (root / "sub").mkdir()
    os.symlink(str(root.parent), str(root / "link"))
    os.symlink(str(root.parent / "outside.txt"), str(root / "esc"))
    for result in (tools.read_file(path), tools.checksum_file(path), tools.json_query(path), tools.analyze_python_file(path)):
        assert result["success"] is False
        assert "secret" not in str(result) and "root" in result["error"]
    w = tools.write_file(path, "pwned")
    assert w["success"] is False
    assert (root.parent / "outside.txt").read_text() == "secret"


def test_limits_and_errors_are_results(root):
    (root / "big.txt").write_text("x" * 100)
    assert "larger than the limit" in tools.read_file("big.txt", max_size=10)["error"]
    assert tools.read_file("missing.txt") == {"error": "File not found: missing.txt", "success": False}
    (root / "bin").write_bytes(b"\xff\xfe")
    assert tools.read_file("bin")["success"] is False
    assert tools.read_file("bad\0name")["success"] is False


def test_checksums(root):
    (root / "f").write_bytes(b"abc")
    for algorithm, fn in [("sha256", hashlib.sha256), ("md5", hashlib.md5), ("sha1", hashlib.sha1), ("other", hashlib.sha256)]:
        r = tools.checksum_file("f", algorithm)
        assert r["checksum"] == fn(b"abc").hexdigest() and r["size"] == 3 and r["algorithm"] == algorithm


def test_json_query(root):
    (root / "d.json").write_text('{"data": {"items": [{"name": "n0"}, {"name": "n1"}]}}')
    assert tools.json_query("d.json")["data"]["data"]["items"][1]["name"] == "n1"
    assert tools.json_query("d.json", "data.items[1].name") == {"success": True, "result": "n1", "query": "data.items[1].name"}
    assert tools.json_query("d.json", "data.nope")["success"] is False
    (root / "bad.json").write_text("{")
    assert tools.json_query("bad.json")["success"] is False


def test_analyze_python_file(root):
    (root / "m.py").write_text(
        "import os\nfrom a.b import c, d\n\n# comment\nclass K(Base):\n    def m(self):\n        pass\n\n"
        "async def top(x, y):\n    def inner():\n        pass\n"
    )
    r = tools.analyze_python_file("m.py")
    assert r["success"] and r["path"] == "m.py"
    assert r["classes"] == [{"name": "K", "line": 5, "methods": ["m"], "bases": ["Base"]}]
    assert r["functions"] == [{"name": "top", "line": 9, "args": ["x", "y"], "is_async": True}]
    assert r["imports"] == ["os", "a.b.c", "a.b.d"]
    assert r["metrics"] == {"total_lines": 12, "code_lines": 8, "class_count": 1, "function_count": 1, "import_count": 3}
    (root / "bad.py").write_text("def (:\n")
    assert tools.analyze_python_file("bad.py")["success"] is False


@pytest.fixture
def tree(root):
    (root / "pkg" / "deep").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text("import os\nNEEDLE = 1\n")
    (root / "pkg" / "deep" / "b.py").write_text("x = 'needle' + '" + "y" * 300 + "'\n")
    (root / "pkg" / "notes.md").write_text("NEEDLE in notes\n")
    (root / "pkg" / "c.tar.py.txt").write_text("NEEDLE\n")
    (root / ".git").mkdir()
    (root / ".git" / "x.py").write_text("NEEDLE\n")
    (root / "top.txt").write_text("hello")
    os.symlink("pkg/a.py", str(root / "inside-link.py"))
    os.symlink(str(root.parent / "outside.txt"), str(root / "outside-link.py"))
    os.symlink(str(root.parent), str(root / "up"))
    return root


def test_list_directory(tree):
    r = tools.list_directory(".")
    assert r["success"] and r["path"] == str(tree) and not r["truncated"]
    by_name = {i["name"]: i for i in r["items"]}
    # A link out of the root is left out; one inside is its target.
    assert sorted(by_name) == [".git", "inside-link.py", "pkg", "top.txt"]
    assert by_name["pkg"] == {"name": "pkg", "path": "pkg", "type": "directory", "size": None, "modified": by_name["pkg"]["modified"]}
    assert by_name["top.txt"]["size"] == 5 and by_name["inside-link.py"]["type"] == "file"
    deep = tools.list_directory("pkg", pattern="*.py", recursive=True)
    assert sorted(i["path"] for i in deep["items"]) == ["a.py", "deep/b.py"]
    assert tools.list_directory(".", max_items=2)["truncated"] is True
    assert tools.list_directory("nope") == {"error": "Directory not found: nope", "success": False}
    assert tools.list_directory("top.txt") == {"error": "Not a directory: top.txt", "success": False}
    assert tools.list_directory("up")["success"] is False
    assert tools.list_directory("../")["success"] is False


def test_search_codebase(tree):
    r = tools.search_codebase("needle")
    assert r["success"] and r["files_searched"] == 4  # a.py, deep/b.py, notes.md, inside-link.py
    found = sorted((m["file"], m["line"]) for m in r["matches"])
    assert found == [("inside-link.py", 2), ("pkg/a.py", 2), ("pkg/deep/b.py", 1), ("pkg/notes.md", 1)]
    b = next(m for m in r["matches"] if m["file"] == "pkg/deep/b.py")
    assert len(b["content"]) == 200
    assert len(tools.search_codebase("needle", case_sensitive=True)["matches"]) == 1
    only_py = tools.search_codebase("NEEDLE", path="pkg", file_types=[".py"], max_results=1)
    assert only_py["matches"] == [{"file": "a.py", "line": 2, "content": "NEEDLE = 1"}] and only_py["truncated"]
    assert tools.search_codebase("(", path="pkg")["success"] is False
    assert tools.search_codebase("x", path="../")["success"] is False


@pytest.mark.parametrize(
    "call",
    [
        lambda: tools.git_status("."),
        lambda: tools.git_diff("."),
        lambda: tools.run_shell_command("echo hi"),
    ],
)
def test_unconfinable_tools_are_refused(root, call):
    r = call()
    assert r["success"] is False and "not available in compatibility mode" in r["error"]


def test_the_root_must_be_a_directory(tmp_path):
    with pytest.raises(OSError):
        tools.set_root(str(tmp_path / "missing"))
    with pytest.raises(OSError):
        _core.ConfinedRoot(str(tmp_path / "missing"))


def test_default_root_is_the_environment_or_cwd(tmp_path, monkeypatch):
    tools._root = None
    monkeypatch.setenv(tools.ROOT_ENV, str(tmp_path))
    (tmp_path / "e.txt").write_text("env")
    try:
        assert tools.read_file("e.txt")["content"] == "env"
        tools._root = None
        monkeypatch.delenv(tools.ROOT_ENV)
        monkeypatch.chdir(tmp_path)
        assert tools.read_file("e.txt")["content"] == "env"
    finally:
        tools._root = None


def test_no_file_access_of_its_own():
    """The tools module reads and writes only through ConfinedRoot: no Python file I/O and
    no path resolution of its own (the one confinement is the library's)."""
    import inspect
    import re

    source = inspect.getsource(tools)
    for needle in [r"\bopen\(", r"\.read_text\(", r"\.read_bytes\(", r"\.write_text\(", r"\.write_bytes\(",
                   r"realpath\(", r"\.resolve\(", r"abspath\(", r"\bPath\(", r"subprocess\.", r"os\.walk", r"glob\("]:
        assert not re.search(needle, source), needle


def test_without_the_confinement_the_tools_fail_with_the_unix_reason(monkeypatch, tmp_path):
    """Where the extension has no ConfinedRoot (it is built on Unix only), the module still
    imports; set_root raises and every file tool fails naming why, instead of an import error
    about a missing name."""
    import importlib.util

    monkeypatch.delattr(_core, "ConfinedRoot")
    spec = importlib.util.spec_from_file_location("codomyrmex_mcp.compat._tools_without_unix", tools.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (tmp_path / "a.txt").write_text("x")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotImplementedError, match="need Unix"):
        module.set_root(str(tmp_path))
    for result in (
        module.read_file("a.txt"),
        module.write_file("b.txt", "y"),
        module.list_directory("."),
        module.search_codebase("x"),
        module.analyze_python_file("a.py"),
        module.json_query("a.json"),
        module.checksum_file("a.txt"),
    ):
        assert result["success"] is False and result["error"] == module.UNIX_ONLY, result
    assert not (tmp_path / "b.txt").exists()
