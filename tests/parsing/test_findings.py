"""Each finding is dropped on its own or kept with logged coercions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from promptops import Code, Parser
from tests.helpers import CHANGED, DROP, finding, response

# (case id, finding overrides, drop code, diagnostic path)
DROPS: list[tuple[str, dict[str, Any], Code, str]] = [
    ("missing-id", {"id": DROP}, Code.MISSING_REQUIRED_FIELD, "findings[0].id"),
    ("missing-severity", {"severity": DROP}, Code.MISSING_REQUIRED_FIELD, "findings[0].severity"),
    ("missing-category", {"category": DROP}, Code.MISSING_REQUIRED_FIELD, "findings[0].category"),
    ("missing-title", {"title": DROP}, Code.MISSING_REQUIRED_FIELD, "findings[0].title"),
    ("missing-file", {"file": DROP}, Code.MISSING_REQUIRED_FIELD, "findings[0].file"),
    ("missing-line", {"line": DROP}, Code.MISSING_REQUIRED_FIELD, "findings[0].line"),
    ("missing-message", {"message": DROP}, Code.MISSING_REQUIRED_FIELD, "findings[0].message"),
    ("unknown-field", {"fix_hint": "x"}, Code.UNKNOWN_FIELD, "findings[0].fix_hint"),
    ("id-number", {"id": 5}, Code.INVALID_FIELD, "findings[0].id"),
    ("title-null", {"title": None}, Code.INVALID_FIELD, "findings[0].title"),
    ("suggestion-number", {"suggestion": 3}, Code.INVALID_FIELD, "findings[0].suggestion"),
    ("rule-id-list", {"rule_id": ["a"]}, Code.INVALID_FIELD, "findings[0].rule_id"),
    ("id-empty", {"id": ""}, Code.INVALID_FIELD, "findings[0].id"),
    ("id-blank", {"id": "   "}, Code.INVALID_FIELD, "findings[0].id"),
    ("message-empty", {"message": ""}, Code.INVALID_FIELD, "findings[0].message"),
    ("file-empty", {"file": ""}, Code.INVALID_FIELD, "findings[0].file"),
    ("severity-case", {"severity": "High"}, Code.INVALID_ENUM, "findings[0].severity"),
    ("severity-unknown", {"severity": "blocker"}, Code.INVALID_ENUM, "findings[0].severity"),
    ("category-unknown", {"category": "bug"}, Code.INVALID_ENUM, "findings[0].category"),
    ("confidence-unknown", {"confidence": "very"}, Code.INVALID_ENUM, "findings[0].confidence"),
    ("severity-number", {"severity": 1}, Code.INVALID_FIELD, "findings[0].severity"),
    ("line-zero", {"line": 0}, Code.INVALID_LINE, "findings[0].line"),
    ("line-negative", {"line": -3}, Code.INVALID_LINE, "findings[0].line"),
    ("line-fraction", {"line": 1.5}, Code.INVALID_LINE, "findings[0].line"),
    ("line-string-fraction", {"line": "1.5"}, Code.INVALID_LINE, "findings[0].line"),
    ("line-word", {"line": "forty"}, Code.INVALID_LINE, "findings[0].line"),
    ("line-bool", {"line": True}, Code.INVALID_LINE, "findings[0].line"),
    ("line-null", {"line": None}, Code.INVALID_LINE, "findings[0].line"),
    ("line-non-ascii-digits", {"line": "\u0663"}, Code.INVALID_LINE, "findings[0].line"),
    ("line-exponent-string", {"line": "1e2"}, Code.INVALID_LINE, "findings[0].line"),
    ("line-string-zero", {"line": "0"}, Code.INVALID_LINE, "findings[0].line"),
    ("end-line-zero", {"end_line": 0}, Code.INVALID_LINE, "findings[0].end_line"),
    ("end-before-line", {"line": 30, "end_line": 12}, Code.END_LINE_BEFORE_LINE, "findings[0].end_line"),
    ("end-before-line-coerced", {"line": "30", "end_line": " 12"}, Code.END_LINE_BEFORE_LINE, "findings[0].end_line"),
    ("outside-diff", {"file": "src/db/pool.py"}, Code.FILE_NOT_IN_CHANGED_FILES, "findings[0].file"),
    # precedence (the fixed order of a finding's faults, then reconciliation last)
    ("type-before-enum", {"title": 7, "severity": "High"}, Code.INVALID_FIELD, "findings[0].title"),
    ("enum-before-line", {"line": 0, "severity": "High"}, Code.INVALID_ENUM, "findings[0].severity"),
    ("missing-before-unknown", {"id": DROP, "extra": 1}, Code.MISSING_REQUIRED_FIELD, "findings[0].id"),
    ("validation-before-reconcile", {"file": "other.py", "category": "bug"}, Code.INVALID_ENUM, "findings[0].category"),
    ("min-length-before-enum", {"id": "", "severity": "x"}, Code.INVALID_FIELD, "findings[0].id"),
]


@pytest.mark.parametrize(("overrides", "code", "path"), [c[1:] for c in DROPS], ids=[c[0] for c in DROPS])
def test_bad_findings_are_dropped_alone(both: Parser, overrides: dict[str, Any], code: Code, path: str) -> None:
    outcome = both.parse(json.dumps(response([finding(1, **overrides), finding(2)])), CHANGED)
    assert outcome.accepted
    assert [f["id"] for f in outcome.result["findings"]] == ["F2"]  # type: ignore[index]
    drops = [d for d in outcome.diagnostics if d.level == "warning"]
    assert [(d.code, d.path, d.finding_index) for d in drops] == [(code, path, 0)]
    assert drops[0].message.startswith("finding dropped: ")
    assert (drops[0].disposition, drops[0].message) == ("dropped", f"finding dropped: {drops[0].detail}")
    assert (outcome.findings_seen, outcome.findings_kept, outcome.findings_dropped) == (2, 1, 1)


@pytest.mark.parametrize("value", ["a string", 7, None, ["list"], True])
def test_a_finding_that_is_not_an_object_is_dropped(both: Parser, value: Any) -> None:
    outcome = both.parse(json.dumps(response([value, finding(2)])), CHANGED)
    assert [(d.code, d.path) for d in outcome.diagnostics] == [(Code.NOT_AN_OBJECT, "findings[0]")]


# (case id, finding overrides, coerced field values, coercion diagnostics as (code, path))
COERCIONS: list[tuple[str, dict[str, Any], dict[str, Any], list[tuple[Code, str]]]] = [
    ("line-string", {"line": "42"}, {"line": 42}, [(Code.CONVERTED_NUMERIC_STRING, "findings[0].line")]),
    ("line-signed", {"line": "+7"}, {"line": 7}, [(Code.CONVERTED_NUMERIC_STRING, "findings[0].line")]),
    ("line-leading-zeros", {"line": "007"}, {"line": 7}, [(Code.CONVERTED_NUMERIC_STRING, "findings[0].line")]),
    ("line-zero-fraction", {"line": "4.00"}, {"line": 4}, [(Code.CONVERTED_NUMERIC_STRING, "findings[0].line")]),
    ("line-whole-float", {"line": 9.0}, {"line": 9}, [(Code.CONVERTED_NUMERIC_STRING, "findings[0].line")]),
    (
        "end-line-padded-string",
        {"end_line": " 50 "},
        {"end_line": 50},
        [(Code.TRIMMED_WHITESPACE, "findings[0].end_line"), (Code.CONVERTED_NUMERIC_STRING, "findings[0].end_line")],
    ),
    ("title-padded", {"title": "  Title \n"}, {"title": "Title"}, [(Code.TRIMMED_WHITESPACE, "findings[0].title")]),
    (
        "severity-padded",
        {"severity": " high"},
        {"severity": "high"},
        [(Code.TRIMMED_WHITESPACE, "findings[0].severity")],
    ),
    (
        "nbsp-trimmed",
        {"message": "\u00a0msg\u2003"},
        {"message": "msg"},
        [(Code.TRIMMED_WHITESPACE, "findings[0].message")],
    ),
    (
        "windows-path",
        {"file": "src\\api\\users.py"},
        {"file": "src/api/users.py"},
        [(Code.NORMALIZED_PATH_SEPARATOR, "findings[0].file")],
    ),
    ("end-equals-line", {"line": 5, "end_line": 5}, {"end_line": 5}, []),
    ("optional-suggestion-empty", {"suggestion": ""}, {"suggestion": ""}, []),
]


@pytest.mark.parametrize(
    ("overrides", "expected", "coerced"), [c[1:] for c in COERCIONS], ids=[c[0] for c in COERCIONS]
)
def test_safe_scalar_coercions_are_applied_and_logged(
    both: Parser, overrides: dict[str, Any], expected: dict[str, Any], coerced: list[tuple[Code, str]]
) -> None:
    outcome = both.parse(json.dumps(response([finding(1, **overrides)])), CHANGED)
    assert outcome.accepted and outcome.findings_kept == 1
    kept = outcome.result["findings"][0]  # type: ignore[index]
    assert {k: kept[k] for k in expected} == expected
    assert [(d.code, d.path) for d in outcome.diagnostics] == coerced
    assert all(d.level == "info" and d.finding_index == 0 and d.finding_id == "F1" for d in outcome.diagnostics)
    assert all(d.disposition == "coerced" and d.message == d.detail for d in outcome.diagnostics)
    assert outcome.findings_coerced == (1 if coerced else 0)


def test_finding_id_in_diagnostics_is_the_trimmed_id(both: Parser) -> None:
    outcome = both.parse(json.dumps(response([finding(1, id="  F7 ", severity="x")])), CHANGED)
    assert outcome.diagnostics[0].finding_id == "F7"


def test_null_is_never_absent_by_default(both: Parser) -> None:
    outcome = both.parse(json.dumps(response([finding(1, suggestion=None), finding(2)])), CHANGED)
    assert [(d.code, d.path) for d in outcome.diagnostics] == [(Code.INVALID_FIELD, "findings[0].suggestion")]
