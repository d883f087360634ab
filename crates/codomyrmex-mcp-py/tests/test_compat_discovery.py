"""Compatibility mode's `discovery`: `@mcp_tool` functions found across a package tree,
with a report of what failed to import and the engine's metrics (issue #28, item 2)."""

import sys
import textwrap
import types

import pytest

from codomyrmex_mcp import mcp_tool as plain_mcp_tool
from codomyrmex_mcp.compat.discovery import (
    DiscoveredTool,
    DiscoveryMetrics,
    DiscoveryReport,
    FailedModule,
    MCPDiscovery,
    mcp_tool,
)


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A package `dpkg` with tools in a module, a subpackage and a class, a module that
    fails to import and one that raises while importing."""
    root = tmp_path / "dpkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("")
    (root / "tools_a.py").write_text(textwrap.dedent('''
        from codomyrmex_mcp.compat.discovery import mcp_tool

        @mcp_tool(tags=["io"])
        def alpha(x: int, y: str = "a"):
            """  Alpha tool.  """

        @mcp_tool(name="custom.beta", description="Beta", requires=["json", "no_such_pkg_xyz"])
        def beta():
            pass

        class Holder:
            @staticmethod
            @mcp_tool()
            def gamma():
                """Gamma."""

        def plain():
            pass
    '''))
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "deep.py").write_text(textwrap.dedent('''
        def delta():
            """Delta."""
        delta._mcp_tool_meta = {"name": "codomyrmex.delta", "description": "", "category": "hermes",
                                "schema": {"type": "object"}, "version": "2.0"}
    '''))
    (root / "broken.py").write_text("import no_such_module_for_discovery_test\n")
    (root / "raises.py").write_text("raise RuntimeError('boom at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "dpkg"
    for name in [m for m in sys.modules if m == "dpkg" or m.startswith("dpkg.")]:
        del sys.modules[name]


def test_scan_package_finds_tools_everywhere_and_reports_failures(tree):
    engine = MCPDiscovery()
    report = engine.scan_package(tree)
    assert isinstance(report, DiscoveryReport)
    names = sorted(t.name for t in report.tools)
    assert names == ["alpha", "codomyrmex.delta", "custom.beta", "gamma"]
    assert report.modules_scanned == 5  # broken, raises, sub, sub.deep, tools_a
    failed = {f.module: f for f in report.failed_modules}
    assert set(failed) == {"dpkg.broken", "dpkg.raises"}
    assert failed["dpkg.broken"].error_type == "ModuleNotFoundError"
    assert "no_such_module_for_discovery_test" in failed["dpkg.broken"].error
    assert failed["dpkg.raises"] == FailedModule("dpkg.raises", "boom at import", "RuntimeError")
    assert engine.tool_count == 4 and report.scan_duration_ms > 0

    alpha = engine.get_tool("alpha")
    assert alpha.description == "Alpha tool."
    assert alpha.tags == ["io", "mcp"]
    assert alpha.module_path == "dpkg.tools_a" and alpha.callable_name == "alpha"
    assert alpha.parameters == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "string"}},
        "required": ["x"],
    }
    assert alpha.available and alpha.handler is sys.modules["dpkg.tools_a"].alpha

    beta = engine.get_tool("custom.beta")
    assert beta.description == "Beta" and beta.tags == ["mcp"]
    assert not beta.available
    assert "no_such_pkg_xyz" in beta.unavailable_reason and "json" not in beta.unavailable_reason.split(":")[1]
    assert beta.to_mcp_schema()["description"].startswith("Beta (UNAVAILABLE: Missing dependencies: no_such_pkg_xyz")

    delta = engine.get_tool("codomyrmex.delta")
    assert delta.tags == ["hermes", "agent", "mcp"]
    assert delta.parameters == {"type": "object"} and delta.version == "2.0"
    assert delta.description == "Delta."

    metrics = engine.get_metrics()
    assert metrics.total_tools == 4 and metrics.modules_scanned == 5
    assert sorted(metrics.failed_modules) == ["dpkg.broken", "dpkg.raises"]
    assert metrics.last_scan_time is not None and metrics.last_scan_time.tzinfo is not None


def test_the_package_decorator_marks_are_found_too(tmp_path, monkeypatch):
    mod = types.ModuleType("plain_marked")

    @plain_mcp_tool(category="search")
    def find(q: str) -> str:
        """Find."""
        return q

    mod.find = find
    tools = MCPDiscovery()._scan_module(mod)
    assert [t.callable_name for t in tools] == ["find"]
    assert tools[0].tags == ["search", "mcp"]


def test_an_unimportable_root_is_one_failure():
    engine = MCPDiscovery()
    report = engine.scan_package("no.such.package.for.discovery")
    assert report.tools == [] and report.modules_scanned == 0
    assert [f.error_type for f in report.failed_modules] == ["ModuleNotFoundError"]


def test_scan_module_merges_and_records_failures(tree):
    engine = MCPDiscovery()
    engine.register_tool(DiscoveredTool("manual", "M", "m", "manual", tags=["io"]))
    r = engine.scan_module("dpkg.sub.deep")
    assert [t.name for t in r.tools] == ["codomyrmex.delta"] and r.modules_scanned == 1
    assert engine.tool_count == 2
    assert [t.name for t in engine.list_tools(tag="io")] == ["manual"]
    bad = engine.scan_module("dpkg.raises")
    assert bad.modules_scanned == 1 and bad.failed_modules[0].error_type == "RuntimeError"
    assert engine.get_metrics().failed_modules == ["dpkg.raises"]
    assert engine.tool_count == 2


def test_a_plain_module_is_scanned_as_one(tree):
    report = MCPDiscovery().scan_package("dpkg.tools_a")
    assert report.modules_scanned == 1
    assert sorted(t.name for t in report.tools) == ["alpha", "custom.beta", "gamma"]


def test_metrics_and_cache_hits():
    engine = MCPDiscovery()
    assert engine.get_metrics() == DiscoveryMetrics()
    engine.record_cache_hit()
    engine.record_cache_hit()
    assert engine.get_metrics().cache_hits == 2
    assert engine.get_tool("x") is None and engine.list_tools() == []


def test_to_mcp_schema_of_an_available_tool():
    t = DiscoveredTool("n", "d", "mod", "fn", parameters={"type": "object"}, tags=["a"], version="3")
    assert t.to_mcp_schema() == {
        "name": "n", "description": "d", "inputSchema": {"type": "object"}, "tags": ["a"],
        "x-codomyrmex": {"module": "mod", "callable": "fn", "version": "3", "available": True},
    }


def test_discovery_decorator_keeps_the_function():
    def f(a):
        return a

    assert mcp_tool()(f) is f
    assert f._mcp_tool_meta == {
        "name": None, "description": "", "tags": [], "version": "1.0", "requires": [],
        "parameters": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
    }
