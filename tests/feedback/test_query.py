"""The feedback read query: effective outcomes, pending findings, --now replays and the per-unit sums."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from promptops.store.feedback_query import FeedbackCounts, feedback_counts
from tests.conftest import Cli
from tests.feedback.events import STORE, event, write_lines, write_responses


@pytest.fixture
def stored(project: Path, cli: Cli) -> Path:
    """r0..r7 (F1, F2 each; units org/repo#0..3, baseline even, candidate odd) at 2026-01-01, r8..r9 at 2026-03-01."""
    write_responses(project / "logs" / "a.jsonl", 8)
    write_responses(project / "logs" / "b.jsonl", 2, start=8, ts="2026-03-01T00:00:00Z")
    assert cli(project, "ingest", str(project / "logs"))[0] == 0
    return project


def _counts(project: Path, cli: Cli, events: list[dict[str, object]], now: datetime) -> dict[str, FeedbackCounts]:
    write_lines(project / "feedback" / "f.jsonl", events)
    assert cli(project, "feedback", "ingest", str(project / "feedback"))[0] == 0
    con = duckdb.connect(str(project / STORE), read_only=True)
    try:
        rows = feedback_counts(con, now, rollout_id="review-v7")
    finally:
        con.close()
    assert all(
        (r.contract, r.rollout_id, r.prompt_version, r.severity) == ("review-result", "review-v7", "1.0.0", "high")
        for r in rows
    )
    return {str(r.arm): r for r in rows}


def test_the_latest_event_decides_and_every_event_is_kept(stored: Path, cli: Cli) -> None:
    events = [
        event(1, "F1", "r0", outcome="accepted", time="2026-01-02T00:00:00Z"),
        event(2, "F1", "r0", outcome="dismissed", time="2026-01-03T00:00:00+01:00"),  # 2026-01-02T23:00Z: later
        event(3, "F2", "r0", outcome="dismissed", time="2026-01-05T00:00:00Z"),
        event(4, "F2", "r0", outcome="fixed", time="2026-01-04T00:00:00Z"),  # earlier: dismissed stays
        event(5, "F1", "r2", outcome="ignored", time="2026-01-04T00:00:00Z"),
        event(6, "F1", "r2", outcome="fixed", time="2026-01-04T00:00:00Z"),  # same time: fixed beats ignored
    ]
    baseline = _counts(stored, cli, events, datetime(2026, 6, 1))["baseline"]
    outcomes = (baseline.fixed, baseline.accepted, baseline.dismissed, baseline.ignored)
    assert (baseline.findings, outcomes) == (10, (1, 0, 2, 0))
    assert (baseline.decided, baseline.acted_on, baseline.pending) == (3, 1, 7)
    con = duckdb.connect(str(stored / STORE), read_only=True)
    assert con.execute("SELECT count(*) FROM feedback").fetchall() == [(6,)]
    con.close()


def test_now_ignores_feedback_and_responses_after_it(stored: Path, cli: Cli) -> None:
    events = [
        event(1, "F1", "r0", outcome="accepted", time="2026-01-02T00:00:00Z"),
        event(2, "F1", "r0", outcome="dismissed", time="2026-01-10T00:00:00Z"),
        event(3, "F1", "r8", outcome="fixed", time="2026-03-02T00:00:00Z"),
    ]
    then = _counts(stored, cli, events, datetime(2026, 1, 5, tzinfo=UTC))
    assert (then["baseline"].findings, then["baseline"].accepted, then["baseline"].dismissed) == (8, 1, 0)
    later = _counts(stored, cli, [], datetime(2026, 3, 5))
    assert (later["baseline"].findings, later["baseline"].accepted, later["baseline"].dismissed) == (10, 0, 1)
    assert later["baseline"].fixed == 1


def test_the_unit_sums_are_those_of_a_per_unit_table(stored: Path, cli: Cli) -> None:
    # baseline units: #0 (r0, r4), #2 (r2, r6); 4 findings each
    events = [
        event(1, "F1", "r0", outcome="fixed"),
        event(2, "F2", "r0", outcome="accepted"),
        event(3, "F1", "r4", outcome="dismissed"),
        event(4, "F1", "r2", outcome="ignored"),
    ]
    baseline = _counts(stored, cli, events, datetime(2026, 2, 1))["baseline"]
    # per unit (acted, dismissed, decided): #0 (2, 1, 3), #2 (0, 0, 1)
    assert baseline.units == 2
    assert (baseline.sum_decided_sq, baseline.sum_acted_sq, baseline.sum_acted_decided) == (9 + 1, 4, 6)
    assert (baseline.sum_dismissed_sq, baseline.sum_dismissed_decided) == (1, 3)
    assert baseline.to_dict()["pending"] == 8 - 4
