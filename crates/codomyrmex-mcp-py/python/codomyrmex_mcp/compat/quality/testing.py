"""``codomyrmex.model_context_protocol.quality.testing`` in compatibility mode.

Helpers for testing tools and servers in process: :class:`ToolTester` runs cases against a
registry's handlers, :class:`ServerTester` and :class:`IntegrationTester` drive a server's
``handle_request``, and :class:`TestMCPClient` is a minimal client that sends requests to a
server object directly. Nothing here opens a transport.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

__all__ = [
    "IntegrationTester",
    "ServerTester",
    "TestMCPClient",
    "TestResult",
    "TestSuite",
    "ToolTester",
    "run_quick_test",
]

_PROTOCOL_VERSION = "2024-11-05"


def _elapsed_ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


@dataclass
class TestResult:
    """One check: its name, whether it passed, how long it took, and the error or output."""

    __test__ = False  # not a pytest test class

    name: str
    passed: bool
    duration_ms: float
    error: Optional[str] = None
    output: Optional[Any] = None

    def to_dict(self) -> Dict[str, Any]:
        """Name, outcome, duration and error (the output is left out)."""
        return {
            "name": self.name,
            "passed": self.passed,
            "duration_ms": self.duration_ms,
            "error": self.error,
        }


@dataclass
class TestSuite:
    """A named list of :class:`TestResult`, with counts."""

    __test__ = False  # not a pytest test class

    name: str
    results: List[TestResult] = field(default_factory=list)

    @property
    def passed(self) -> int:
        """How many passed."""
        return sum(1 for r in self.results if r.passed)

    @property
    def failed(self) -> int:
        """How many failed."""
        return sum(1 for r in self.results if not r.passed)

    @property
    def total(self) -> int:
        """How many ran."""
        return len(self.results)

    @property
    def success_rate(self) -> float:
        """The share that passed, 0.0 for an empty suite."""
        return self.passed / self.total if self.total else 0.0

    def summary(self) -> str:
        """``"name: passed/total passed (rate%)"``."""
        return f"{self.name}: {self.passed}/{self.total} passed ({self.success_rate:.1%})"


class ToolTester:
    """Runs test cases against the handlers of a registry whose ``get(name)`` returns a
    dict with a ``handler``."""

    def __init__(self, tool_registry: Any) -> None:
        self.registry = tool_registry
        self.results: List[TestResult] = []

    def test_tool(self, tool_name: str, test_cases: List[Dict[str, Any]]) -> TestSuite:
        """Calls the tool's handler with each case's ``arguments``; a case passes if the
        call does not raise and, when the case has an ``expected``, the result equals it."""
        suite = TestSuite(name=f"Tool: {tool_name}")
        for index, case in enumerate(test_cases):
            case_name = case.get("name", f"case_{index}")
            arguments = case.get("arguments", {})
            expected = case.get("expected")
            start = time.perf_counter()
            try:
                tool = self.registry.get(tool_name)
                if not tool:
                    suite.results.append(
                        TestResult(case_name, False, 0, error=f"Tool not found: {tool_name}")
                    )
                    continue
                handler = tool.get("handler")
                result = handler(**arguments) if handler else None
                duration = _elapsed_ms(start)
                if expected is not None and result != expected:
                    error = f"Expected {expected}, got {result}"
                    suite.results.append(TestResult(case_name, False, duration, error, result))
                else:
                    suite.results.append(TestResult(case_name, True, duration, output=result))
            except Exception as exc:
                suite.results.append(TestResult(case_name, False, _elapsed_ms(start), str(exc)))
        return suite


async def _check(
    server: Any, name: str, request: Dict[str, Any], key: str, error: str
) -> TestResult:
    """Sends ``request``; passes if the answer's ``result`` holds ``key``."""
    start = time.perf_counter()
    try:
        response = await server.handle_request(request)
        duration = _elapsed_ms(start)
        result = response.get("result") if isinstance(response, dict) else None
        if isinstance(result, dict) and key in result:
            return TestResult(name, True, duration, output=result)
        return TestResult(name, False, duration, error=error)
    except Exception as exc:
        return TestResult(name, False, _elapsed_ms(start), error=str(exc))


