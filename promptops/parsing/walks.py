"""Bracket walks over JSON text for the diagnostic path's reader (jsontext.py): where an object or array ends,
and how deep it nests. Strings are skipped as JSON strings, so brackets inside them do not count. Each walk is
linear in the text it covers (one regex search per structural character)."""

from __future__ import annotations

import re

_STRUCTURAL = re.compile(r'["{}\[\]]')
# A string's body and closing quote; possessive, so a string cut off is given up on in one linear pass.
_STRING_BODY = re.compile(r'(?:[^"\\]++|\\.)*+"', re.DOTALL)
CUT = -1  # positions: the text ends inside the value


def string_end(text: str, pos: int) -> int:
    """Index after the closing quote of a string whose body starts at ``pos``, or CUT."""
    found = _STRING_BODY.match(text, pos)
    return CUT if found is None else found.end()


def span_end(text: str, start: int) -> int:
    """Index after the bracket closing the object or array opened at ``start``, or CUT."""
    return span(text, start)[0]


def span(text: str, start: int) -> tuple[int, int]:
    """``span_end`` and the deepest nesting reached on the way (to the end of the text when it is cut)."""
    depth = deepest = 0
    pos = start
    while True:
        match = _STRUCTURAL.search(text, pos)
        if match is None:
            return CUT, deepest
        char = match.group()
        pos = match.end()
        if char == '"':
            pos = string_end(text, pos)
            if pos < 0:
                return CUT, deepest
        elif char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
            if depth == 0:
                return pos, deepest


def deeper_than(text: str, max_depth: int) -> bool:
    """Whether the JSON text ``text`` nests arrays and objects deeper than ``max_depth``."""
    if text.count("{") + text.count("[") <= max_depth:
        return False  # cannot nest deeper than the brackets it has: the common case, decided in C
    depth = 0
    pos = 0
    while (match := _STRUCTURAL.search(text, pos)) is not None:
        char = match.group()
        pos = match.end()
        if char == '"':
            pos = string_end(text, pos)
            if pos < 0:
                return False
        elif char in "{[":
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False
