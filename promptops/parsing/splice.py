"""The defect path's quick reader: cut the findings that failed typed decoding out of the text, decode the rest whole.

When the whole-document typed decode fails on a finding, msgspec says which one (``- at `$.findings[3]...```).
For a text the C scanner found clean (no repeated key, no string with edge whitespace), the Document the itemwise
reader (itemwise.py) would build is then known without decoding the envelope and each finding on its own: every
other finding decodes typed, exactly as inside the whole document, and the failing one is a plain JSON value.
So the failing finding is cut out of the text (with one adjacent comma), the rest is decoded typed in one pass
(repeating for the next failing finding, up to a few), and the plain values are put back at their places.

Anything else (a failure outside the findings, a findings list with length bounds, which a cut would change, a
text that is not clean or not bytes, an element the walk cannot place) returns None, and the itemwise reader
decides as before: both give the same Document for every text this reader takes (tests/parsing/test_splice.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from promptops.parsing.fastpath import FastPath
from promptops.parsing.jsontext import Document
from promptops.parsing.typed import DECODE_ERRORS, json_depth
from promptops.parsing.walks import brackets_at_most, native_brackets

native_element_cut: Callable[[bytes, bytes, int], tuple[int, int, int, int] | None] | None
try:
    from promptops.parsing._span import element_cut as native_element_cut
except ImportError:
    native_element_cut = None

_MAX_CUTS = 4  # more failing findings than this: the itemwise reader's loop is as quick
_WHITESPACE = b" \t\n\r"
_QUOTE, _BACKSLASH, _COMMA, _COLON = ord('"'), ord("\\"), ord(","), ord(":")
_OPEN, _CLOSE = b"{[", b"}]"
_ENDS_SCALAR = b" \t\n\r,]}"


class Splicer:
    """Reads defect responses of one contract by cutting out their failing findings (see the module docstring)."""

    def __init__(self, items_field: str, *, speedups: bool = True) -> None:
        self._key = items_field.encode("utf-8")
        # msgspec's error suffix when a finding failed: " - at `$.<items>[<index>]<deeper path>`" at the very end
        # (a backquote inside the deeper path, from an odd key, just makes the reader decline).
        self._failed_at = re.compile(rf" - at `\$\.{re.escape(items_field)}\[(\d+)\][^`]*`\Z")
        self._cut = native_element_cut if speedups else None
        self._brackets_at_most = native_brackets if native_brackets is not None else brackets_at_most

    def read(
        self,
        fast: FastPath,
        data: bytes | str,
        error: msgspec.ValidationError,
        max_depth: int,
        request_versions: tuple[str, str] | None,
    ) -> Document | None:
        """``data``'s Document as ``read_itemwise(fast, data, ..., whole_clean=True)`` builds it, or None.

        ``error``: what ``fast``'s whole typed decoding of ``data`` raised; the caller has the C scanner's
        verdict that ``data`` is clean.
        """
        cut = self._cut
        typed = fast.typed
        if cut is None or type(data) is not bytes or typed.items_bounded:
            return None
        text = data
        plain: list[tuple[int, Any]] = []  # (index in the original findings, plain value), by index
        for _ in range(_MAX_CUTS):
            match = self._failed_at.search(str(error))
            if match is None:
                return None
            at = int(match.group(1))
            place = cut(text, self._key, at)
            if place is None:
                return None
            start, stop, element_start, element_stop = place
            element = text[element_start:element_stop]
            try:
                value = msgspec.json.decode(element)
            except DECODE_ERRORS:
                return None  # the rest of the text was never read: the itemwise reader decides
            # The itemwise reader's depth test for a failing finding (its brackets counted in C).
            if not self._brackets_at_most(element, max_depth - 2) and json_depth(value) + 2 > max_depth:
                return None
            for index, _value in plain:  # ``at`` counts the findings left in ``text``
                if index <= at:
                    at += 1
            plain.append((at, value))
            plain.sort(key=_first)
            text = text[:start] + text[stop:]
            try:
                obj = typed.decode_response(text)
            except msgspec.ValidationError as again:
                error = again
                continue
            except DECODE_ERRORS:
                return None
            break
        else:
            return None
        if request_versions is None:
            assert typed.versions is not None
            versions = typed.versions(obj)
        else:
            versions = request_versions
        if not fast.versions_ok(versions):
            return None
        # As the itemwise reader: only a non-empty open member of the top level can be too deep.
        if typed.has_open_objects and any(typed.top_open_values(obj)) and not typed.shallow(obj, [], max_depth):
            return None
        items = list(typed.items(obj))
        for index, value in plain:
            items.insert(index, value)
        top = {name: value for name, getter in typed.top_fields if (value := getter(obj)) is not msgspec.UNSET}
        top[typed.contract.items] = items
        return Document(top, item_duplicates={}, checked_versions=versions)


def _first(pair: tuple[int, Any]) -> int:
    return pair[0]


def element_cut(data: bytes, key: bytes, index: int) -> tuple[int, int, int, int] | None:
    """Where element ``index`` of the array that is member ``key`` of the top-level object sits in ``data``:
    (start, stop) of the bytes to cut to remove it with one adjacent comma, and (start, stop) of the element
    itself; None when the text is not an object, has no such member (written without escapes) or no such
    element, or the walk meets anything unexpected. The reference for ``_span.element_cut``.

    Values are skipped by their brackets and strings only: whether they are valid JSON is for the decoder.
    """
    size = len(data)
    pos = _skip_space(data, 0)
    if pos >= size or data[pos] != _OPEN[0]:
        return None
    pos = _skip_space(data, pos + 1)
    while pos < size and data[pos] == _QUOTE:
        end = _string_end(data, pos + 1)
        if end < 0:
            return None
        name = data[pos + 1 : end - 1]
        pos = _skip_space(data, end)
        if pos >= size or data[pos] != _COLON:
            return None
        pos = _skip_space(data, pos + 1)
        if name == key:
            return _element(data, pos, index)
        pos = _value_end(data, pos)
        if pos < 0:
            return None
        pos = _skip_space(data, pos)
        if pos >= size or data[pos] != _COMMA:
            return None
        pos = _skip_space(data, pos + 1)
    return None


def _element(data: bytes, pos: int, index: int) -> tuple[int, int, int, int] | None:
    """element_cut within the array that opens at ``pos``."""
    size = len(data)
    if pos >= size or data[pos] != _OPEN[1]:
        return None
    pos = _skip_space(data, pos + 1)
    previous_end = -1
    for current in range(index + 1):
        start = pos
        end = _value_end(data, pos)
        if end < 0 or end == start:
            return None
        after = _skip_space(data, end)
        if after >= size:
            return None
        if current == index:
            if data[after] == _COMMA:
                return start, _skip_space(data, after + 1), start, end
            if data[after] != _CLOSE[1]:
                return None
            return (previous_end, end, start, end) if previous_end >= 0 else (start, end, start, end)
        if data[after] != _COMMA:
            return None
        previous_end = end
        pos = _skip_space(data, after + 1)
    return None


def _skip_space(data: bytes, pos: int) -> int:
    size = len(data)
    while pos < size and data[pos] in _WHITESPACE:
        pos += 1
    return pos


def _string_end(data: bytes, pos: int) -> int:
    """Index after the closing quote of a string whose body starts at ``pos``, or -1."""
    size = len(data)
    while pos < size:
        byte = data[pos]
        if byte == _QUOTE:
            return pos + 1
        pos += 2 if byte == _BACKSLASH else 1
    return -1


def _value_end(data: bytes, pos: int) -> int:
    """Index after the value starting at ``pos``, or -1 when the text ends inside it."""
    size = len(data)
    if pos >= size:
        return -1
    byte = data[pos]
    if byte == _QUOTE:
        return _string_end(data, pos + 1)
    if byte in _OPEN:
        depth = 0
        while pos < size:
            byte = data[pos]
            if byte == _QUOTE:
                pos = _string_end(data, pos + 1)
                if pos < 0:
                    return -1
                continue
            if byte in _OPEN:
                depth += 1
            elif byte in _CLOSE:
                depth -= 1
                if depth == 0:
                    return pos + 1
            pos += 1
        return -1
    while pos < size and data[pos] not in _ENDS_SCALAR:
        pos += 1
    return pos
