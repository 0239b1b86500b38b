"""Partial fallback, order, all-dropped warning, duplicate ids."""

from __future__ import annotations

import json

from promptops import Code, Parser
from tests.helpers import CHANGED, finding, response


def test_kept_findings_stay_in_response_order(both: Parser) -> None:
    body = [finding(5), finding(1, severity="x"), finding(3), finding(2), finding(4, file="gone.py")]
    outcome = both.parse(json.dumps(response(body)), CHANGED)
    assert [f["id"] for f in outcome.result["findings"]] == ["F5", "F3", "F2"]  # type: ignore[index]
    assert [d.finding_index for d in outcome.diagnostics] == [1, 4]


def test_all_dropped_returns_empty_findings_with_a_warning(both: Parser) -> None:
    outcome = both.parse(json.dumps(response([finding(1, severity="x"), finding(2, file="gone.py")])), CHANGED)
    assert outcome.accepted
    assert outcome.result["findings"] == []  # type: ignore[index]
    last = outcome.diagnostics[-1]
    assert (last.code, last.level, last.path, last.finding_index) == (
        Code.ALL_FINDINGS_DROPPED,
        "warning",
        "findings",
        None,
    )
    assert outcome.has_warnings


def test_empty_findings_from_the_start_get_no_warning(both: Parser) -> None:
    outcome = both.parse(json.dumps(response([])), CHANGED)
    assert outcome.accepted and outcome.diagnostics == [] and not outcome.has_warnings
    assert (outcome.findings_seen, outcome.findings_kept) == (0, 0)


def test_duplicate_ids_are_all_kept_and_flagged(both: Parser) -> None:
    body = [finding(1), finding(2), finding(1, line=80), finding(1, line=90, id=" F1 ")]
    outcome = both.parse(json.dumps(response(body)), CHANGED)
    assert outcome.findings_kept == 4
    flagged = [
        (d.code, d.path, d.finding_index, d.finding_id, d.level)
        for d in outcome.diagnostics
        if d.code == Code.DUPLICATE_FINDING_ID
    ]
    assert flagged == [
        (Code.DUPLICATE_FINDING_ID, "findings[2].id", 2, "F1", "warning"),
        (Code.DUPLICATE_FINDING_ID, "findings[3].id", 3, "F1", "warning"),
    ]


def test_dropped_findings_do_not_count_as_duplicates(both: Parser) -> None:
    outcome = both.parse(json.dumps(response([finding(1, severity="x"), finding(1)])), CHANGED)
    assert [d.code for d in outcome.diagnostics] == [Code.INVALID_ENUM]
