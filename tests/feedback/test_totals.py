"""The aggregates both ingests keep (feedback_units, finding_outcomes) equal what the events and findings
stored give, whatever the order of arrival, so the read query may use them when nothing is later than ``now``."""

from __future__ import annotations

import random
from datetime import datetime
from pathlib import Path

import duckdb

from promptops.store.feedback_query import _PER_UNIT, _QUERY, feedback_counts
from tests.conftest import Cli
from tests.feedback.events import STORE, event, write_lines, write_responses

# The per-unit rows the read query builds from every event and finding (its exact path, up to per_unit).
_EXACT_UNITS = _PER_UNIT + "SELECT * FROM per_unit ORDER BY ALL"
_KEPT_UNITS = "SELECT * FROM feedback_units ORDER BY ALL"
FAR = datetime(2030, 1, 1)


def _events(rng: random.Random, numbers: range, responses: int) -> list[dict[str, object]]:
    return [
        event(
            n,
            rng.choice(("F1", "F2", "F9")),  # F9: no such finding
            f"r{rng.randrange(responses)}",
            outcome=rng.choice(("fixed", "accepted", "dismissed", "ignored")),
            time=f"2026-01-0{rng.randrange(1, 4)}T00:00:00Z",  # few distinct times: many ties
        )
        for n in numbers
    ]


def test_kept_aggregates_equal_the_exact_answer_in_any_order_of_arrival(project: Path, cli: Cli) -> None:
    rng = random.Random(7)
    logs, feedback = project / "logs", project / "feedback"
    logs.mkdir(exist_ok=True)
    feedback.mkdir(exist_ok=True)
    write_responses(logs / "a.jsonl", 12)
    assert cli(project, "ingest", str(logs / "a.jsonl"), "--batch-size", "5")[0] == 0
    # Events for stored and not yet stored responses, in small batches, with repeats of earlier ones.
    first = _events(rng, range(300), 24)
    write_lines(feedback / "1.jsonl", first + first[:40])
    assert cli(project, "feedback", "ingest", str(feedback / "1.jsonl"), "--batch-size", "17")[0] == 0
    write_responses(logs / "b.jsonl", 12, start=12, ts="2026-01-02T00:00:00Z")
    assert cli(project, "ingest", str(logs / "b.jsonl"), "--batch-size", "5")[0] == 0
    write_lines(feedback / "2.jsonl", _events(rng, range(300, 500), 24))
    assert cli(project, "feedback", "ingest", str(feedback / "2.jsonl"), "--batch-size", "13")[0] == 0

    con = duckdb.connect(str(project / STORE), read_only=True)
    try:
        exact_units = con.execute(_EXACT_UNITS, {"now": FAR, "rollout": None, "contract": None}).fetchall()
        kept_units = con.execute(_KEPT_UNITS).fetchall()
        exact = con.execute(_QUERY, {"now": FAR, "rollout": "review-v7", "contract": None}).fetchall()
        kept = [tuple(vars(row).values()) for row in feedback_counts(con, FAR, rollout_id="review-v7")]
        outcomes = con.execute(
            "SELECT count(*), sum(rank) FROM finding_outcomes o JOIN findings f USING (key_hash)"
        ).fetchall()
    finally:
        con.close()
    assert len(exact_units) == 4 and sum(row[6] for row in exact_units) == 48  # 24 responses, 2 findings each
    assert kept_units == exact_units
    assert kept == exact
    assert outcomes[0][0] > 0