class ServerTester:
    """Smoke tests of a server's ``handle_request``."""

    def __init__(self, server: Any) -> None:
        self.server = server

    async def test_initialize(self) -> TestResult:
        """``initialize`` answers with a protocol version and capabilities."""
        request = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": _PROTOCOL_VERSION,
                "clientInfo": {"name": "test-client", "version": "1.0.0"},
            },
        }
        start = time.perf_counter()
        try:
            response = await self.server.handle_request(request)
            duration = _elapsed_ms(start)
            result = response.get("result") if isinstance(response, dict) else None
            if isinstance(result, dict) and "protocolVersion" in result and "capabilities" in result:
                return TestResult("initialize", True, duration, output=result)
            return TestResult("initialize", False, duration, error="Invalid initialize response")
        except Exception as exc:
            return TestResult("initialize", False, _elapsed_ms(start), error=str(exc))

    async def test_tools_list(self) -> TestResult:
        """``tools/list`` answers with ``tools``."""
        request = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        return await _check(
            self.server, "tools/list", request, "tools", "Invalid tools/list response"
        )

    async def test_tool_call(self, tool_name: str, arguments: Dict[str, Any]) -> TestResult:
        """``tools/call`` of ``tool_name`` answers with ``content``."""
        request = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": tool_name, "arguments": arguments},
        }
        return await _check(
            self.server, f"tools/call:{tool_name}", request, "content", "Invalid tool call response"
        )

    async def run_smoke_tests(self) -> TestSuite:
        """``initialize`` then ``tools/list``."""
        suite = TestSuite(name="MCP Server Smoke Tests")
        suite.results.append(await self.test_initialize())
        suite.results.append(await self.test_tools_list())
        return suite


class IntegrationTester:
    """Scenarios of requests run in order against a server; a ``"$key"`` parameter is
    replaced by the result an earlier step stored with ``store_as: key``."""

    def __init__(self) -> None:
        self.scenarios: List[Dict[str, Any]] = []

    def add_scenario(self, name: str, steps: List[Dict[str, Any]], description: str = "") -> None:
        """Adds a scenario: ``steps`` of ``{method, params, name?, store_as?}``."""
        self.scenarios.append({"name": name, "description": description, "steps": steps})

    async def run_scenario(self, scenario: Dict[str, Any], server: Any) -> TestSuite:
        """Runs one scenario; a step fails if the server answers with an error."""
        suite = TestSuite(name=scenario["name"])
        stored: Dict[str, Any] = {}
        for index, step in enumerate(scenario["steps"]):
            step_name = step.get("name", f"step_{index}")
            params = step.get("params", {})
            for key, value in list(params.items()):
                if isinstance(value, str) and value.startswith("$") and value[1:] in stored:
                    params[key] = stored[value[1:]]
            start = time.perf_counter()
            try:
                request = {
                    "jsonrpc": "2.0",
                    "id": index + 1,
                    "method": step["method"],
                    "params": params,
                }
                response = await server.handle_request(request)
                duration = _elapsed_ms(start)
                if "store_as" in step and "result" in response:
                    stored[step["store_as"]] = response["result"]
                if "error" in response:
                    message = response["error"].get("message")
                    suite.results.append(TestResult(step_name, False, duration, error=message))
                else:
                    output = response.get("result")
                    suite.results.append(TestResult(step_name, True, duration, output=output))
            except Exception as exc:
                suite.results.append(TestResult(step_name, False, _elapsed_ms(start), str(exc)))
        return suite

    async def run_all(self, server: Any) -> List[TestSuite]:
        """Runs every scenario in order."""
        return [await self.run_scenario(s, server) for s in self.scenarios]


class TestMCPClient:
    """A client that calls a server's ``handle_request`` directly, numbering its requests."""

    __test__ = False  # not a pytest test class

    def __init__(self, server: Any) -> None:
        self.server = server
        self._request_id = 0

    def _next_id(self) -> int:
        self._request_id += 1
        return self._request_id

    async def _send(self, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": self._next_id(), "method": method, "params": params}
        response: Dict[str, Any] = await self.server.handle_request(request)
        return response

    async def initialize(self) -> Dict[str, Any]:
        """``initialize`` as ``mock-client``."""
        return await self._send(
            "initialize",
            {
                "protocolVersion": _PROTOCOL_VERSION,
                "clientInfo": {"name": "mock-client", "version": "1.0.0"},
            },
        )

    async def list_tools(self) -> Dict[str, Any]:
        """``tools/list``."""
        return await self._send("tools/list", {})

    async def call_tool(self, name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
        """``tools/call``."""
        return await self._send("tools/call", {"name": name, "arguments": arguments})

    async def list_resources(self) -> Dict[str, Any]:
        """``resources/list``."""
        return await self._send("resources/list", {})


def run_quick_test(server: Any) -> TestSuite:
    """:meth:`ServerTester.run_smoke_tests`, run to completion on a new event loop."""
    return asyncio.run(ServerTester(server).run_smoke_tests())
