"""Package names that load their module on first use (PEP 562), so importing a package stays cheap."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_names(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` resolving each name in ``exports`` (name -> module) once."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    return __getattr__


def by_module(names: Mapping[str, Iterable[str]]) -> dict[str, str]:
    """``lazy_names``'s table (name -> module) from the names each module exports (module -> names)."""
    return {name: module for module, exported in names.items() for name in exported}
