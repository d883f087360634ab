"""Compatibility mode's `quality.taxonomy` and `quality.testing`: tool categories by name,
and the in-process testers Codomyrmex's suite drives servers with (issue #28, item 2)."""

import asyncio

import pytest

from codomyrmex_mcp import MCPServer
from codomyrmex_mcp.compat.quality import (
    IntegrationTester,
    ServerTester,
    TestMCPClient,
    TestSuite,
    ToolCategory,
    ToolTester,
    categorize_all_tools,
    categorize_tool,
    generate_taxonomy_report,
    run_quick_test,
)
from codomyrmex_mcp.compat.quality.testing import TestResult


@pytest.mark.parametrize(
    "name, category",
    [
        ("codomyrmex.write_file", ToolCategory.MUTATION),
        ("git_push", ToolCategory.MUTATION),
        ("codomyrmex.run_tests", ToolCategory.EXECUTION),
        ("create_pie_chart", ToolCategory.GENERATION),
        ("create_git_workflow_diagram", ToolCategory.GENERATION),
        ("codomyrmex.analyze_python", ToolCategory.ANALYSIS),
        ("checksum_file", ToolCategory.ANALYSIS),
        ("read_file", ToolCategory.QUERY),
        ("git_status", ToolCategory.QUERY),
        ("something_unknown", ToolCategory.QUERY),
        ("x.get_write_file", ToolCategory.MUTATION),  # first rule wins
    ],
)
def test_categorize(name, category):
    assert categorize_tool(name) is category


def test_report():
    names = ["write_file", "read_file", "run_command", "get_x"]
    assert categorize_all_tools(names)["run_command"] is ToolCategory.EXECUTION
    report = generate_taxonomy_report(names)
    assert report.total == 4
    assert report.by_category == {"mutation": 1, "query": 2, "execution": 1}
    assert report.tools["get_x"] == "query"
    assert report.summary() == {"total": 4, "by_category": report.by_category, "coverage": "4/4"}


def test_suite_counts():
    s = TestSuite("s", [TestResult("a", True, 1.0), TestResult("b", False, 2.0, error="e")])
    assert (s.passed, s.failed, s.total, s.success_rate) == (1, 1, 2, 0.5)
    assert s.summary() == "s: 1/2 passed (50.0%)"
    assert TestSuite("e").success_rate == 0.0
    assert TestResult("a", False, 1.5, "err", output=3).to_dict() == {"name": "a", "passed": False, "duration_ms": 1.5, "error": "err"}


def test_tool_tester():
    class Registry:
        def get(self, name):
            return {"handler": lambda a, b: a + b} if name == "add" else None

    suite = ToolTester(Registry()).test_tool("add", [
        {"arguments": {"a": 1, "b": 2}, "expected": 3},
        {"name": "wrong", "arguments": {"a": 1, "b": 2}, "expected": 4},
        {"arguments": {"a": 1}},
    ])
    assert [r.passed for r in suite.results] == [True, False, False]
    assert suite.results[1].name == "wrong" and suite.results[1].error == "Expected 4, got 3"
    assert "missing" in suite.results[2].error
    missing = ToolTester(Registry()).test_tool("nope", [{}])
    assert missing.results[0].error == "Tool not found: nope"


class FakeServer:
    """Answers like a Codomyrmex server; records what it was sent."""

    def __init__(self):
        self.sent = []

    async def handle_request(self, request):
        self.sent.append(request)
        method = request["method"]
        if method == "initialize":
            return {"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": "2024-11-05", "capabilities": {}}}
        if method == "tools/list":
            return {"jsonrpc": "2.0", "id": request["id"], "result": {"tools": [{"name": "t"}]}}
        if method == "tools/call":
            return {"jsonrpc": "2.0", "id": request["id"], "result": {"content": [], "echo": request["params"]}}
        return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": "nope"}}


def test_test_client_numbers_its_requests():
    server = FakeServer()
    client = TestMCPClient(server)

    async def go():
        await client.initialize()
        await client.list_tools()
        await client.call_tool("t", {"a": 1})
        return await client.list_resources()

    assert "error" in asyncio.run(go())
    assert [r["id"] for r in server.sent] == [1, 2, 3, 4]
    assert [r["method"] for r in server.sent] == ["initialize", "tools/list", "tools/call", "resources/list"]
    assert server.sent[0]["params"]["clientInfo"]["name"] == "mock-client"
    assert server.sent[2]["params"] == {"name": "t", "arguments": {"a": 1}}


def test_server_tester_and_quick_test():
    suite = run_quick_test(FakeServer())
    assert suite.name == "MCP Server Smoke Tests" and suite.passed == 2
    tester = ServerTester(FakeServer())
    assert asyncio.run(tester.test_tool_call("t", {})).passed

    class Broken:
        async def handle_request(self, request):
            raise RuntimeError("down")

    result = asyncio.run(ServerTester(Broken()).test_initialize())
    assert not result.passed and result.error == "down"


def test_server_tester_against_the_package_server():
    server = MCPServer()

    @server.tool()
    def echo(text: str) -> str:
        """Echo."""
        return text

    tester = ServerTester(server)
    init = asyncio.run(tester.test_initialize())
    assert init.passed, init.error


def test_integration_tester_substitutes_stored_results():
    tester = IntegrationTester()
    tester.add_scenario("s", [
        {"method": "tools/list", "store_as": "listing"},
        {"name": "call", "method": "tools/call", "params": {"name": "t", "arguments": "$listing"}},
        {"method": "nope"},
    ])
    server = FakeServer()
    (suite,) = asyncio.run(tester.run_all(server))
    assert [r.passed for r in suite.results] == [True, True, False]
    assert suite.results[1].name == "call"
    assert server.sent[1]["params"]["arguments"] == {"tools": [{"name": "t"}]}
    assert suite.results[2].error == "nope"
