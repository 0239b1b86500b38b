"""The gate's feedback read (arm_feedback, from the counts ingest keeps per response) equals the effective outcomes
computed from every event and finding, for any window and any ``now``, whatever the order of arrival."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from promptops.store.feedback_totals import RANK
from promptops.store.feedback_units import ArmFeedback, arm_feedback
from tests.conftest import Cli
from tests.feedback.events import STORE, event, write_lines
from tests.helpers import finding, log_record, response, text

# The read-time computation the gate used before the kept counts: every finding's effective outcome from its
# events at or before now, for the findings of the window's responses.
EXACT = f"""
WITH scope AS (
    SELECT id_hash, arm, unit FROM responses
    WHERE contract = $contract AND rollout_id = $rollout AND ts <= $now AND ($since IS NULL OR ts >= $since)
),
effective AS (
    SELECT key_hash, arg_max({RANK}, epoch_us(time) * 4 + {RANK}) AS rank
    FROM feedback WHERE time <= $now GROUP BY key_hash
)
SELECT s.arm, s.unit,
       count(*) FILTER (WHERE e.rank >= 2) AS acted_on,
       count(*) FILTER (WHERE e.rank = 1) AS dismissed,
       count(e.rank) AS decided,
       count(*) - count(e.rank) AS pending
FROM findings f
JOIN scope s ON s.id_hash = f.id_hash
LEFT JOIN effective e ON e.key_hash = f.key_hash
WHERE s.arm IS NOT NULL
GROUP BY ALL
ORDER BY ALL
"""
START = datetime(2026, 1, 1)
SPAN = 5 * 86400  # seconds of responses; feedback runs two days longer
ROLLOUTS = ("review-v7", "review-v8", None)
ARMS = ("baseline", "candidate", None)
UNITS = ("o/r#1", "o/r#2", "o/r#3", "o/r#4", "o/r#5", None)
OUTCOMES = ("fixed", "accepted", "dismissed", "ignored")


def exact(con: duckdb.DuckDBPyConnection, rollout: str, since: datetime | None, now: datetime) -> dict[str, Any]:
    params = {"contract": "review-result", "rollout": rollout, "since": since, "now": now}
    found: dict[str, tuple[list[tuple[int, int, int]], list[int]]] = {}
    for arm, _, acted_on, dismissed, decided, pending in con.execute(EXACT, params).fetchall():
        prs, waiting = found.setdefault(str(arm), ([], [0]))
        prs.append((int(acted_on), int(dismissed), int(decided)))
        waiting[0] += int(pending)
    return {arm: ArmFeedback.of(prs, waiting[0]) for arm, (prs, waiting) in found.items()}


def _iso(moment: datetime) -> str:
    return moment.isoformat() + "Z"


def _responses(rng: random.Random, numbers: range) -> list[dict[str, Any]]:
    """Responses at any second of five days, with 0 to 3 findings (F1...), over rollouts, arms and units."""
    return [
        log_record(
            f"r{i}",
            ts=_iso(START + timedelta(seconds=rng.randrange(SPAN))),
            rollout_id=rng.choice(ROLLOUTS),
            arm=rng.choice(ARMS),
            unit=rng.choice(UNITS),
            raw=text(response([finding(j) for j in range(1, rng.randrange(4) + 1)])),
        )
        for i in numbers
    ]


def _events(rng: random.Random, numbers: range, responses: int) -> list[dict[str, Any]]:
    """Events on stored, later and never stored responses (and findings), at times with many ties, some after
    the last response; each finding gets several, so its outcome changes."""
    times = [START + timedelta(seconds=rng.randrange(SPAN + 2 * 86400)) for _ in range(25)]
    return [
        event(
            n,
            f"F{rng.randrange(1, 5)}",  # F4: never a finding
            f"r{rng.randrange(responses + 4)}",  # beyond: never stored
            outcome=rng.choice(OUTCOMES),
            time=_iso(rng.choice(times)),
        )
        for n in numbers
    ]


def _windows(rng: random.Random) -> list[tuple[datetime | None, datetime]]:
    """(since, now): open and bounded windows, cutting days anywhere, ``now`` before, among and after the events."""
    windows: list[tuple[datetime | None, datetime]] = [(None, datetime(2030, 1, 1))]
    for _ in range(6):
        low, high = sorted(START + timedelta(seconds=rng.randrange(-3600, SPAN + 3 * 86400)) for _ in range(2))
        windows += [(low, high), (None, high)]
    return windows


def _compare(path: Path, rng: random.Random) -> int:
    """Compares every rollout in random windows; the number of pull requests seen."""
    seen = 0
    con = duckdb.connect(str(path), read_only=True)
    try:
        for since, now in _windows(rng):
            for rollout in ("review-v7", "review-v8", "review-v9"):
                want = exact(con, rollout, since, now)
                assert arm_feedback(con, "review-result", rollout, since, now) == want, (rollout, since, now)
                seen += sum(arm.pull_requests for arm in want.values())
    finally:
        con.close()
    return seen


@pytest.mark.slow  # eighteen ingests and 234 windows compared
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_kept_counts_equal_the_exact_answer(project: Path, cli: Cli, seed: int) -> None:
    rng = random.Random(seed)
    logs, feedback = project / "logs", project / "feedback"
    events = _events(rng, range(400), 90)
    rng.shuffle(events)  # out of order: a finding's later event often arrives first
    steps: list[tuple[str, list[dict[str, Any]]]] = [
        ("responses", _responses(rng, range(30))),
        ("feedback", events[:150]),
        ("responses", _responses(rng, range(30, 60))),
        ("feedback", events[150:300] + events[100:140]),  # some stored already: skipped
        ("responses", _responses(rng, range(60, 90))),  # events arrived before some of these
        ("feedback", events[300:] + events[:20]),
    ]
    seen = 0
    for number, (kind, records) in enumerate(steps):
        path = write_lines((logs if kind == "responses" else feedback) / f"{number}.jsonl", records)
        command = ("ingest",) if kind == "responses" else ("feedback", "ingest")
        assert cli(project, *command, str(path), "--batch-size", str(rng.randrange(3, 40)))[0] == 0
        seen += _compare(project / STORE, rng)
    assert seen > 500  # the windows held pull requests to compare
