"""``@mcp_tool``: marks a function as an MCP tool, derives its schema from its type hints,
and registers decorated functions into a registry (one by one or a whole module).

The schema is Pydantic's JSON Schema of a model made from the parameters, so every type
Pydantic understands works: ``int``, ``float``, ``str``, ``bool``, ``list[...]``,
``dict[str, ...]``, ``Optional``, unions, ``Literal``, ``Enum``, Pydantic models,
``TypedDict``, dataclasses, ``Annotated[..., Field(description=...)]``. The same model
converts the (already schema-validated) JSON arguments into those types before the function
runs. Not a registry: decorating registers nothing until :func:`register_function`,
:func:`discover_tools` or ``MCPServer`` is given the function.
"""

from __future__ import annotations

import functools
import inspect
import types
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, TypeVar, Union, get_type_hints

from pydantic import BaseModel, Field, create_model

from ._invoke import Adapter
from .context import Context

__all__ = ["mcp_tool", "register_function", "discover_tools", "tool_schema"]

F = TypeVar("F", bound=Callable[..., Any])


def _arguments_model(func: Callable[..., Any]) -> Tuple[Type[BaseModel], Dict[str, str], Optional[str]]:
    """A Pydantic model of ``func``'s parameters, the model field of each parameter, and the
    name of its ``Context`` parameter (if any)."""
    signature = inspect.signature(func)
    hints = get_type_hints(func, include_extras=True)
    fields: Dict[str, Any] = {}
    names: Dict[str, str] = {}
    context_param = None
    for i, (name, param) in enumerate(signature.parameters.items()):
        if name in ("self", "cls") or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(name, Any)
        if annotation is Context:
            context_param = name
            continue
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"{func.__qualname__}: positional-only parameter {name!r} cannot take a named argument")
        default = ... if param.default is param.empty else param.default
        # Internal field names, the parameter names as aliases: a parameter may be called
        # `schema` or `model_config` without clashing with BaseModel's own attributes.
        field = f"p{i}"
        fields[field] = (annotation, Field(default, alias=name, title=name.replace("_", " ").title()))
        names[name] = field
    model = create_model(f"{func.__name__}_arguments", **fields)
    return model, names, context_param


def tool_schema(func: Callable[..., Any]) -> Dict[str, Any]:
    """The JSON Schema of ``func``'s arguments, as ``@mcp_tool`` derives it."""
    model, _, _ = _arguments_model(func)
    schema = model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


class FunctionAdapter(Adapter):
    """Calls a Python function with JSON arguments: converted by the parameters' model (when
    the schema came from the type hints), with a ``Context`` when it asks for one."""

    def __init__(self, func: Callable[..., Any], convert: bool) -> None:
        self.func = func
        self.model, self.fields, self.context_param = _arguments_model(func)
        self.convert = convert

    def invoke(self, arguments: Dict[str, Any], state: Any) -> Any:
        if self.convert:
            validated = self.model.model_validate(arguments)
            kwargs = {name: getattr(validated, field) for name, field in self.fields.items()}
        else:
            kwargs = dict(arguments)
        if self.context_param is not None:
            kwargs[self.context_param] = Context(state)
        return self.func(**kwargs)


def mcp_tool(
    name: Optional[str] = None,
    description: Optional[str] = None,
    schema: Optional[Dict[str, Any]] = None,
    category: str = "general",
    version: Optional[str] = None,
    deprecated_in: Optional[str] = None,
) -> Callable[[F], F]:
    """Marks a function (sync or async) as an MCP tool.

    - ``name``: the invocation name (default: the function's name);
    - ``description``: for the model (default: the docstring);
    - ``schema``: the JSON Schema of the arguments (default: from the type hints);
    - ``category``, ``version`` (default ``"1.0"``), ``deprecated_in``: metadata, sent in
      the tool's ``_meta``; calling a deprecated tool directly warns (``DeprecationWarning``).

    The function stays callable; it carries the metadata as ``_mcp_tool``.
    """

    def decorator(func: F) -> F:
        tool_name = name or func.__name__
        tool_schema_ = schema if schema is not None else tool_schema(func)
        meta = {
            "name": tool_name,
            "description": description or inspect.cleandoc(func.__doc__ or ""),
            "schema": tool_schema_,
            "category": category,
            "module": func.__module__,
            "version": version or "1.0",
            "deprecated_in": deprecated_in,
        }
        adapter = FunctionAdapter(func, convert=schema is None)

        def warn() -> None:
            if deprecated_in:
                warnings.warn(f"MCP tool {tool_name!r} deprecated since v{deprecated_in}.", DeprecationWarning, stacklevel=3)

        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                warn()
                return await func(*args, **kwargs)

            wrapper: Any = async_wrapper
        else:

            @functools.wraps(func)
            def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
                warn()
                return func(*args, **kwargs)

            wrapper = sync_wrapper
        wrapper._mcp_tool = meta
        wrapper._mcp_tool_meta = meta
        wrapper._mcp_adapter = adapter
        return wrapper  # type: ignore[no-any-return]

    return decorator


def register_function(
    registry: Any, func: Callable[..., Any], *, name: Optional[str] = None, description: Optional[str] = None, **extra: Any
) -> str:
    """Registers an ``@mcp_tool`` function into an ``MCPToolRegistry``; returns its name.
    ``name`` and ``description`` override the decorator's; ``extra`` (``title``,
    ``output_schema``, ``timeout``) goes to ``registry.register``."""
    meta = getattr(func, "_mcp_tool", None)
    adapter = getattr(func, "_mcp_adapter", None)
    if not isinstance(meta, dict) or adapter is None:
        raise TypeError(f"{func!r} is not decorated with @mcp_tool")
    tool_meta = {"category": meta["category"], "version": meta["version"]}
    if meta.get("deprecated_in"):
        tool_meta["deprecated_in"] = meta["deprecated_in"]
    tool_name = name or meta["name"]
    registry.register(
        tool_name,
        meta["schema"],
        adapter,
        description=description or meta["description"] or None,
        meta=tool_meta,
        deprecated_in=meta.get("deprecated_in"),
        **extra,
    )
    return str(tool_name)


def discover_tools(module: Union[types.ModuleType, str], registry: Any) -> List[str]:
    """Registers every ``@mcp_tool`` function defined in ``module`` (a module or its import
    name) into ``registry``, in name order; returns the names registered. A conflict raises
    ``MCPRegistrationError`` and registers nothing more."""
    if isinstance(module, str):
        import importlib

        module = importlib.import_module(module)
    found = []
    for attribute in sorted(dir(module)):
        value = getattr(module, attribute, None)
        if callable(value) and isinstance(getattr(value, "_mcp_tool", None), dict) and hasattr(value, "_mcp_adapter"):
            if getattr(value, "__module__", None) == module.__name__:
                found.append(value)
    return [register_function(registry, f) for f in found]
