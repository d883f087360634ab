"""``@mcp_tool``: marks a function as an MCP tool, derives its schema from its type hints,
and registers decorated functions into a registry (one by one or a whole module).

The schema is Pydantic's JSON Schema of a model made from the parameters, so every type
Pydantic understands works: ``int``, ``float``, ``str``, ``bool``, ``list[...]``,
``dict[str, ...]``, ``Optional``, unions, ``Literal``, ``Enum``, Pydantic models,
``TypedDict``, dataclasses, ``Annotated[..., Field(description=...)]``. The same model
converts the (already schema-validated) JSON arguments into those types before the function
runs. Not a registry: decorating registers nothing until :func:`register_function`,
:func:`discover_tools` or ``MCPServer`` is given the function.

Plain hints (``int``, ``float``, ``str``, ``bool`` and ``Optional`` of them, with JSON
defaults) need no Pydantic: their schema is written here, the same as Pydantic's (a test
compares them), and their arguments, already validated against it in Rust, are passed as
they are (an integer to a ``float`` parameter becomes a ``float``, as Pydantic converts
it). Pydantic is imported only for a function with any other hint.
"""

from __future__ import annotations

import functools
import inspect
import math
import types
import warnings
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, Type, TypeVar, Union, get_args, get_origin, get_type_hints

from ._invoke import Adapter
from .context import Context

__all__ = ["mcp_tool", "register_function", "discover_tools", "tool_schema"]

if TYPE_CHECKING:
    from pydantic import BaseModel

F = TypeVar("F", bound=Callable[..., Any])

_PLAIN_TYPES = {int: "integer", float: "number", str: "string", bool: "boolean"}
_UNION_TYPES = (Union, getattr(types, "UnionType", Union))


def _parameters(func: Callable[..., Any]) -> Tuple[List[Tuple[str, Any, Any]], Optional[str]]:
    """``func``'s tool parameters as ``(name, hint, default)`` (``inspect.Parameter.empty``
    without one; the hint ``Any`` without one), and the name of its ``Context`` parameter."""
    signature = inspect.signature(func)
    hints = get_type_hints(func, include_extras=True)
    parameters = []
    context_param = None
    for name, param in signature.parameters.items():
        if name in ("self", "cls") or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(name, Any)
        if annotation is Context:
            context_param = name
            continue
        if param.kind is param.POSITIONAL_ONLY:
            raise TypeError(f"{func.__qualname__}: positional-only parameter {name!r} cannot take a named argument")
        parameters.append((name, annotation, param.default))
    return parameters, context_param


def _plain_type(hint: Any) -> Optional[Tuple[Type[Any], bool]]:
    """``(type, nullable)`` for ``int``/``float``/``str``/``bool`` and their ``Optional``."""
    try:
        if hint in _PLAIN_TYPES:
            return hint, False
    except TypeError:  # an unhashable hint is not one of them
        return None
    if get_origin(hint) in _UNION_TYPES:
        args = get_args(hint)
        if len(args) == 2 and type(None) in args:
            inner = args[0] if args[1] is type(None) else args[1]
            if inner in _PLAIN_TYPES:
                return inner, True
    return None


def _plain_default(default: Any) -> bool:
    if default is None or type(default) in (bool, int, str):
        return True
    return type(default) is float and math.isfinite(default)


def _plain_schema(parameters: List[Tuple[str, Any, Any]]) -> Optional[Dict[str, Any]]:
    """Pydantic's JSON Schema of ``parameters``, written without Pydantic, or None when a hint
    or a default is not plain."""
    properties: Dict[str, Any] = {}
    required = []
    for name, hint, default in parameters:
        plain = _plain_type(hint)
        if plain is None:
            return None
        kind, nullable = plain
        schema: Dict[str, Any] = {"type": _PLAIN_TYPES[kind]}
        if nullable:
            schema = {"anyOf": [schema, {"type": "null"}]}
        if default is inspect.Parameter.empty:
            required.append(name)
        elif _plain_default(default):
            schema["default"] = default
        else:
            return None
        schema["title"] = name.replace("_", " ").title()
        properties[name] = dict(sorted(schema.items()))
    result: Dict[str, Any] = {"properties": properties}
    if required:
        result["required"] = required
    result["type"] = "object"
    return result


def _arguments_model(func: Callable[..., Any]) -> Tuple[Type["BaseModel"], Dict[str, str]]:
    """A Pydantic model of ``func``'s parameters, and the model field of each parameter."""
    from pydantic import Field, create_model

    parameters, _ = _parameters(func)
    fields: Dict[str, Any] = {}
    names: Dict[str, str] = {}
    for i, (name, annotation, default) in enumerate(parameters):
        default = ... if default is inspect.Parameter.empty else default
        # Internal field names, the parameter names as aliases: a parameter may be called
        # `schema` or `model_config` without clashing with BaseModel's own attributes.
        field = f"p{i}"
        fields[field] = (annotation, Field(default, alias=name, title=name.replace("_", " ").title()))
        names[name] = field
    model = create_model(f"{func.__name__}_arguments", **fields)
    return model, names


def _pydantic_schema(func: Callable[..., Any]) -> Dict[str, Any]:
    model, _ = _arguments_model(func)
    schema = model.model_json_schema(by_alias=True)
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


def tool_schema(func: Callable[..., Any]) -> Dict[str, Any]:
    """The JSON Schema of ``func``'s arguments, as ``@mcp_tool`` derives it."""
    parameters, _ = _parameters(func)
    plain = _plain_schema(parameters)
    return plain if plain is not None else _pydantic_schema(func)


class FunctionAdapter(Adapter):
    """Calls a Python function with JSON arguments: converted by the parameters' model (when
    the schema came from the type hints; plain hints need no model), with a ``Context`` when
    it asks for one."""

    def __init__(self, func: Callable[..., Any], convert: bool) -> None:
        self.func = func
        parameters, self.context_param = _parameters(func)
        self.convert = convert
        # For plain hints: each parameter and what its JSON value becomes ("float": an int
        # becomes a float, "int": an integral float becomes an int, None: as it is).
        self.plain: Optional[List[Tuple[str, Optional[str]]]] = None
        if convert and _plain_schema(parameters) is not None:
            self.plain = [(name, _coercion(hint)) for name, hint, _ in parameters]
        self._model: Optional[Tuple[Type["BaseModel"], Dict[str, str]]] = None
        if convert and self.plain is None:
            self._model = _arguments_model(func)

    def _arguments(self, arguments: Dict[str, Any]) -> Dict[str, Any]:
        if self.plain is not None:
            kwargs = {}
            for name, coercion in self.plain:
                if name in arguments:
                    value = arguments[name]
                    if coercion == "float" and type(value) is int:
                        value = float(value)
                    elif coercion == "int" and type(value) is float and value.is_integer():
                        value = int(value)
                    kwargs[name] = value
            return kwargs
        assert self._model is not None  # built in __init__ when the hints are not plain
        model, fields = self._model
        validated = model.model_validate(arguments)
        return {name: getattr(validated, field) for name, field in fields.items()}

    def invoke(self, arguments: Dict[str, Any], state: Any) -> Any:
        kwargs = self._arguments(arguments) if self.convert else dict(arguments)
        if self.context_param is not None:
            kwargs[self.context_param] = Context(state)
        return self.func(**kwargs)


def _coercion(hint: Any) -> Optional[str]:
    plain = _plain_type(hint)
    if plain is not None and plain[0] is float:
        return "float"
    if plain is not None and plain[0] is int:
        return "int"
    return None


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
    tool_meta.update(extra.pop("meta", None) or {})
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
