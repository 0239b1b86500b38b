"""A store written before findings and feedback existed (schema version 3) is upgraded in place."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from promptops.store import Store
from promptops.store.ddl import LATEST_VERSION, MIGRATIONS
from promptops.store.store import INSERT_RESPONSES, insert_diagnostics
from tests.conftest import Cli
from tests.feedback.events import STORE, event, write_lines, write_responses
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
