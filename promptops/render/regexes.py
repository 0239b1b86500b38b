"""Regular expressions compiled on first use, from compiled code kept across runs when a caller installs it.

``re.compile`` parses a pattern and generates its code in Python: about 0.7 M instructions a pattern, and the
lint and render modules' 40-odd patterns were a fifth of lint's own start-up. The compiled code is a list of
integers that ``_sre.compile`` turns into the same pattern object (equal to ``re.compile``'s: patterns compare
by text, flags and code) in a few thousand. So ``lazy`` patterns compile when first used, and a caller that
keeps a table across runs (lint, in its cache: ``promptops.lint.cache``) ``install``s it first and stores what
``learned`` returns after. Without an installed table nothing is learned (learning costs a second compile). A
pattern is learned only when the code rebuilt from it equals ``re.compile``'s, and a table is only read by the
Python that wrote it (``VERSION`` keys its entry); when anything of this fails, the pattern is ``re.compile``d.
"""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]  # the C engine re builds its patterns with (no stub)
import re
import sys
from typing import Any, cast

VERSION = f"{sys.version} sre {_sre.MAGIC}"

Entry = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]  # _sre.compile's arguments
_table: dict[tuple[str, int], Entry] = {}
_built: dict[tuple[str, int], re.Pattern[str]] = {}  # this process's patterns, as re's own cache keeps them
_LIMIT = 1000  # entries learned at most: patterns made from a contract's values are learned too
_learned: list[bool] = [False]  # whether _table gained entries since the last ``learned``
_keeping: list[bool] = [False]  # whether a caller keeps the table (``install``): else nothing is learned


def install(table: object) -> None:
    """Use the compiled code in ``table`` (what ``learned`` returned in an earlier run; anything else, such as
    None for no table yet, is ignored), and learn the code of the patterns compiled from now on."""
    _keeping[0] = True
    if isinstance(table, dict):
        for key, entry in table.items():
            _table.setdefault(key, entry)


def learned() -> dict[tuple[str, int], Entry] | None:
    """The table with what was compiled since the last call, to keep; None when nothing was added."""
    if not _learned[0]:
        return None
    _learned[0] = False
    return dict(_table)


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, from the installed table when it holds the pattern."""
    key = (pattern, int(flags))
    built = _built.get(key)
    if built is not None:
        return built
    entry = _table.get(key)
    if entry is not None:
        try:
            built = _built[key] = cast("re.Pattern[str]", _sre.compile(pattern, *entry))
            return built
        except Exception:  # a damaged entry (``_sre`` checks the code it is given): compile afresh
            del _table[key]
    compiled = _built[key] = re.compile(*key)
    try:
        if _keeping[0] and len(_table) < _LIMIT:
            entry = _entry(*key)
            if _sre.compile(pattern, *entry) == compiled:
                _table[key] = entry
                _learned[0] = True
    except Exception:  # another Python's ``re`` internals: nothing to learn, the pattern is compiled anyway
        pass
    return compiled


def _entry(pattern: str, flags: int) -> Entry:
    """``_sre.compile``'s arguments after ``pattern``, as ``re._compiler.compile`` computes them."""
    parsed = re._parser.parse(pattern, flags)  # type: ignore[attr-defined]
    code = re._compiler._code(parsed, flags)  # type: ignore[attr-defined]
    state = parsed.state
    indexgroup: list[str | None] = [None] * state.groups
    for name, index in state.groupdict.items():
        indexgroup[index] = name
    # The opcodes are int subclasses that do not pickle: plain ints are what _sre reads.
    return int(flags | state.flags), [int(c) for c in code], state.groups - 1, dict(state.groupdict), tuple(indexgroup)


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
