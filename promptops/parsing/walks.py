"""Bracket walks over JSON text for the generic reader (jsontext.py): where an object or array ends, how deep it
nests, how many opening brackets a text holds. ``_span.c`` is the optional C speedup; the functions here are
its references, used when it is not built or when a parser is told ``speedups=False`` (same results)."""

from __future__ import annotations

import re
from collections.abc import Callable

native_span: Callable[[str, int], tuple[int, int]] | None
native_brackets: Callable[[str | bytes, int], bool] | None  # the reference is brackets_at_most
try:
    from promptops.parsing._span import brackets_at_most as native_brackets
    from promptops.parsing._span import span as native_span
except ImportError:
    native_span = native_brackets = None

_STRUCTURAL = re.compile(r'["{}\[\]]')
_STRING_STOP = re.compile(r'["\\]')
_CUT = -1  # positions: the text ends inside the value
SHALLOW = 256  # nesting (or a count of opening brackets) up to this is within every decoder's recursion limit


def brackets_at_most(data: str | bytes, limit: int) -> bool:
    """``data`` holds at most ``limit`` opening brackets (so it cannot nest deeper)."""
    if isinstance(data, str):
        return data.count("{") + data.count("[") <= limit
    return data.count(b"{") + data.count(b"[") <= limit


def _string_end(text: str, pos: int) -> int:
    """Index after the closing quote of a string whose body starts at ``pos``, or _CUT."""
    while True:
        match = _STRING_STOP.search(text, pos)
        if match is None:
            return _CUT
        if match.group() == '"':
            return match.end()
        pos = match.end() + 1  # skip the escaped character
        if pos > len(text):
            return _CUT


def _span_end(text: str, start: int) -> int:
    """Index after the bracket closing the object or array opened at ``start``, or _CUT."""
    return _span(text, start)[0]


def _span(text: str, start: int) -> tuple[int, int]:
    """``_span_end`` and the deepest nesting reached on the way (to the end of the text when it is cut)."""
    depth = deepest = 0
    pos = start
    while True:
        match = _STRUCTURAL.search(text, pos)
        if match is None:
            return _CUT, deepest
        char = match.group()
        pos = match.end()
        if char == '"':
            pos = _string_end(text, pos)
            if pos < 0:
                return _CUT, deepest
        elif char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
            if depth == 0:
                return pos, deepest


def _deeper_than(text: str, start: int, stop: int, max_depth: int) -> bool:
    """Whether the JSON text in ``text[start:stop]`` nests arrays and objects deeper than ``max_depth``."""
    if text.count("{", start, stop) + text.count("[", start, stop) <= max_depth:
        return False  # cannot nest deeper than the brackets it has: the common case, decided in C
    depth = 0
    pos = start
    while (match := _STRUCTURAL.search(text, pos, stop)) is not None:
        char = match.group()
        pos = match.end()
        if char == '"':
            pos = _string_end(text, pos)
            if pos < 0:
                return False
        elif char in "{[":
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False
