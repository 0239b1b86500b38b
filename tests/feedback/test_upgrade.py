"""A store written before findings and feedback existed (schema version 3) is upgraded in place."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest

from promptops.store import Store
from promptops.store.ddl import LATEST_VERSION, MIGRATIONS
from promptops.store.feedback_query import _QUERY, feedback_counts
from promptops.store.feedback_units import ArmFeedback, arm_feedback
from promptops.store.store import INSERT_RESPONSES, insert_diagnostics
from tests.conftest import Cli
from tests.feedback.events import STORE, event, write_lines, write_responses
from tests.feedback.test_window import exact
from tests.store.old_stores import built, sample_batches


def _version_3_store(path: Path) -> None:
    """The tables of migrations 1-3, frozen as released, holding the sample batches as that release wrote them."""
    path.parent.mkdir(parents=True)
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE schema_version (version INTEGER NOT NULL, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    )
    for migration in MIGRATIONS[:3]:
        for statement in migration.statements:
            con.execute(statement)
        con.execute("INSERT INTO schema_version VALUES (?, ?, now()::TIMESTAMP)", [migration.version, migration.name])
    for batch_id, batch in enumerate(built(sample_batches()), start=1):
        con.register("_po_responses", batch.responses)
        con.execute(INSERT_RESPONSES, {"batch": batch_id})
        insert_diagnostics(con, batch.diagnostics, batch.slices, batch_id)
        con.execute(
            "INSERT INTO batches VALUES (?, TIMESTAMP '2025-05-01 12:05:00', 'recorder', ?, ?, 0, 0, 0)",
            [batch_id, batch.responses.num_rows, batch.diagnostics.num_rows],
        )
    con.close()


def test_a_version_3_store_is_upgraded_and_takes_feedback(project: Path, cli: Cli) -> None:
    path = project / STORE
    _version_3_store(path)
    before = duckdb.connect(str(path), read_only=True)
    responses = before.execute("SELECT * FROM responses ORDER BY response_id").fetchall()
    before.close()
    Store.open(path).close()
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT max(version) FROM schema_version").fetchall() == [(LATEST_VERSION,)]
    assert con.execute("SELECT * FROM responses ORDER BY response_id").fetchall() == responses
    assert con.execute("SELECT count(*), sum(findings), sum(feedback) FROM batches").fetchall() == [(2, 0, 0)]
    con.close()
    events = write_lines(project / "feedback" / "f.jsonl", [event(1, "F1", "r0"), event(2, "F1", "n0")])
    write_responses(project / "logs" / "a.jsonl", 1, start=0)  # r0 is stored already: skipped, findings unknown
    (project / "logs" / "a.jsonl").write_text(
        (project / "logs" / "a.jsonl").read_text().replace('"r0"', '"n0"'), encoding="utf-8"
    )
    assert cli(project, "ingest", str(project / "logs"))[0] == 0
    code, out, _ = cli(project, "feedback", "ingest", str(events), "--format", "json")
    report = json.loads(out)
    # r0 was stored before findings were kept: its feedback is stored and counted as unknown
    assert (code, report["inserted"], report["unknown"]) == (0, 2, 1)


# Stores at schema 4 as its versions left them: its first version kept no aggregates; a later one kept
# feedback_units with a group key; the last kept finding_outcomes and feedback_units but no per-response counts.
_EARLY_4 = {
    "without aggregates": (),
    "with a group key": (
        "CREATE TABLE finding_outcomes (key_hash UBIGINT NOT NULL, score BIGINT NOT NULL, rank TINYINT NOT NULL)",
        """CREATE TABLE feedback_units (group_key UBIGINT NOT NULL, contract VARCHAR, rollout_id VARCHAR,
           arm VARCHAR, prompt_version VARCHAR, severity VARCHAR, unit VARCHAR, findings BIGINT NOT NULL,
           fixed BIGINT NOT NULL, accepted BIGINT NOT NULL, dismissed BIGINT NOT NULL, ignored BIGINT NOT NULL)""",
        "INSERT INTO feedback_units VALUES (1, 'review-result', 'review-v7', 'baseline', '1.0.0', 'high', NULL, "
        "99, 99, 0, 0, 0)",
    ),
    "with finding_outcomes and feedback_units": MIGRATIONS[3].statements[2:4],
}


def _as_schema_4(path: Path, aggregates: tuple[str, ...]) -> None:
    """The store at ``path`` as schema 4 left it: events and findings, ``aggregates`` in place of the kept ones."""
    con = duckdb.connect(str(path))
    for table in ("response_feedback", "feedback_units", "finding_outcomes"):
        con.execute(f"DROP TABLE {table}")
    for statement in aggregates:
        con.execute(statement)
    con.execute("DELETE FROM schema_version WHERE version > 4")
    con.close()


def _pulls(arm: ArmFeedback) -> ArmFeedback:
    """The arm's sums over its pull requests, whatever is pending."""
    return replace(arm, pending=0)


