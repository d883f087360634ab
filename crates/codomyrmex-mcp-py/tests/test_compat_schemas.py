"""Compatibility mode's `schemas` dataclass API: tools, parameters, calls, results, messages
and conversations as Codomyrmex builds them for a model (issue #28, item 2)."""

import json
from datetime import datetime

from codomyrmex_mcp.compat.schemas import (
    ContentType,
    Conversation,
    FileContent,
    ImageContent,
    Message,
    MessageRole,
    Request,
    Response,
    TextContent,
    Tool,
    ToolCall,
    ToolParameter,
    ToolResult,
    create_tool,
)


def test_enums():
    assert [r.value for r in MessageRole] == ["user", "assistant", "system", "tool"]
    assert ContentType.TOOL_RESULT.value == "tool_result"


def test_content_blocks_leave_out_unset_optionals():
    assert TextContent(text="hi").to_dict() == {"type": "text", "text": "hi"}
    assert ImageContent(source="u").to_dict() == {"type": "image", "source": "u", "media_type": "image/png"}
    assert ImageContent(source="u", alt_text="a").to_dict()["alt_text"] == "a"
    assert "size" not in FileContent(name="f", size=0).to_dict()
    assert FileContent(name="f", path="/p", mime_type="text/plain", size=3).to_dict() == {
        "type": "file", "name": "f", "path": "/p", "mime_type": "text/plain", "size": 3,
    }


def test_parameter_dict_and_schema():
    p = ToolParameter("n", "integer", "count")
    assert p.to_dict() == {"name": "n", "type": "integer", "description": "count", "required": True}
    assert p.to_json_schema() == {"type": "integer", "description": "count"}
    q = ToolParameter("lvl", "string", "level", required=False, default="lo", enum=["lo", "hi"])
    assert q.to_dict()["default"] == "lo" and q.to_dict()["enum"] == ["lo", "hi"]
    assert q.to_json_schema() == {"type": "string", "description": "level", "enum": ["lo", "hi"]}


def test_tool_openai_format_lists_required_parameters_in_order():
    tool = Tool("search", "find things", [
        ToolParameter("q", "string", "query"),
        ToolParameter("limit", "integer", "max", required=False),
        ToolParameter("mode", "string", "how"),
    ])
    fmt = tool.to_openai_format()
    assert fmt["type"] == "function"
    fn = fmt["function"]
    assert fn["name"] == "search" and fn["description"] == "find things"
    assert fn["parameters"]["type"] == "object"
    assert list(fn["parameters"]["properties"]) == ["q", "limit", "mode"]
    assert fn["parameters"]["required"] == ["q", "mode"]
    d = tool.to_dict()
    assert d["version"] == "1.0.0" and d["returns"] is None and len(d["parameters"]) == 3


def test_create_tool_defaults():
    tool = create_tool("t", "d", {"a": {}, "b": {"type": "number", "required": False, "default": 1.5, "enum": [1.5]}})
    a, b = tool.parameters
    assert (a.name, a.param_type, a.description, a.required, a.default) == ("a", "string", "", True, None)
    assert (b.param_type, b.required, b.default, b.enum) == ("number", False, 1.5, [1.5])
    assert create_tool("t", "d").parameters == []


def test_calls_and_results_are_tagged():
    assert ToolCall("1", "t", {"x": 1}).to_dict() == {"type": "tool_call", "id": "1", "name": "t", "arguments": {"x": 1}}
    assert ToolCall("1", "t").arguments == {}
    assert ToolResult("1", {"ok": True}, is_error=True).to_dict() == {
        "type": "tool_result", "tool_call_id": "1", "content": {"ok": True}, "is_error": True,
    }


def test_message_text_and_dict():
    m = Message(MessageRole.ASSISTANT, [TextContent(text="a"), ToolCall("1", "t"), TextContent(text="b")])
    assert m.get_text() == "a\nb"
    d = m.to_dict()
    assert d["role"] == "assistant" and [c["type"] for c in d["content"]] == ["text", "tool_call", "text"]
    assert "name" not in d and "metadata" not in d
    named = Message(MessageRole.TOOL, [], name="n", metadata={"k": 1}).to_dict()
    assert named["name"] == "n" and named["metadata"] == {"k": 1}
    assert Message.from_text(MessageRole.USER, "hi").content == [TextContent(text="hi")]


def test_conversation_serializes_with_iso_time():
    c = Conversation("c1", created_at=datetime(2026, 1, 2, 3, 4, 5))
    c.add_user_message("q")
    c.add_assistant_message("a")
    c.add_message(Message.from_text(MessageRole.SYSTEM, "s"))
    data = json.loads(c.to_json())
    assert data["id"] == "c1" and data["created_at"] == "2026-01-02T03:04:05"
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "system"]
    assert "\n  " in c.to_json()  # indented


def test_request_and_response():
    conv = Conversation("c")
    r = Request(conv, tools=[create_tool("t", "d")], model="m", max_tokens=5)
    d = r.to_dict()
    assert d["temperature"] == 0.7 and d["max_tokens"] == 5 and d["stop_sequences"] == []
    assert d["tools"][0]["name"] == "t" and d["conversation"]["id"] == "c"
    resp = Response(Message.from_text(MessageRole.ASSISTANT, "x"), usage={"in": 1})
    assert resp.to_dict() == {
        "message": {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
        "finish_reason": "stop", "usage": {"in": 1}, "model": "",
    }
