"""A response cut off inside its value keeps only what was complete."""

from __future__ import annotations

import json

from promptops import Code, Parser
from tests.helpers import CHANGED, finding, response


def _cut_inside(raw: str, marker: str, extra: int = 3) -> str:
    return raw[: raw.index(marker) + extra]


def _codes(outcome: object) -> list[str]:
    return [str(d.code) for d in outcome.diagnostics]  # type: ignore[attr-defined]


def test_cut_inside_a_finding_keeps_the_complete_ones(both: Parser) -> None:
    raw = json.dumps(response([finding(1), finding(2), finding(3)]))
    outcome = both.parse(_cut_inside(raw, '"id": "F3"', 9), CHANGED)
    assert outcome.accepted and outcome.truncated
    assert [f["id"] for f in outcome.result["findings"]] == ["F1", "F2"]  # type: ignore[index]
    assert _codes(outcome) == ["truncated_output", "truncated"]
    cut = outcome.diagnostics[1]
    assert (cut.path, cut.finding_index, cut.level) == ("findings[2]", 2, "warning")
    assert (outcome.findings_seen, outcome.findings_kept, outcome.findings_dropped) == (3, 2, 1)


def test_cut_between_findings_drops_nothing(both: Parser) -> None:
    raw = json.dumps(response([finding(1), finding(2)]))
    cut = raw[: raw.index('{"id": "F2"')]  # ends right after "F1 }, "
    outcome = both.parse(cut, CHANGED)
    assert outcome.accepted and outcome.findings_kept == 1 and outcome.findings_seen == 1
    assert _codes(outcome) == ["truncated_output"]


def test_cut_summary_counts_as_absent(both: Parser) -> None:
    body = {"schema_version": "1.0", "prompt_version": "1.0.0", "findings": [finding(1)], "summary": "All good so far"}
    raw = json.dumps(body)
    outcome = both.parse(raw[:-8], CHANGED)
    assert outcome.accepted
    assert "summary" not in outcome.result  # type: ignore[operator]
    assert "summary" in outcome.diagnostics[0].message


def test_cut_number_at_the_end_is_not_kept(both: Parser) -> None:
    raw = json.dumps(response([finding(1), finding(2, line=42)]))
    cut = raw[: raw.index('"line": 42') + len('"line": 4')]
    outcome = both.parse(cut, CHANGED)
    assert outcome.findings_kept == 1 and _codes(outcome)[-1] == "truncated"


def test_required_top_level_fields_must_survive(both: Parser) -> None:
    raw = json.dumps(response())
    assert both.parse(raw[:20], CHANGED).reason == Code.MISSING_REQUIRED_FIELD  # inside schema_version
    outcome = both.parse(raw[: raw.index('"findings"') + 5], CHANGED)
    assert outcome.reason == Code.MISSING_REQUIRED_FIELD
    assert "cut off" in outcome.diagnostics[-1].message


def test_cut_response_inside_a_fence_is_extracted_and_truncated(both: Parser) -> None:
    raw = "```json\n" + json.dumps(response([finding(1), finding(2)]))[:-40]
    outcome = both.parse(raw, CHANGED)
    assert outcome.accepted and outcome.extracted and outcome.truncated
    assert _codes(outcome)[:2] == ["extracted_from_wrapper", "truncated_output"]


def test_syntax_error_before_the_cut_is_invalid_json(both: Parser) -> None:
    raw = json.dumps(response([finding(1), finding(2)]))
    broken = raw.replace('"severity": "high",', '"severity": "high",,', 1)[:-30]
    assert both.parse(broken, CHANGED).reason == Code.INVALID_JSON


def test_duplicate_key_in_a_complete_finding_of_a_cut_response(both: Parser) -> None:
    raw = json.dumps(response([finding(1), finding(2), finding(3)]))
    raw = raw.replace('"id": "F1"', '"id": "F1", "id": "F1b"', 1)
    outcome = both.parse(raw[:-30], CHANGED)
    assert [str(d.code) for d in outcome.diagnostics if d.finding_index == 0] == ["duplicate_key"]