Reads = tuple[dict[str, ArmFeedback], dict[str, ArmFeedback], list[tuple[Any, ...]], list[tuple[Any, ...]]]


def _both_reads(path: Path, now: datetime) -> Reads:
    """The gate's read and feedback_counts, each beside the answer computed from every event and finding."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        since = datetime(2026, 1, 1, 12)
        gate = arm_feedback(con, "review-result", "review-v7", since, now)
        counts = [tuple(vars(row).values()) for row in feedback_counts(con, now, rollout_id="review-v7")]
        exact_counts = con.execute(_QUERY, {"now": now, "rollout": "review-v7", "contract": None}).fetchall()
        return gate, exact(con, "review-v7", since, now), counts, exact_counts
    finally:
        con.close()


@pytest.mark.parametrize("variant", list(_EARLY_4))
def test_a_schema_4_store_is_upgraded_and_its_aggregates_rebuilt(project: Path, cli: Cli, variant: str) -> None:
    path = project / STORE
    # r0-r5 before the window, r6-r11 in it; odd: candidate; units org/repo#(i % 4)
    write_responses(project / "logs" / "a.jsonl", 6, ts="2026-01-01T10:00:00Z")
    write_responses(project / "logs" / "b.jsonl", 6, start=6, ts="2026-01-02T10:00:00Z")
    write_lines(
        project / "feedback" / "f.jsonl",
        [
            event(1, "F1", "r7", outcome="dismissed", time="2026-01-03T00:00:00Z"),
            event(2, "F1", "r7", outcome="fixed", time="2026-01-04T00:00:00Z"),
            event(3, "F2", "r8", outcome="accepted", time="2026-01-03T00:00:00Z"),
            event(4, "F1", "r1", outcome="dismissed", time="2026-01-03T00:00:00Z"),
            event(5, "F1", "r20", time="2026-01-03T00:00:00Z"),  # no such response yet
        ],
    )
    assert cli(project, "ingest", str(project / "logs"))[0] == 0
    assert cli(project, "feedback", "ingest", str(project / "feedback"))[0] == 0
    _as_schema_4(path, _EARLY_4[variant])

    Store.open(path, read_only=True).close()  # the gate's open migrates a store that is behind
    now, replay = datetime(2026, 2, 1), datetime(2026, 1, 3, 12)
    gate, want, counts, exact_counts = _both_reads(path, now)
    assert gate == want
    assert _pulls(gate["candidate"]) == ArmFeedback.of([(0, 0, 0), (1, 0, 1)], 0)  # #1: r9; #3: r7 (F1 fixed), r11
    assert _pulls(gate["baseline"]) == ArmFeedback.of([(1, 0, 1), (0, 0, 0)], 0)  # #0: r8 (F2 accepted); #2: r6, r10
    assert counts == exact_counts and [row[5:10] for row in counts] == [(12, 0, 1, 0, 0), (12, 1, 0, 1, 0)]
    gate, want, *_ = _both_reads(path, replay)  # r7's F1 was dismissed then
    assert gate == want and _pulls(gate["candidate"]) == ArmFeedback.of([(0, 0, 0), (0, 1, 1)], 0)
    # and both ingests keep them from here on
    write_responses(project / "logs" / "c.jsonl", 2, start=20, ts="2026-01-02T11:00:00Z")
    write_lines(project / "feedback" / "g.jsonl", [event(6, "F2", "r20", outcome="fixed")])
    assert cli(project, "ingest", str(project / "logs" / "c.jsonl"))[0] == 0
    assert cli(project, "feedback", "ingest", str(project / "feedback" / "g.jsonl"))[0] == 0
    gate, want, counts, exact_counts = _both_reads(path, now)
    assert gate == want and counts == exact_counts
    assert _pulls(gate["baseline"]) == ArmFeedback.of(
        [(3, 0, 3), (0, 0, 0)], 0
    )  # #0: r8's F2; r20's F1 (arrived first) and F2
