"""``codomyrmex.model_context_protocol.schemas`` in compatibility mode.

The plain dataclasses Codomyrmex uses to describe tools and conversations for a model:
:class:`Tool` and :class:`ToolParameter` (with the OpenAI function-calling form),
:class:`ToolCall` and :class:`ToolResult`, the content types, :class:`Message`,
:class:`Conversation`, :class:`Request` and :class:`Response`, and :func:`create_tool`.
They are data only; nothing here talks MCP. The Pydantic wire models are in the
:mod:`.mcp_schemas` submodule.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Dict, List, Optional, Union

__all__ = [
    "ContentType",
    "Conversation",
    "FileContent",
    "ImageContent",
    "Message",
    "MessageRole",
    "Request",
    "Response",
    "TextContent",
    "Tool",
    "ToolCall",
    "ToolParameter",
    "ToolResult",
    "create_tool",
]


class MessageRole(Enum):
    """Who wrote a message."""

    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class ContentType(Enum):
    """The kinds of content a message may hold."""

    TEXT = "text"
    IMAGE = "image"
    FILE = "file"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"


@dataclass
class TextContent:
    """A block of text."""

    type: str = "text"
    text: str = ""

    def to_dict(self) -> Dict[str, Any]:
        """``{"type", "text"}``."""
        return {"type": self.type, "text": self.text}


@dataclass
class ImageContent:
    """An image, by URL or base64 ``source``; ``alt_text`` only when set."""

    type: str = "image"
    source: str = ""
    media_type: str = "image/png"
    alt_text: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """The image's fields; ``alt_text`` is left out when empty."""
        out: Dict[str, Any] = {
            "type": self.type,
            "source": self.source,
            "media_type": self.media_type,
        }
        if self.alt_text:
            out["alt_text"] = self.alt_text
        return out


@dataclass
class FileContent:
    """A file reference; ``size`` only when known and non-zero."""

    type: str = "file"
    name: str = ""
    path: str = ""
    mime_type: str = ""
    size: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        """The file's fields; ``size`` is left out when missing or zero."""
        out: Dict[str, Any] = {
            "type": self.type,
            "name": self.name,
            "path": self.path,
            "mime_type": self.mime_type,
        }
        if self.size:
            out["size"] = self.size
        return out


@dataclass
class ToolParameter:
    """One parameter of a :class:`Tool`; ``param_type`` is a JSON Schema type name."""

    name: str
    param_type: str
    description: str
    required: bool = True
    default: Any = None
    enum: Optional[List[Any]] = None

    def to_dict(self) -> Dict[str, Any]:
        """The parameter as a dict (``param_type`` under ``type``); ``default`` and
        ``enum`` only when set."""
        out: Dict[str, Any] = {
            "name": self.name,
            "type": self.param_type,
            "description": self.description,
            "required": self.required,
        }
        if self.default is not None:
            out["default"] = self.default
        if self.enum:
            out["enum"] = self.enum
        return out

    def to_json_schema(self) -> Dict[str, Any]:
        """The parameter's JSON Schema: ``type``, ``description`` and ``enum`` if set."""
        schema: Dict[str, Any] = {"type": self.param_type, "description": self.description}
        if self.enum:
            schema["enum"] = self.enum
        return schema


