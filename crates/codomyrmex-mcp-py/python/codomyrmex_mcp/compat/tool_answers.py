"""How a tool answers a ``tools/call`` in compatibility mode, as Codomyrmex's server answers:

- a success's text is ``json.dumps({"result": value})`` (the original's ``json.dumps`` of
  the result's data), with ``structuredContent`` only when the tool declares an output
  schema;
- a failure's text is the original's error object (its ``MCPToolError.to_dict()``: ``code``,
  ``message``, ``correlation_id``, ``tool_name``, ``module``, ``field_errors``), with no
  ``structuredContent``.

The compat registry registers each handler inside a :class:`ShapedHandler`; its invoker
(:func:`invoke`) runs the handler as plain :mod:`codomyrmex_mcp` does and, for a call that
answers a client (``tools/call``), hands the engine the shaped content itself (the
``content:`` answer of the extension's registry). So the answer is made once, before the
engine sends it, and is the same over stdio, Streamable HTTP and in process
(``handle_request``). An in-process ``MCPToolRegistry.execute`` still gets the original's
``MCPToolResult`` (``data={"result": value}``). Failures the engine decides before or around
the tool (invalid arguments, a deadline, the rate limit) are not the tool's answer: the
engine words those (see docs/codomyrmex-compat.md).
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Callable, Dict, List, Optional

from json.encoder import encode_basestring_ascii as _quote

from .._invoke import TEXT_RESULT, _not_plain, _plain_json, result_not_serializable, run, wrap
from .._invoke import invoke as _plain_invoke

__all__ = ["CONTENT_RESULT", "ShapedHandler", "error_object", "error_result", "invoke"]

# Put by `invoke` before an answer that names its content blocks itself,
# `{"content": [...], "result": MCPToolResult}` (the extension's registry.rs, `CONTENT_RESULT`).
CONTENT_RESULT = "content:"

# The original's error codes, by the error type of our failure detail.
_ERROR_CODES = {
    "ValidationError": "VALIDATION_ERROR",
    "TIMEOUT": "TIMEOUT",
    "RATE_LIMITED": "RATE_LIMITED",
    "ToolNotFound": "NOT_FOUND",
    "OVERLOADED": "RATE_LIMITED",
}


def _field_errors(details: Any) -> List[Dict[str, str]]:
    """``[{"field", "constraint"}]`` of a validation failure's violations (our detail's
    ``error_details``), as the original's ``FieldError``s."""
    violations = details.get("violations") if isinstance(details, dict) else None
    fields = []
    for violation in violations if isinstance(violations, list) else []:
        if not isinstance(violation, dict):
            continue
        message = str(violation.get("message", ""))
        field = str(violation.get("pointer") or "").lstrip("/")
        if not field and violation.get("rule") == "required" and message.count('"') >= 2:
            field = message.split('"')[1]
        fields.append({"field": field, "constraint": f"{field}: {message}" if field else message})
    return fields


def error_object(
    tool_name: str, error_type: str, message: str, details: Any = None, timeout: Optional[float] = None
) -> Dict[str, Any]:
    """The original's error object (its ``MCPToolError.to_dict()``) for a failure of
    ``error_type`` (our detail's): ``code``, ``message`` (the original's wording for a
    validation failure, a timeout and the rate limit), ``correlation_id``, and ``tool_name``,
    ``module`` (the error type of an execution error) and ``field_errors`` when known."""
    code = _ERROR_CODES.get(error_type, "EXECUTION_ERROR")
    fields: List[Dict[str, str]] = []
    if code == "VALIDATION_ERROR":
        fields = _field_errors(details)
        reasons = "; ".join(f["constraint"] for f in fields) or message
        message = f"Validation failed for tool {tool_name!r}: {reasons}"
    elif code == "TIMEOUT" and timeout is not None:
        message = f"Tool {tool_name!r} timed out after {timeout}s"
    elif code == "RATE_LIMITED" and error_type == "RATE_LIMITED":
        message = f"Rate limit exceeded for tool {tool_name!r}"
    value: Dict[str, Any] = {"code": code, "message": message, "correlation_id": uuid.uuid4().hex[:12]}
    if tool_name:
        value["tool_name"] = tool_name
    if code == "EXECUTION_ERROR" and error_type:
        value["module"] = error_type
    if fields:
        value["field_errors"] = fields
    return value


