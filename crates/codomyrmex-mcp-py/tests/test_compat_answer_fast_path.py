"""Compatibility mode's answer to a served `tools/call` is written directly for plain JSON
values (issue #28 item 6: the per-call cost beyond plain mode). It must be exactly the
answer of the general path (the value wrapped as an `MCPToolResult`, decoded, and shaped by
`ShapedHandler.answer`), for every kind of value a tool returns, with and without an output
schema; values that are not plain JSON still take the general path."""

import dataclasses
import datetime
import json

import pytest

from codomyrmex_mcp import _invoke
from codomyrmex_mcp.compat import tool_answers
from codomyrmex_mcp.compat.tool_answers import CONTENT_RESULT, ShapedHandler
from codomyrmex_mcp.schemas.mcp_schemas import MCPToolResult


class Served:
    """A call's state as the engine passes it for a client's `tools/call`."""

    def served(self):
        return True

    def cancelled(self):
        return False


@dataclasses.dataclass
class Point:
    x: int
    y: float


nested = [1]
for _ in range(5000):
    nested = [nested]

VALUES = [
    "hello",
    "",
    "ünïcødé \u2028 \"quoted\" \\ back\nslash",
    "\ud800 lone surrogate",
    0,
    -5,
    2**70,
    1.5,
    1e16,
    -0.0,
    True,
    False,
    None,
    [1, "a", None, 2.5],
    (1, 2),
    {},
    [],
    {"a": [1, 2, {"b": "é"}], "c": None},
    {1: "int key", 2.5: "float key", True: "bool key", None: "none key"},
    float("nan"),
    float("inf"),
    [float("nan")],
    {"x": float("-inf")},
    Point(1, 2.0),
    datetime.date(2026, 12, 2),
    {"when": datetime.datetime(2026, 12, 2, 17, 0)},
    MCPToolResult(status="success", data={"custom": 1}),
    MCPToolResult(status="failure", error={"error_type": "Oops", "error_message": "it broke"}),
    {1, 2},
    object(),
    nested,
]


def general_path(shaped, value):
    """The answer before the fast path: plain invoke's result, then `ShapedHandler.answer`."""
    answer = _invoke.invoke(lambda: value, "{}", None)
    if answer.startswith(_invoke.TEXT_RESULT):
        answer = answer[len(_invoke.TEXT_RESULT) :]
    return shaped.answer(answer)


def parsed(answer):
    assert answer.startswith(CONTENT_RESULT), answer
    value = json.loads(answer[len(CONTENT_RESULT) :])
    for block in value["content"]:
        text = json.loads(block["text"])
        if isinstance(text, dict) and "correlation_id" in text:
            # A failure's object: its correlation id differs from call to call.
            text["correlation_id"] = "*"
            block["text"] = json.dumps(text)
    return value


@pytest.mark.parametrize("structured", [False, True], ids=["no output schema", "output schema"])
@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_the_served_answer_is_the_general_path_s(value, structured):
    shaped = ShapedHandler(lambda: value, "t", structured)
    fast = tool_answers.invoke(shaped, "{}", Served())
    assert parsed(fast) == parsed(general_path(shaped, value))


def test_a_string_s_text_is_json_dumps_of_the_result():
    shaped = ShapedHandler(lambda text: text, "echo", False)
    answer = parsed(tool_answers.invoke(shaped, '{"text": "h\u00e9"}', Served()))
    assert answer["content"] == [{"type": "text", "text": json.dumps({"result": "h\u00e9"})}]
    assert answer["result"] == {"status": "success", "data": None}


def test_in_process_and_execute_are_unchanged():
    shaped = ShapedHandler(lambda text: text, "echo", True)
    # Not served (no state): the MCPToolResult JSON, never marked as text.
    assert json.loads(tool_answers.invoke(shaped, '{"text": "x"}', None)) == {
        "status": "success",
        "data": {"result": "x"},
    }
