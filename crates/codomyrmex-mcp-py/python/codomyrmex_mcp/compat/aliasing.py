"""``install()``: makes ``codomyrmex.model_context_protocol`` (and every module under it)
resolve to :mod:`codomyrmex_mcp.compat` (and the same module under it).

A meta-path finder, inserted first, answers every import of a name under
``codomyrmex.model_context_protocol`` with the module object of the same name under
``codomyrmex_mcp.compat``: one module object per module, whichever name imported it first,
so classes are the same classes (``isinstance`` holds across both names) and module state
(a registry, a cache) is shared.

It works both ways Codomyrmex is moved:

- called early (a program's entry point, a ``conftest.py``), before anything imported
  ``codomyrmex.model_context_protocol``;
- called from ``codomyrmex/model_context_protocol/__init__.py`` itself (the one-line
  migration): the package being initialised is replaced in ``sys.modules`` by the compat
  package, which is what the import that started it then returns.

Only ``codomyrmex`` itself (the parent package) must be importable: it is the user's.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Optional, Sequence

__all__ = ["install", "uninstall", "ALIAS", "TARGET"]

ALIAS = "codomyrmex.model_context_protocol"
"""The name Codomyrmex's code imports."""

TARGET = "codomyrmex_mcp.compat"
"""The package it resolves to."""

_lock = threading.Lock()


def _target_of(fullname: str) -> Optional[str]:
    if fullname == ALIAS:
        return TARGET
    if fullname.startswith(ALIAS + "."):
        return TARGET + fullname[len(ALIAS) :]
    return None


class _AliasLoader(importlib.abc.Loader):
    """Loads an aliased name as the module object of its target (imported if need be)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # The import machinery keeps a module's own __name__, __path__, __package__ and
        # __loader__ (they are set: it is an imported module), but sets __spec__ to the
        # alias's; exec_module puts the module's own back.
        module = importlib.import_module(self.target)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # Already executed, under its own name: only its own spec is restored.
        own = getattr(self, "_own_spec", None)
        if own is not None:
            module.__spec__ = own


class AliasFinder(importlib.abc.MetaPathFinder):
    """The meta-path finder :func:`install` inserts."""

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Optional[ModuleType] = None
    ) -> Optional[importlib.machinery.ModuleSpec]:
        aliased = _target_of(fullname)
        if aliased is None:
            return None
        try:
            found = importlib.util.find_spec(aliased)
        except (ImportError, ValueError):
            found = None
        if found is None:
            # No such module in compatibility mode: the import fails as it would anywhere.
            return None
        return importlib.machinery.ModuleSpec(
            fullname, _AliasLoader(aliased), is_package=found.submodule_search_locations is not None
        )


def _installed() -> Optional[AliasFinder]:
    return next((f for f in sys.meta_path if isinstance(f, AliasFinder)), None)


def install() -> None:
    """Makes ``codomyrmex.model_context_protocol[.…]`` resolve to ``codomyrmex_mcp.compat[.…]``
    from now on (idempotent). Modules already imported under the old name (the package
    calling this from its own ``__init__``) are replaced by their compat counterparts."""
    with _lock:
        if _installed() is None:
            sys.meta_path.insert(0, AliasFinder())
    for name in [n for n in list(sys.modules) if _target_of(n) is not None]:
        aliased = _target_of(name)
        assert aliased is not None
        try:
            module = importlib.import_module(aliased)
        except ImportError:
            # A module Codomyrmex has and compatibility mode does not: leave it be.
            continue
        sys.modules[name] = module
    parent = sys.modules.get(ALIAS.rpartition(".")[0])
    if parent is not None:
        setattr(parent, ALIAS.rpartition(".")[2], importlib.import_module(TARGET))


def uninstall() -> None:
    """Removes the finder and the aliased entries of ``sys.modules`` (for tests)."""
    with _lock:
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, AliasFinder)]
    for name in [n for n in list(sys.modules) if _target_of(n) is not None]:
        del sys.modules[name]
