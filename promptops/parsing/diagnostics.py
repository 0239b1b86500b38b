"""Diagnostics and the ParseOutcome: what the parser decided about one response, and why.

The codes never change spelling: tools downstream (the store, rate queries, dashboards)
match on them, so they never change spelling. Levels: ``error`` for the reason a response was rejected,
``warning`` when something the model said was lost (a dropped finding, truncation, all findings dropped,
duplicate ids), ``info`` for lossless normalization (coercions, wrapper extraction, fields ignored under
tolerant reading).
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any, Literal

import msgspec

from promptops.parsing import paths

_new = object.__new__
_to_builtins = msgspec.to_builtins

ERROR = "error"
WARNING = "warning"
INFO = "info"
# What became of the model's text, when the code alone does not say: a field, so nothing reads it from the message.
Disposition = Literal["dropped", "coerced"]


class Code(StrEnum):
    # reject reasons
    INVALID_JSON = "invalid_json"
    NOT_AN_OBJECT = "not_an_object"
    MISSING_REQUIRED_FIELD = "missing_required_field"
    ADDITIONAL_PROPERTY = "additional_property"
    INVALID_TOP_LEVEL_FIELD = "invalid_top_level_field"
    FINDINGS_NOT_ARRAY = "findings_not_array"
    INCOMPATIBLE_VERSION = "incompatible_version"
    MULTIPLE_JSON_VALUES = "multiple_json_values"
    DUPLICATE_KEY = "duplicate_key"
    TOO_DEEP = "too_deep"
    TOO_LARGE = "too_large"
    # drop reasons (also missing_required_field, not_an_object, duplicate_key)
    INVALID_ENUM = "invalid_enum"
    INVALID_LINE = "invalid_line"
    END_LINE_BEFORE_LINE = "end_line_before_line"
    INVALID_FIELD = "invalid_field"
    UNKNOWN_FIELD = "unknown_field"
    FILE_NOT_IN_CHANGED_FILES = "file_not_in_changed_files"
    TRUNCATED = "truncated"
    # coercions
    TRIMMED_WHITESPACE = "trimmed_whitespace"
    NORMALIZED_PATH_SEPARATOR = "normalized_path_separator"
    CONVERTED_NUMERIC_STRING = "converted_numeric_string"
    # others
    ALL_FINDINGS_DROPPED = "all_findings_dropped"
    EXTRACTED_FROM_WRAPPER = "extracted_from_wrapper"
    TRUNCATED_OUTPUT = "truncated_output"
    DUPLICATE_FINDING_ID = "duplicate_finding_id"
    UNKNOWN_FIELD_IGNORED = "unknown_field_ignored"


COERCION_CODES = frozenset({Code.TRIMMED_WHITESPACE, Code.NORMALIZED_PATH_SEPARATOR, Code.CONVERTED_NUMERIC_STRING})
# Codes that mean "this finding was dropped" when logged at warning level; the same spelling at error level is a
# reject reason. Each dropped finding carries exactly one of them (the store's views and the review gate read it).
DROP_CODES = frozenset(
    {
        Code.MISSING_REQUIRED_FIELD,
        Code.INVALID_ENUM,
        Code.INVALID_LINE,
        Code.END_LINE_BEFORE_LINE,
        Code.INVALID_FIELD,
        Code.UNKNOWN_FIELD,
        Code.FILE_NOT_IN_CHANGED_FILES,
        Code.NOT_AN_OBJECT,
        Code.DUPLICATE_KEY,
        Code.TRUNCATED,
    }
)


class Diagnostic:
    """One thing the parser noticed, with where it was (``findings[3].line``) and which finding.

    ``detail`` is what happened; ``message`` (the published text) prefixes a drop with "finding dropped: ".
    """

    __slots__ = ("code", "detail", "disposition", "finding_id", "finding_index", "level", "message", "path")

    def __init__(
        self,
        code: Code,
        level: str,
        path: str | None,
        message: str,
        finding_index: int | None = None,
        finding_id: str | None = None,
        disposition: Disposition | None = None,
    ) -> None:
        self.code = code
        self.level = level
        self.path = path
        self.detail = message
        self.message = f"finding dropped: {message}" if disposition == "dropped" else message
        self.disposition = disposition
        self.finding_index = finding_index
        self.finding_id = finding_id

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": str(self.code),
            "level": self.level,
            "path": self.path,
            "finding_index": self.finding_index,
            "finding_id": self.finding_id,
            "message": self.message,
        }

    def __repr__(self) -> str:
        return f"Diagnostic({self.code!s}, {self.level}, {self.path!r}, {self.message!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Diagnostic) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]


def extraction_note() -> Diagnostic:
    return Diagnostic(Code.EXTRACTED_FROM_WRAPPER, INFO, None, "JSON object extracted from surrounding text")


def duplicate_ids(kept: Iterable[tuple[int, Any]], items_path: str, id_field: str) -> list[Diagnostic]:
    """A ``duplicate_finding_id`` warning for each kept finding whose id an earlier kept finding already used.

    ``kept`` holds (index in the response, id) pairs; ids that are not non-empty strings are not compared.
    """
    first: dict[str, int] = {}
    found = []
    for index, finding_id in kept:
        if type(finding_id) is not str or not finding_id:
            continue
        if finding_id in first:
            where = paths.member(paths.element(items_path, index), id_field)
            earlier = paths.element(items_path, first[finding_id])
            message = f"finding id {finding_id!r} is also used by {earlier}"
            found.append(Diagnostic(Code.DUPLICATE_FINDING_ID, WARNING, where, message, index, finding_id))
        else:
            first[finding_id] = index
    return found


class ParseOutcome:
    """The parser's verdict on one response.

    ``result`` is the validated, coerced output (a plain JSON-like dict) for accepted responses and None for
    rejected ones. It is built on first access: a service that only records diagnostics never pays for it.
    Counts are per finding and only meaningful for accepted responses (all zero when rejected).
    """

    __slots__ = (
        "_result",
        "_typed",
        "accepted",
        "diagnostics",
        "extracted",
        "findings_coerced",
        "findings_dropped",
        "findings_kept",
        "findings_seen",
        "prompt_version",
        "reason",
        "schema_version",
        "truncated",
    )

    def __init__(
        self,
        *,
        accepted: bool,
        reason: Code | None,
        diagnostics: list[Diagnostic],
        result: dict[str, Any] | None = None,
        schema_version: str | None = None,
        prompt_version: str | None = None,
        findings_seen: int = 0,
        findings_kept: int = 0,
        findings_dropped: int = 0,
        findings_coerced: int = 0,
        extracted: bool = False,
        truncated: bool = False,
    ) -> None:
        self.accepted = accepted
        self.reason = reason
        self.diagnostics = diagnostics
        self._result = result
        self._typed: Any = None  # see clean
        self.schema_version = schema_version
        self.prompt_version = prompt_version
        self.findings_seen = findings_seen
        self.findings_kept = findings_kept
        self.findings_dropped = findings_dropped
        self.findings_coerced = findings_coerced
        self.extracted = extracted
        self.truncated = truncated

    @classmethod
    def clean(cls, diagnostics: list[Diagnostic], typed: Any, versions: tuple[str, str], findings: int) -> ParseOutcome:
        """An accepted outcome with every finding kept unchanged (the fast path's only verdict); ``typed`` is the
        decoded response (msgspec Structs), turned into the result on first access.

        Sets the slots directly: this runs once per clean response on the hot path.
        """
        outcome = _new(cls)
        outcome.accepted = True
        outcome.reason = None
        outcome.diagnostics = diagnostics
        outcome._result = None
        outcome._typed = typed
        outcome.schema_version, outcome.prompt_version = versions
        outcome.findings_seen = outcome.findings_kept = findings
        outcome.findings_dropped = outcome.findings_coerced = 0
        outcome.extracted = outcome.truncated = False
        return outcome

    @classmethod
    def checked(
        cls,
        diagnostics: list[Diagnostic],
        result: dict[str, Any],
        versions: tuple[str, str],
        counts: tuple[int, int, int],
        extracted: bool,
        truncated: bool,
    ) -> ParseOutcome:
        """An accepted outcome of the diagnostic path; ``counts`` are (seen, kept, coerced) findings.

        Sets the slots directly, as ``clean`` does: it runs once per declined response."""
        outcome = _new(cls)
        outcome.accepted = True
        outcome.reason = None
        outcome.diagnostics = diagnostics
        outcome._result = result
        outcome._typed = None
        outcome.schema_version, outcome.prompt_version = versions
        seen, kept, outcome.findings_coerced = counts
        outcome.findings_seen, outcome.findings_kept, outcome.findings_dropped = seen, kept, seen - kept
        outcome.extracted = extracted
        outcome.truncated = truncated
        return outcome

    @property
    def outcome(self) -> str:
        return "accepted" if self.accepted else "rejected"

    @property
    def result(self) -> dict[str, Any] | None:
        if self._result is None and self._typed is not None:
            self._result = _to_builtins(self._typed)
            self._typed = None
        return self._result

    @property
    def has_warnings(self) -> bool:
        return any(d.level == WARNING for d in self.diagnostics)

    @property
    def coercions(self) -> int:
        return sum(1 for d in self.diagnostics if d.code in COERCION_CODES)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``promptops validate --format json``."""
        return {
            "outcome": self.outcome,
            "reason": None if self.reason is None else str(self.reason),
            "result": self.result,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }

    def __repr__(self) -> str:
        return f"ParseOutcome({self.outcome}, reason={self.reason}, diagnostics={len(self.diagnostics)})"
