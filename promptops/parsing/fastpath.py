"""The fast path: accept a clean response in one typed decoding pass, or decline.

It never builds a diagnostic and never rejects. It accepts only when the response is exactly what the diagnostic
path would keep unchanged with no diagnostic at all: the text is one JSON object that decodes into the Struct
types of typed.py (types, enums, bounds, patterns, required and unknown fields, line rules), declares versions that
the diagnostic path's own rules accept exactly, repeats no key, has no string with whitespace at an edge, names
only changed files as written, repeats no finding id, and stays within the limits. Anything else declines, and
the parser runs the diagnostic path from the raw input: the outcome is the same either way (the parity tests
check it), only the time differs.
"""

from __future__ import annotations

from typing import Any

from promptops.parsing.diagnostics import ParseOutcome
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.typed import DECODE_ERRORS, TypedShape
from promptops.parsing.validate import Validator


class FastPath:
    """Typed decoding for one schema version; version declarations are judged by the diagnostic path's
    ``Validator.versions_as_written``, whose table of judged declarations is looked up first."""

    def __init__(self, typed: TypedShape, validator: Validator, max_depth: int, max_findings: int) -> None:
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
        self._patterns_hold = typed.patterns_hold
        self._judged = validator.judged_versions.get  # the common case, a declaration seen before: one C call
        self._judge = validator.versions_as_written

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
            or not self._plain_keys(data, self._max_depth)
            or not self._patterns_hold(obj, items)
        ):
            return None
        return ParseOutcome.clean([], obj, versions, len(items))
