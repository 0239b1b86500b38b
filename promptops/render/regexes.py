"""Regular expressions compiled on first use.

``re.compile`` parses a pattern and generates its code in Python: about 0.7 M instructions a pattern, and the
lint and render modules hold 40-odd module-level patterns of which a run uses some (a rule's, an output
format's). ``lazy`` patterns compile through ``re.compile`` when first used, not when their module is
imported; ``compile`` keeps the patterns this process built (up to ``_LIMIT``: patterns made from a contract's
values, such as its items field, go through it too, and a process may read many contracts).
"""

from __future__ import annotations

import re
from typing import Any, cast

_built: dict[tuple[str, int], re.Pattern[str]] = {}  # this process's patterns
_LIMIT = 1024


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, built once a process."""
    key = (pattern, int(flags))
    built = _built.get(key)
    if built is None:
        if len(_built) >= _LIMIT:
            _built.clear()
        built = _built[key] = re.compile(*key)
    return built


class _Lazy:
    """A pattern compiled on first use; each attribute read once from it is then kept on the instance."""

    def __init__(self, pattern: str, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and friends probing: not the pattern's
            raise AttributeError(name)
        value = getattr(compile(*self._source), name)
        setattr(self, name, value)
        return value


def lazy(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """A pattern that compiles (through ``compile``) when first used: for module-level patterns."""
    return cast("re.Pattern[str]", _Lazy(pattern, int(flags)))
