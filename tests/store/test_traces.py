"""The re-ask loop's trace steps in a real DuckDB store: the sink, the migration that added them, Parquet."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from promptops import load_contract
from promptops.cli import run
from promptops.reask import Asker, MemorySink, ModelReply, TraceStep
from promptops.render.renderer import Renderer
from promptops.store import ParserCache, RatesQuery, Recorder, Store, export_parquet, ingest_logs, open_parquet, rates
from promptops.store.ddl import MIGRATIONS, TABLE_COLUMNS
from tests.helpers import CHANGED, REPO_ROOT, Script
from tests.store.conftest import relative_to
from tests.store.old_stores import WIDE_DIAGNOSTIC_COLUMNS, old_store, sample_batches
from tests.store.runs import INVALID, drive, review_asker, ticking, valid

TRACE_COLUMNS = ", ".join(name for name, _ in TABLE_COLUMNS["traces"])
STEP_COLUMNS = (
    "run_id, attempt, agent, started_at, finished_at, tokens_used, status, reason, contract, prompt_version, "
    "schema_version"
)


def _at(seconds: float) -> datetime:
    return datetime(2025, 1, 2, 3, 4, 5) + timedelta(seconds=seconds)


def test_the_reask_loop_records_its_trace_rows_in_a_real_duckdb_store(tmp_path: Path) -> None:
    path = tmp_path / "diagnostics.duckdb"
    model = Script(ModelReply(INVALID, tokens_used=120), ModelReply(valid(), tokens_used=340))
    with Store.open(path) as store, Recorder(store) as recorder:
        asker = Asker(
            Renderer(REPO_ROOT),
            load_contract(REPO_ROOT, "review-result"),
            sink=recorder,  # the store is the loop's sink
            agent="Sec",
            clock=ticking(datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)),
        )
        recovered = asker.ask(model, changed_files=CHANGED, run_id="run-1")
        first_time = asker.ask(Script(valid()), changed_files=CHANGED, run_id="run-2")
    assert recovered.recovered and recovered.attempts == 2 and len(model.calls) == 2
    assert first_time.accepted and first_time.attempts == 1

    with Store.open(path, read_only=True) as store:  # reopened: the rows are on disk
        con = store.connection
        rows = con.execute(f"SELECT {STEP_COLUMNS} FROM traces ORDER BY run_id, attempt").fetchall()
        assert rows == [
            ("run-1", 1, "Sec", _at(0), _at(0.25), 120, "failed", "invalid_json", "review-result", "1.0.0", "1.0"),
            ("run-1", 2, "Sec", _at(0.5), _at(0.75), 340, "ok", None, "review-result", "1.0.0", "1.0"),
            ("run-2", 1, "Sec", _at(1), _at(1.25), None, "ok", None, "review-result", "1.0.0", "1.0"),
        ]
        # Exactly the steps the loop produced, timestamps included (ISO 8601 UTC text -> naive UTC TIMESTAMP).
        steps = [*recovered.steps, *first_time.steps]
        assert [(r[0], r[1], r[3].isoformat(timespec="milliseconds") + "Z", r[6]) for r in rows] == [
            (s.run_id, s.attempt, s.started_at, s.status) for s in steps
        ]
        assert con.execute("SELECT count(*) FROM traces WHERE run_hash = md5_number_lower(run_id)").fetchall() == [(3,)]
        # One transaction for all of it: the recorder flushed once, when its block ended.
        assert con.execute(
            "SELECT batch_id, writer, responses, diagnostics, duplicates, traces, trace_duplicates FROM batches"
        ).fetchall() == [(1, "recorder", 0, 0, 0, 3, 0)]
        assert con.execute("SELECT DISTINCT batch_id FROM traces").fetchall() == [(1,)]
        assert con.execute(
            "SELECT run_id, attempts, tokens_used, retried, recovered, succeeded, ts FROM run_indicators "
            "ORDER BY run_id"
        ).fetchall() == [("run-1", 2, 460, True, True, True, _at(0)), ("run-2", 1, None, False, False, True, _at(1))]


def _one_run() -> tuple[TraceStep, ...]:
    memory = MemorySink()
    review_asker(memory, "1.0.0", ticking()).ask(Script(INVALID, valid()), changed_files=CHANGED, run_id="run-a")
    (steps,) = memory.traces
    assert len(steps) == 2
    return steps


def test_steps_already_stored_or_repeated_are_skipped_and_counted(tmp_path: Path) -> None:
    steps = _one_run()
    with Store.open(tmp_path / "s.duckdb") as store:
        with Recorder(store, batch_size=1) as first:  # each run is written as soon as it is handed over
            first.record_trace(steps)
            assert store.count("traces") == 2
            first.record_trace(steps)
        assert (first.traces_written, first.trace_duplicates) == (2, 2)
        third = replace(steps[1], attempt=3, started_at="2025-05-01T00:00:02+02:00")
        with Recorder(store) as again:
            again.record_trace(steps)
            again.record_trace([*steps, third])  # repeated in the buffer, and stored; only attempt 3 is new
        assert (again.traces_written, again.trace_duplicates) == (1, 4)
        con = store.connection
        assert con.execute("SELECT attempt, started_at FROM traces ORDER BY attempt").fetchall()[2] == (
            3,
            datetime(2025, 4, 30, 22, 0, 2),  # an offset is converted to UTC
        )
        # Batches that added nothing are not committed.
        assert con.execute("SELECT traces, trace_duplicates FROM batches ORDER BY batch_id").fetchall() == [
            (2, 0),
            (1, 4),
        ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"started_at": "yesterday"}, "started_at 'yesterday' is not an ISO 8601 time"),
        ({"status": "maybe"}, "status must be one of ok, failed, not 'maybe'"),
        ({"tokens_used": -1}, "tokens_used must be an integer >= 0 or None, not -1"),
        ({"prompt_version": ""}, "prompt_version must be a non-empty string, not ''"),
    ],
)
def test_a_malformed_step_fails_its_own_call_and_keeps_what_was_recorded(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    steps = _one_run()
    with Store.open(tmp_path / "s.duckdb") as store:
        with Recorder(store) as recorder:
            recorder.record_trace(steps)
            other = [replace(step, run_id="run-b") for step in steps]
            other[1] = replace(other[1], **change)
            with pytest.raises(ValueError, match=rf"^trace step 2 of run 'run-b': {message}$") as raised:
                recorder.record_trace(other)
            assert "\n" not in str(raised.value)
        assert store.connection.execute("SELECT DISTINCT run_id FROM traces").fetchall() == [("run-a",)]


def _dump(path: Path, *tables: str) -> dict[str, list[tuple[Any, ...]]]:
    with closing(duckdb.connect(str(path), read_only=True)) as con:
        return {table: con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall() for table in tables}


def test_a_store_from_before_traces_upgrades_in_place(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = project / "old.duckdb"
    old_store(path, 1, sample_batches()[:1])
    before = _dump(path, "responses", "batches", "store_meta")
    before_diagnostics = _dump(path, f"(SELECT {WIDE_DIAGNOSTIC_COLUMNS} FROM diagnostics)")
    assert "traces" not in str(_dump(path, "duckdb_tables()"))

    # A read-only command (rates) finds the store stale and upgrades it first.
    code = run(
        ["--root", str(project), "rates", "--contract", "review-result", "--store", str(path), "--format", "json"]
    )
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    (group,) = json.loads(out)["groups"]
    assert (group["responses"], group["runs"], group["per_run"]["retried"]) == (
        3,
        0,
        {"count": 0, "total": 0, "rate": None},
    )

    after = _dump(path, "responses", "batches", "store_meta", "schema_version")
    assert after["responses"] == before["responses"]
    # Later migrations reshape diagnostics (3: slices); the rate view still shows the very same rows.
    assert list(_dump(path, f"(SELECT {WIDE_DIAGNOSTIC_COLUMNS} FROM diagnostic_facts)").values()) == list(
        before_diagnostics.values()
    )
    # no trace steps, findings or feedback in old batches
    assert after["batches"] == [(*row, 0, 0, 0, 0) for row in before["batches"]]
    assert [row[:2] for row in after["schema_version"]] == [(m.version, m.name) for m in MIGRATIONS]
    store_ids = [row for row in after["store_meta"] if row[0] == "store_id"]
    assert store_ids == [row for row in before["store_meta"] if row[0] == "store_id"]
    with closing(duckdb.connect(str(path), read_only=True)) as con:
        described = con.execute("DESCRIBE traces").fetchall()
    assert [(row[0], row[1]) for row in described] == list(TABLE_COLUMNS["traces"])

    # The upgraded store takes traces like a new one, and a second open migrates nothing.
    with Store.open(path) as store, Recorder(store) as recorder:
        memory = drive(recorder, 6)
    assert _dump(path, "schema_version")["schema_version"] == after["schema_version"]
    assert len(_dump(path, "traces")["traces"]) == len(memory.steps) > 6


def test_traces_round_trip_through_parquet_and_rates_stay_identical(
    project: Path, parsers: ParserCache, write_log: Callable[..., Path]
) -> None:
    log = write_log(project / "logs" / "a.jsonl", 300, days=3)
    lake = project / "lake"
    queries = [
        RatesQuery("review-result"),
        RatesQuery("review-result", by=("prompt_version", "schema_version")),
        RatesQuery("review-result", by=("day",)),
        RatesQuery("review-result", by=("arm", "prompt_version")),
        RatesQuery("review-result", by=("arm",), rollout_id="review-v7"),
    ]
    with Store.open(project / "s.duckdb") as store:
        ingest_logs([log], store, parsers, relative=relative_to(project))
        with Recorder(store) as recorder:
            memory = drive(recorder, 120)
        export_parquet(store, lake, display="lake")
        report = export_parquet(store, lake, display="lake")  # again: replaces its own files
        assert report.traces == store.count("traces") == len(memory.steps)
        assert report.responses == 300
        stored = store.connection.execute(f"SELECT {TRACE_COLUMNS} FROM traces ORDER BY run_id, attempt").fetchall()
        from_store = [rates(store.connection, q).to_dict() for q in queries]

    days = sorted(p.name for p in (lake / "traces" / "contract=review-result").iterdir())
    assert days == sorted({f"day={step.started_at[:10]}" for step in memory.steps}) and len(days) > 3
    with closing(open_parquet(lake, display="lake")) as con:
        assert con.execute(f"SELECT {TRACE_COLUMNS} FROM traces ORDER BY run_id, attempt").fetchall() == stored
        assert [rates(con, q).to_dict() for q in queries] == from_store
    assert sum(g["runs"] for g in from_store[0]["groups"]) == len(memory.traces)

    shutil.rmtree(lake / "traces")  # an export written before traces existed: no runs, responses unchanged
    with closing(open_parquet(lake, display="lake")) as con:
        whole = rates(con, RatesQuery("review-result")).to_dict()["groups"]
    assert [(g["responses"], g["runs"]) for g in whole] == [(300, 0)]
    assert whole[0]["per_response"] == from_store[0]["groups"][0]["per_response"]


def test_export_and_rates_commands_carry_the_traces(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Store.open(project / ".promptops" / "diagnostics.duckdb") as store, Recorder(store) as recorder:
        memory = drive(recorder, 40)
    runs_by_version: dict[str, int] = {}
    for steps in memory.traces:
        runs_by_version[steps[0].prompt_version] = runs_by_version.get(steps[0].prompt_version, 0) + 1

    root = ["--root", str(project)]
    assert run([*root, "export", str(project / "lake"), "--report-format", "json"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert (exported["responses"], exported["traces"]) == (0, len(memory.steps))
    assert run([*root, "export", str(project / "lake")]) == 0
    assert f"0 responses, 0 diagnostics (0 slices) and {len(memory.steps)} trace steps in " in capsys.readouterr().out

    by = ["rates", "--contract", "review-result", "--by", "prompt_version"]
    assert run([*root, *by, "--format", "json"]) == 0
    from_store = json.loads(capsys.readouterr().out)
    assert [(g["key"]["prompt_version"], g["responses"], g["runs"]) for g in from_store["groups"]] == [
        (version, 0, runs_by_version[version]) for version in sorted(runs_by_version)
    ]
    assert all(set(g["per_run"]) == {"retried", "recovered"} for g in from_store["groups"])
    assert run([*root, *by, "--format", "json", "--store", str(project / "lake")]) == 0
    from_lake = json.loads(capsys.readouterr().out)
    assert from_lake.pop("store") == "lake" and from_store.pop("store") == ".promptops/diagnostics.duckdb"
    assert from_lake == from_store

    assert run([*root, *by]) == 0
    out = capsys.readouterr().out
    first = from_store["groups"][0]
    retried = first["per_run"]["retried"]
    assert f"prompt_version=1.0.0: 0 responses, 0 accepted, {first['runs']} re-ask runs\n" in out
    assert f"  per re-ask run ({first['attempts']} attempts)\n" in out
    assert f"    retried                 {retried['rate']:>9.2%}  {retried['count']:>12,} / {first['runs']}\n" in out
    assert "    recovered after retry   " in out and "per response" not in out
