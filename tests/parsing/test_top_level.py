"""The top level must be a well-formed object, or the response is rejected."""

from __future__ import annotations

import json
from typing import Any

import pytest

from promptops import Code, Parser
from tests.helpers import CHANGED, DROP, response

CASES: list[tuple[str, Any, Code, str | None]] = [
    ("array", [response()], Code.NOT_AN_OBJECT, None),
    ("string", "a review", Code.NOT_AN_OBJECT, None),
    ("number", 3, Code.NOT_AN_OBJECT, None),
    ("null", None, Code.NOT_AN_OBJECT, None),
    ("unknown-key", response(verdict="ok"), Code.ADDITIONAL_PROPERTY, "verdict"),
    ("missing-schema-version", response(schema_version=DROP), Code.MISSING_REQUIRED_FIELD, "schema_version"),
    ("missing-prompt-version", response(prompt_version=DROP), Code.MISSING_REQUIRED_FIELD, "prompt_version"),
    ("missing-findings", response(findings=DROP), Code.MISSING_REQUIRED_FIELD, "findings"),
    ("findings-object", response(findings={"a": 1}), Code.FINDINGS_NOT_ARRAY, "findings"),
    ("findings-null", response(findings=None), Code.FINDINGS_NOT_ARRAY, "findings"),
    ("findings-string", response(findings="[]"), Code.FINDINGS_NOT_ARRAY, "findings"),
    ("schema-version-pattern", response(schema_version="v1.0"), Code.INVALID_TOP_LEVEL_FIELD, "schema_version"),
    ("schema-version-three-parts", response(schema_version="1.0.0"), Code.INVALID_TOP_LEVEL_FIELD, "schema_version"),
    ("schema-version-number", response(schema_version=1.0), Code.INVALID_TOP_LEVEL_FIELD, "schema_version"),
    ("prompt-version-pattern", response(prompt_version="1.0.0.0"), Code.INVALID_TOP_LEVEL_FIELD, "prompt_version"),
    ("schema-version-newline", response(schema_version="1.0\n2"), Code.INVALID_TOP_LEVEL_FIELD, "schema_version"),
    ("summary-number", response(summary=5), Code.INVALID_TOP_LEVEL_FIELD, "summary"),
    ("summary-null", response(summary=None), Code.INVALID_TOP_LEVEL_FIELD, "summary"),
    ("meta-array", response(meta=[1]), Code.INVALID_TOP_LEVEL_FIELD, "meta"),
]


@pytest.mark.parametrize(("value", "code", "path"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_top_level_problems_reject(both: Parser, value: Any, code: Code, path: str | None) -> None:
    outcome = both.parse(json.dumps(value), CHANGED)
    assert not outcome.accepted
    assert outcome.reason == code
    assert outcome.result is None
    error = outcome.diagnostics[-1]
    assert (error.code, error.level, error.path, error.finding_index) == (code, "error", path, None)
    assert all(d.finding_index is None for d in outcome.diagnostics)
    assert (outcome.findings_seen, outcome.findings_kept) == (0, 0)


def test_top_level_strings_are_trimmed_before_pattern_checks(both: Parser) -> None:
    outcome = both.parse(json.dumps(response(schema_version=" 1.0\n", summary="  done  ")), CHANGED)
    assert outcome.accepted
    assert outcome.result["schema_version"] == "1.0" and outcome.result["summary"] == "done"  # type: ignore[index]
    trimmed = [(d.code, d.path, d.level) for d in outcome.diagnostics]
    assert trimmed == [
        (Code.TRIMMED_WHITESPACE, "schema_version", "info"),
        (Code.TRIMMED_WHITESPACE, "summary", "info"),
    ]


def test_optional_top_level_fields_may_be_absent_and_meta_is_open(both: Parser) -> None:
    outcome = both.parse(json.dumps(response(summary=DROP, meta={"anything": [1, {"goes": None}]})), CHANGED)
    assert outcome.accepted
    assert outcome.result["meta"] == {"anything": [1, {"goes": None}]}  # type: ignore[index]
    assert "summary" not in outcome.result  # type: ignore[operator]


def test_result_keys_follow_the_schema_order(both: Parser) -> None:
    body = {"findings": [], "summary": "s", "prompt_version": "1.0.0", "schema_version": "1.0"}
    outcome = both.parse(json.dumps(body), CHANGED)
    assert list(outcome.result) == ["schema_version", "prompt_version", "summary", "findings"]  # type: ignore[arg-type]