@dataclass
class Tool:
    """A tool a model may call."""

    name: str
    description: str
    parameters: List[ToolParameter] = field(default_factory=list)
    returns: Optional[str] = None
    version: str = "1.0.0"

    def to_dict(self) -> Dict[str, Any]:
        """The tool and its parameters as dicts."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": [p.to_dict() for p in self.parameters],
            "returns": self.returns,
            "version": self.version,
        }

    def to_openai_format(self) -> Dict[str, Any]:
        """The OpenAI function-calling form: an object schema of the parameters, the
        required ones listed in order."""
        properties: Dict[str, Any] = {}
        required: List[str] = []
        for param in self.parameters:
            properties[param.name] = param.to_json_schema()
            if param.required:
                required.append(param.name)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": properties,
                    "required": required,
                },
            },
        }


@dataclass
class ToolCall:
    """A model's call of a tool."""

    id: str
    name: str
    arguments: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """The call, tagged ``"type": "tool_call"``."""
        return {"type": "tool_call", "id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass
class ToolResult:
    """What a tool call returned."""

    tool_call_id: str
    content: Any
    is_error: bool = False

    def to_dict(self) -> Dict[str, Any]:
        """The result, tagged ``"type": "tool_result"``."""
        return {
            "type": "tool_result",
            "tool_call_id": self.tool_call_id,
            "content": self.content,
            "is_error": self.is_error,
        }


ContentItem = Union[TextContent, ImageContent, FileContent, ToolCall, ToolResult]


@dataclass
class Message:
    """One message of a conversation: a role and its content blocks."""

    role: MessageRole
    content: List[ContentItem]
    name: Optional[str] = None
    metadata: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """The role's value and the blocks; ``name`` and ``metadata`` only when set."""
        out: Dict[str, Any] = {
            "role": self.role.value,
            "content": [c.to_dict() for c in self.content],
        }
        if self.name:
            out["name"] = self.name
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    @classmethod
    def from_text(cls, role: MessageRole, text: str) -> "Message":
        """A message of one text block."""
        return cls(role=role, content=[TextContent(text=text)])

    def get_text(self) -> str:
        """The text blocks' text, joined by newlines (other blocks are skipped)."""
        return "\n".join(c.text for c in self.content if isinstance(c, TextContent))


@dataclass
class Conversation:
    """A conversation: its id, messages, metadata and creation time."""

    id: str
    messages: List[Message] = field(default_factory=list)
    metadata: Dict[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=datetime.now)

    def add_message(self, message: Message) -> None:
        """Appends ``message``."""
        self.messages.append(message)

    def add_user_message(self, text: str) -> None:
        """Appends a user message of one text block."""
        self.messages.append(Message.from_text(MessageRole.USER, text))

    def add_assistant_message(self, text: str) -> None:
        """Appends an assistant message of one text block."""
        self.messages.append(Message.from_text(MessageRole.ASSISTANT, text))

    def to_dict(self) -> Dict[str, Any]:
        """The conversation; ``created_at`` in ISO 8601."""
        return {
            "id": self.id,
            "messages": [m.to_dict() for m in self.messages],
            "metadata": self.metadata,
            "created_at": self.created_at.isoformat(),
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as indented JSON text."""
        return json.dumps(self.to_dict(), indent=2)


@dataclass
class Request:
    """A request to a model: the conversation, the tools it may call and the sampling
    settings."""

    conversation: Conversation
    tools: List[Tool] = field(default_factory=list)
    model: str = ""
    temperature: float = 0.7
    max_tokens: Optional[int] = None
    stop_sequences: List[str] = field(default_factory=list)

    def to_dict(self) -> Dict[str, Any]:
        """The request with its conversation and tools as dicts."""
        return {
            "conversation": self.conversation.to_dict(),
            "tools": [t.to_dict() for t in self.tools],
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "stop_sequences": self.stop_sequences,
        }


@dataclass
class Response:
    """A model's answer: the message, why it stopped, token usage and the model."""

    message: Message
    finish_reason: str = "stop"
    usage: Dict[str, int] = field(default_factory=dict)
    model: str = ""

    def to_dict(self) -> Dict[str, Any]:
        """The response with its message as a dict."""
        return {
            "message": self.message.to_dict(),
            "finish_reason": self.finish_reason,
            "usage": self.usage,
            "model": self.model,
        }


def create_tool(
    name: str,
    description: str,
    parameters: Optional[Dict[str, Dict[str, Any]]] = None,
) -> Tool:
    """A :class:`Tool` from ``{param_name: {type, description, required, default, enum}}``.

    A parameter's ``type`` defaults to ``"string"``, its description to ``""`` and
    ``required`` to ``True``.
    """
    params = [
        ToolParameter(
            name=param_name,
            param_type=config.get("type", "string"),
            description=config.get("description", ""),
            required=config.get("required", True),
            default=config.get("default"),
            enum=config.get("enum"),
        )
        for param_name, config in (parameters or {}).items()
    ]
    return Tool(name=name, description=description, parameters=params)
