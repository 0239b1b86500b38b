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

from promptops.contract import Contract
from promptops.errors import VersionError
from promptops.parsing.diagnostics import ParseOutcome
from promptops.parsing.fields import PLAIN, Coercion, Problem, check_value
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.typed import DECODE_ERRORS, TypedShape
from promptops.parsing.versions import VersionGate
from promptops.versioning import PromptVersion, SchemaVersion

_VERSION_CACHE_LIMIT = 4096  # declarations come from model output: keep the cache bounded


class FastPath:
    """Typed decoding for one schema version, with the cache of accepted version declarations."""

    def __init__(
        self, contract: Contract, typed: TypedShape, gate: VersionGate, max_depth: int, max_findings: int
    ) -> None:
        self._contract = contract
        self._typed = typed
        self._gate = gate
        self._decode = typed.decode_response
        self._versions_of = typed.versions
        self._items_of = typed.items
        self._max_findings = max_findings
        self._max_depth = max_depth
        self._top_unclean = typed.top_checks.first_unclean
        self._items_unclean = typed.item_checks.first_unclean
        self._plain_paths = typed.plain_paths
        self._plain_keys = typed.plain_keys
        self._versions_ok: dict[tuple[Any, Any], bool] = {}

    def accept(
        self, data: bytes, changed: ChangedFiles, request_versions: tuple[str, str] | None
    ) -> ParseOutcome | None:
        """The outcome of a clean response (the diagnostic path's, exactly), else None."""
        try:
            obj = self._decode(data)
        except DECODE_ERRORS:
            return None
        if request_versions is None:
            assert self._versions_of is not None  # contracts without version fields always pass request versions
            versions = self._versions_of(obj)
        else:
            versions = request_versions
        known = self._versions_ok.get(versions)
        if known is None:
            known = self._learn_versions(versions)
        if not known:
            return None
        items = self._items_of(obj)
        # The decline tests (typed.py, _checks.c and _checks_keys.c), called here directly: once per clean response.
        if (
            len(items) > self._max_findings
            or self._top_unclean([obj], None, False, 0) is not None
            or self._items_unclean(items, changed.written(self._plain_paths), True, 0) is not None
            or not self._plain_keys(data, self._max_depth)
        ):
            return None
        return ParseOutcome.clean([], obj, versions, len(items))

    def versions_ok(self, versions: tuple[Any, Any]) -> bool:
        known = self._versions_ok.get(versions)
        return self._learn_versions(versions) if known is None else known

    def _learn_versions(self, versions: tuple[Any, Any]) -> bool:
        """These exact declarations pass the diagnostic path's version rules unchanged, are accepted, and are
        read with exactly this schema version (not tolerantly)."""
        schema_text, prompt_text = versions
        ok = False
        if type(schema_text) is str and type(prompt_text) is str and self._as_written(versions):
            try:
                verdict = self._gate.judge(SchemaVersion.parse(schema_text), PromptVersion.parse(prompt_text))
            except VersionError:
                pass
            else:
                ok = verdict.accepted and verdict.shape is self._typed.shape and not verdict.tolerant
        if len(self._versions_ok) >= _VERSION_CACHE_LIMIT:
            self._versions_ok.clear()
        self._versions_ok[versions] = ok
        return ok

    def _as_written(self, versions: tuple[str, str]) -> bool:
        fields = self._contract.versions
        rules = self._typed.shape.top.properties
        for name, text in zip((fields.schema, fields.prompt), versions, strict=True):
            if name is None:
                continue
            applied: list[Coercion] = []
            checked = check_value(rules[name], text, None, name, PLAIN, self._contract.coercions, applied)
            if isinstance(checked, Problem) or applied or checked != text:
                return False
        return True