def error_result(
    tool_name: str, error_type: str, message: str, details: Any = None, timeout: Optional[float] = None
) -> Dict[str, Any]:
    """A ``tools/call`` result with the original's error object as its text."""
    text = json.dumps(error_object(tool_name, error_type, message, details, timeout))
    return {"content": [{"type": "text", "text": text}], "isError": True}


def is_error_object(result: Dict[str, Any]) -> bool:
    """Whether ``result`` (a ``tools/call`` result) already carries the original's error
    object as its text (a tool's own failure, shaped before the engine sent it)."""
    content = result.get("content")
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict):
        return False
    try:
        value = json.loads(str(content[0].get("text", "")))
    except ValueError:
        return False
    return isinstance(value, dict) and isinstance(value.get("code"), str) and "message" in value


class ShapedHandler:
    """What the compat registry registers for ``handler`` (``None`` too): the handler, the
    tool's name, and whether the tool declares an output schema (then a success keeps
    ``structuredContent``). :func:`invoke` unwraps it; called directly, it calls the
    handler."""

    __slots__ = ("handler", "tool_name", "structured")

    def __init__(self, handler: Optional[Callable[..., Any]], tool_name: str, structured: bool) -> None:
        self.handler = handler
        self.tool_name = tool_name
        self.structured = structured

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.handler is None:
            raise TypeError(f"no handler is registered for tool {self.tool_name!r}")
        return self.handler(*args, **kwargs)

    def answer(self, result_json: str) -> str:
        """The ``content:`` answer for a call's ``MCPToolResult`` JSON (see the module docs)."""
        result = json.loads(result_json)
        error = result.get("error")
        if "fail" in str(result.get("status", "")).lower() and isinstance(error, dict):
            value = error_object(
                self.tool_name,
                str(error.get("error_type") or ""),
                str(error.get("error_message") or ""),
                error.get("error_details"),
            )
        else:
            value = result.get("data")
            if not self.structured:
                result["data"] = None
        text = json.dumps(value)
        return CONTENT_RESULT + json.dumps({"content": [{"type": "text", "text": text}], "result": result})


# `json.dumps` as the original writes a success's text (its separators, ASCII only), made
# once; values that are not plain JSON (models, dataclasses, NaN, ...) raise and take the
# general path (`wrap`, then `ShapedHandler.answer`).
_encode_text = json.JSONEncoder(allow_nan=False, default=_not_plain).encode
_SCALARS = (str, int, float, bool)


def _served_success(shaped: ShapedHandler, value: Any) -> str:
    """The ``content:`` answer of a success, written directly when ``value`` is plain JSON:
    the same text and result as ``shaped.answer(wrap(value))``, with one encoding of the
    value instead of an encoding, a decoding and two more encodings per call."""
    try:
        if type(value) in _SCALARS or value is None:
            # Written as `json.dumps` writes them, without building an encoder per call.
            text = '{"result": ' + _plain_json(value) + "}"
        else:
            text = _encode_text({"result": value})
    except (TypeError, ValueError, RecursionError):
        try:
            return shaped.answer(wrap(value))
        except Exception as e:
            return shaped.answer(result_not_serializable(e))
    data = text if shaped.structured else "null"
    return (
        CONTENT_RESULT
        + '{"content":[{"type":"text","text":'
        + _quote(text)
        + '}],"result":{"status":"success","data":'
        + data
        + "}}"
    )


def invoke(handler: Any, arguments_json: str, state: Any) -> str:
    """The compat registry's invoker: the handler run as plain
    :func:`codomyrmex_mcp._invoke.invoke` runs it, then, for a :class:`ShapedHandler`
    answering a client's ``tools/call``, the original's answer (see the module docs). A
    ``str`` result is never marked as text: the original's text is ``{"result": ...}``'s
    JSON."""
    shaped = handler if type(handler) is ShapedHandler else None
    if shaped is None or state is None or not state.served():
        answer = _plain_invoke(shaped.handler if shaped is not None else handler, arguments_json, state)
        return answer[len(TEXT_RESULT) :] if answer.startswith(TEXT_RESULT) else answer
    value, failure = run(shaped.handler, arguments_json, state)
    if failure is not None:
        return shaped.answer(failure)
    return _served_success(shaped, value)
