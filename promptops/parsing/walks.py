"""Bracket walks over JSON text for the diagnostic path's reader (jsontext.py): where an object or array ends,
and how deep it nests. Strings are skipped as JSON strings, so brackets inside them do not count. Each walk is
linear in the text it covers: one possessive regex match runs from bracket to bracket, strings included."""

from __future__ import annotations

import re

# A string's body and closing quote; possessive, so a string cut off is given up on in one linear pass.
_STRING_BODY = re.compile(r'(?:[^"\\]++|\\.)*+"', re.DOTALL)
# Everything up to the next bracket outside strings (or to an unclosed string's opening quote, or the end).
_TO_BRACKET = re.compile(rf'(?:[^"{{}}\[\]]++|"{_STRING_BODY.pattern})*+', re.DOTALL)
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
    return _walk(text, start, None)


def deeper_than(text: str, max_depth: int) -> bool:
    """Whether the JSON text ``text`` nests arrays and objects deeper than ``max_depth``."""
    if text.count("{") + text.count("[") <= max_depth:
        return False  # cannot nest deeper than the brackets it has: the common case, decided in C
    return _walk(text, 0, max_depth)[1] > max_depth


def _walk(text: str, start: int, limit: int | None) -> tuple[int, int]:
    """From ``start``, bracket to bracket: where the value opened there ends (CUT if the text ends first) and
    the deepest nesting reached, stopping as soon as it passes ``limit``."""
    depth = deepest = 0
    pos = start
    end = len(text)
    to_bracket = _TO_BRACKET.match
    while True:
        pos = to_bracket(text, pos).end()  # type: ignore[union-attr]  # the pattern matches the empty string
        if pos >= end or text[pos] == '"':
            return CUT, deepest
        if text[pos] in "{[":
            depth += 1
            if depth > deepest:
                deepest = depth
                if limit is not None and deepest > limit:
                    return CUT, deepest
        else:
            depth -= 1
            if depth == 0:
                return pos + 1, deepest
        pos += 1
