"""The fast path: accept a clean response in one typed decoding pass, or decline.

It never builds a diagnostic and never rejects. It accepts only when the response is exactly what the diagnostic
path would keep unchanged with no diagnostic at all: the text is one JSON object that decodes into the Struct
types of typed.py (types, enums, bounds, patterns, required and unknown fields, line rules), declares versions that
the diagnostic path's own rules accept exactly, repeats no key, has no string with whitespace at an edge, names
only changed files as written, repeats no finding id, and stays within the limits. Anything else declines, and
the parser hands the response to the diagnostic path: the outcome is the same either way (the parity tests check
it), only the time differs.

``outline`` is its second answer, for a response it declined: when only findings are unclean, it reads the top
level with the findings undecoded and sorts the findings, each decoded on its own, into clean as written and "not
sure" (typed.Outline), so the diagnostic path checks only the latter. It does not import the diagnostic path:
version declarations are judged by callables the parser passes in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from promptops.core.shape import OutputShape
from promptops.parsing.diagnostics import ParseOutcome
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.typed import DECODE_ERRORS, Outline, TypedShape

# What a version declaration decides when the version rules accept it as written (schema and prompt texts, the
# shape to read with, whether tolerantly), else None.
Judged = tuple[str, str, OutputShape, bool] | None

_to_builtins = msgspec.to_builtins


class FastPath:
    """Typed decoding for one schema version; version declarations are judged by ``judge`` (the diagnostic path's
    ``Validator.versions_as_written``), after a look-up in ``judged``, its table of judged declarations."""

    def __init__(
        self,
        typed: TypedShape,
        judged: Callable[[tuple[Any, Any]], Judged],
        judge: Callable[[tuple[str, str]], Judged],
        max_depth: int,
        max_findings: int,
    ) -> None:
        self._shape = typed.shape
        self._decode = typed.decode_response
        self._versions_of = typed.versions
        self._items_of = typed.items
        self._max_findings = max_findings
        self._max_depth = max_depth
        self._top_unclean = typed.top_checks.first_unclean
        self._items_unclean = typed.item_checks.first_unclean
        self._plain_paths = typed.plain_paths
        self._plain_keys = typed.plain_keys
        self._plain_members = typed.plain_members
        self._patterns_hold = typed.patterns_hold
        self._judged = judged  # the common case, a declaration seen before: one C call
        self._judge = judge
        self._decode_outline = typed.decode_outline
        self._decode_item = typed.decode_item
        self._items_attr = typed.items_attr
        self._item_patterns = typed.item_patterns
        self._top_patterns = typed.top_patterns
        self._item_holds = typed.item_patterns_hold
        self._outline_unclean = typed.outline_checks.first_unclean

    def accept(
        self, data: bytes, changed: ChangedFiles, request_versions: tuple[str, str] | None
    ) -> ParseOutcome | None:
        """The outcome of a clean response (the diagnostic path's, exactly), else None."""
        try:
            obj = self._decode(data)
        except DECODE_ERRORS:
            return None
        versions: tuple[Any, Any]
        if request_versions is None:
            assert self._versions_of is not None  # contracts without version fields always pass request versions
            versions = self._versions_of(obj)
        else:
            versions = request_versions
        decided = self._judged(versions) or self._judge(versions)
        # Read with exactly this schema version, not tolerantly (a newer minor's members would be notes).
        if decided is None or decided[2] is not self._shape or decided[3]:
            return None
        items = self._items_of(obj)
        # The decline tests (typed.py, _checks.c and _checks_keys.c), called here directly: once per clean response.
        if (
            len(items) > self._max_findings
            or self._top_unclean([obj], None, False, 0) is not None
            or self._items_unclean(items, changed.written(self._plain_paths), True, 0) is not None
            or not self._plain_members(data, obj, self._max_depth)
            or not self._patterns_hold(obj, items)
        ):
            return None
        return ParseOutcome.clean([], obj, versions, len(items))

    def outline(self, data: bytes, changed: ChangedFiles, request_versions: tuple[str, str] | None) -> Outline | None:
        """``data`` as an Outline when its top level is clean as written (declared versions included) and it
        repeats no key and nests no deeper than allowed, else None."""
        try:
            top = self._decode_outline(data)
        except DECODE_ERRORS:
            return None
        versions: tuple[Any, Any]
        if request_versions is None:
            assert self._versions_of is not None  # contracts without version fields always pass request versions
            versions = self._versions_of(top)
        else:
            versions = request_versions
        decided = self._judged(versions) or self._judge(versions)
        if decided is None or decided[2] is not self._shape or decided[3]:
            return None
        raw: list[Any] = self._items_of(top)
        if (
            len(raw) > self._max_findings
            or self._outline_unclean([top], None, False, 0) is not None
            or (self._top_patterns and not self._patterns_hold(top, []))
            or not self._plain_keys(data, self._max_depth)
        ):
            return None
        decode = self._decode_item
        structs: list[Any] = []
        for text in raw:
            try:
                structs.append(decode(text))
            except DECODE_ERRORS:
                structs.append(None)  # None is never clean: first_unclean stops at it
        written = changed.written(self._plain_paths)
        first_unclean = self._items_unclean
        index = first_unclean(structs, written, False, 0)
        while index is not None:
            structs[index] = None
            index = first_unclean(structs, written, False, index + 1)
        if self._item_patterns:
            holds = self._item_holds
            structs = [s if s is not None and holds(s) else None for s in structs]
        setattr(top, self._items_attr, [])  # the outline's own Struct: its findings are read from ``raw``
        return Outline(top, (decided[0], decided[1]), self._shape, _to_builtins(structs), raw)
