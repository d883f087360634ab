"""``codomyrmex.model_context_protocol.versioning.versioning`` in compatibility mode.

Semantic versions for tools (:class:`APIVersion`, printed ``v1.2.3``), deprecation metadata,
the ``@versioned`` and ``@deprecated`` decorators, and a :class:`CompatibilityMatrix`.
"""

from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

__all__ = [
    "APIVersion",
    "CompatibilityMatrix",
    "DeprecationInfo",
    "VersionedTool",
    "deprecated",
    "versioned",
]


@dataclass(frozen=True, order=True)
class APIVersion:
    """``major.minor.patch``; versions order and compare by those numbers."""

    major: int = 1
    minor: int = 0
    patch: int = 0

    def __str__(self) -> str:
        return f"v{self.major}.{self.minor}.{self.patch}"

    @classmethod
    def parse(cls, version_str: str) -> "APIVersion":
        """``"1"``, ``"1.2"``, ``"v1.2.3"``: missing parts are 0. Raises ``ValueError``
        for a part that is not a number."""
        parts = version_str.lstrip("v").split(".")
        numbers = [int(p) for p in parts[:3]]
        numbers += [0] * (3 - len(numbers))
        return cls(major=numbers[0], minor=numbers[1], patch=numbers[2])

    def is_compatible(self, other: "APIVersion") -> bool:
        """Whether ``other`` can stand in for this version: same major, not older."""
        return self.major == other.major and other >= self


@dataclass
class DeprecationInfo:
    """Since when, removed when, what to use instead, and the message."""

    since: str = ""
    removal: str = ""
    replacement: str = ""
    message: str = ""


@dataclass
class VersionedTool:
    """A tool's current version, when it was introduced, and its deprecation."""

    name: str
    version: APIVersion = field(default_factory=APIVersion)
    deprecated: bool = False
    deprecation: Optional[DeprecationInfo] = None
    introduced: APIVersion = field(default_factory=APIVersion)


def versioned(version: str = "1.0.0", introduced: str = "1.0.0") -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Marks a function with ``_api_version``, ``_api_introduced`` and ``_api_deprecated``
    (``False``); the wrapper calls it unchanged."""
    current = APIVersion.parse(version)
    first = APIVersion.parse(introduced)

    def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)

        for target in (func, wrapper):
            target._api_version = current  # type: ignore[attr-defined]
            target._api_introduced = first  # type: ignore[attr-defined]
            target._api_deprecated = False  # type: ignore[attr-defined]
        return wrapper

    return decorator


def deprecated(
    since: str = "", removal: str = "", replacement: str = "", message: str = ""
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Marks a function deprecated: each call warns with ``DeprecationWarning``, naming the
    replacement and the removal version when given."""

    def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
        info = DeprecationInfo(
            since=since,
            removal=removal,
            replacement=replacement,
            message=message or f"{func.__name__} is deprecated since {since}",
        )
        text = info.message
        if info.replacement:
            text += f". Use {info.replacement} instead"
        if info.removal:
            text += f". Will be removed in {info.removal}"

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            warnings.warn(text, DeprecationWarning, stacklevel=2)
            return func(*args, **kwargs)

        for target in (func, wrapper):
            target._deprecation_info = info  # type: ignore[attr-defined]
            target._api_deprecated = True  # type: ignore[attr-defined]
        if hasattr(func, "_api_version"):
            wrapper._api_version = func._api_version  # type: ignore[attr-defined]
        return wrapper

    return decorator


class CompatibilityMatrix:
    """Which versions of a tool work together: the same major version always does, and
    pairs recorded with :meth:`add_compatible` do (in either order)."""

    def __init__(self) -> None:
        self._compat: Dict[str, List[Tuple[APIVersion, APIVersion]]] = {}

    def add_compatible(self, tool: str, from_ver: str, to_ver: str) -> None:
        """Records that ``from_ver`` and ``to_ver`` of ``tool`` are compatible."""
        pair = (APIVersion.parse(from_ver), APIVersion.parse(to_ver))
        self._compat.setdefault(tool, []).append(pair)

    def is_compatible(self, tool: str, ver_a: str, ver_b: str) -> bool:
        """Whether ``ver_a`` and ``ver_b`` of ``tool`` are compatible."""
        a, b = APIVersion.parse(ver_a), APIVersion.parse(ver_b)
        if a.major == b.major:
            return True
        pairs = self._compat.get(tool, [])
        return (a, b) in pairs or (b, a) in pairs
