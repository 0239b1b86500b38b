"""``promptops feedback ingest`` through the real command line, against real DuckDB files."""

from __future__ import annotations

import gzip
import json
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from promptops import Parser
from promptops.store import Recorder, Store
from promptops.store.feedback_query import feedback_counts, unknown_feedback
from tests.conftest import Cli
from tests.feedback.events import STORE, event, write_lines, write_responses
from tests.helpers import CHANGED, finding, response, text


def _rows(project: Path, sql: str) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(project / STORE), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _events(project: Path) -> list[tuple[object, ...]]:
    return _rows(project, "SELECT * EXCLUDE (batch_id) FROM feedback ORDER BY source, event_id")


def test_ingest_stores_the_findings_of_each_response_with_their_ids(project: Path, cli: Cli) -> None:
    write_responses(project / "logs" / "a.jsonl", 3)
    assert cli(project, "ingest", str(project / "logs"))[0] == 0
    assert _rows(
        project, "SELECT response_id, finding_index, finding_id, severity, path, line FROM findings ORDER BY ALL"
    ) == [(f"r{i}", n, f"F{n + 1}", "high", "src/api/users.py", 41 + n) for i in range(3) for n in range(2)]


def test_feedback_ingest_twice_adds_nothing(project: Path, cli: Cli) -> None:
    write_responses(project / "logs" / "a.jsonl", 4)
    assert cli(project, "ingest", str(project / "logs"))[0] == 0
    events = write_lines(
        project / "feedback" / "f.jsonl",
        [
            event(1),
            event(2, "F2", "r1", outcome="fixed"),
            event(3, "F1", "r2", outcome="dismissed", actor=None, actor_kind="none"),
        ],
    )
    code, out, err = cli(project, "feedback", "ingest", str(events))
    assert (code, err) == (0, "")
    assert out == (
        ".promptops/diagnostics.duckdb: 3 events stored (0 for findings not in the store yet), 0 already stored, "
        "0 bad lines; 3 lines read from 1 file\n"
    )
    first = _events(project)
    assert len(first) == 3
    code, out, _ = cli(project, "feedback", "ingest", str(events), "--format", "json")
    report = json.loads(out)
    assert (code, report["inserted"], report["duplicates"], report["exit_code"]) == (0, 0, 3, 0)
    assert _events(project) == first
    assert _rows(project, "SELECT count(*) FROM batches WHERE writer = 'feedback'") == [(1,)]


def test_bad_lines_are_reported_with_file_and_line_and_the_good_ones_kept(project: Path, cli: Cli) -> None:
    write_lines(
        project / "feedback" / "f.jsonl",
        [
            event(1),
            "not json",
            "",
            event(2, outcome="liked"),
            event(3, time="2026-01-02T00:00:00"),
            {k: v for k, v in event(4).items() if k != "source"},
            event(5, evidence={"url": "x"}),
            event(6, extra=1),
            event(7, event_id="x" * 201),
            event(8, feedback_version="2.0"),
            event(9),
        ],
    )
    code, out, err = cli(project, "feedback", "ingest", str(project / "feedback"))
    assert code == 2
    assert err.splitlines() == [
        "promptops: feedback/f.jsonl:2: not valid JSON (JSON is malformed: invalid character (byte 4))",
        "promptops: feedback/f.jsonl:4: field 'outcome': invalid enum value 'liked'",
        "promptops: feedback/f.jsonl:5: field 'time': needs an offset (Z or +hh:mm)",
        "promptops: feedback/f.jsonl:6: missing required field 'source'",
        "promptops: feedback/f.jsonl:7: field 'evidence.kind': required, a non-empty string",
        "promptops: feedback/f.jsonl:8: unknown field 'extra' (feedback_version 1.0 has no such field)",
        "promptops: feedback/f.jsonl:9: field 'event_id': expected str of length <= 200",
        "promptops: feedback/f.jsonl:10: field 'feedback_version': invalid enum value '2.0'",
    ]
    assert "2 events stored (2 for findings not in the store yet)" in out
    assert "8 bad lines; 10 lines read" in out
    assert [row[0] for row in _events(project)] == ["e1", "e9"]


def test_a_missing_store_directory_is_created_and_a_gzip_file_is_read(project: Path, cli: Cli) -> None:
    with gzip.open(project / "feedback" / "f.jsonl.gz", "wt") as handle:
        handle.write(json.dumps(event(1)) + "\n")
    assert cli(project, "feedback", "ingest", str(project / "feedback"))[0] == 0
    assert len(_events(project)) == 1


def test_events_for_unknown_findings_are_counted_stored_and_join_once_the_response_arrives(
    project: Path, cli: Cli
) -> None:
    events = write_lines(project / "feedback" / "f.jsonl", [event(1, "F1", "r5"), event(2, "F9", "r0")])
    code, out, _ = cli(project, "feedback", "ingest", str(events), "--format", "json")
    report = json.loads(out)
    assert (code, report["inserted"], report["unknown"], report["files"][0]["unknown"]) == (0, 2, 2, 2)
    now = datetime(2026, 2, 1)
    con = duckdb.connect(str(project / STORE), read_only=True)
    assert feedback_counts(con, now) == []
    assert unknown_feedback(con, now).to_dict() == {"findings": 2, "events": 2}
    con.close()
    write_responses(project / "logs" / "a.jsonl", 6)  # r5 holds F1; no response has F9
    assert cli(project, "ingest", str(project / "logs"))[0] == 0
    con = duckdb.connect(str(project / STORE), read_only=True)
    counts = {row.arm: row for row in feedback_counts(con, now)}
    assert (counts["candidate"].accepted, counts["candidate"].findings) == (1, 6)
    assert unknown_feedback(con, now).to_dict() == {"findings": 1, "events": 1}
    con.close()


def test_a_locked_store_fails_with_one_line_and_exit_3(project: Path, cli: Cli) -> None:
    events = write_lines(project / "feedback" / "f.jsonl", [event(1)])
    (project / ".promptops").mkdir()
    (project / STORE).write_bytes(b"SQLite format 3\x00" + b"\x00" * 100)
    code, out, err = cli(project, "feedback", "ingest", str(events))
    assert (code, out) == (3, "")
    assert err == "promptops: error: .promptops/diagnostics.duckdb: not a diagnostics store (an SQLite database)\n"


def test_the_recorder_stores_finding_ids_when_given_the_contract(project: Path, parser: Parser) -> None:
    outcome = parser.parse(text(response([finding(1), finding(2, id="X-7")])), CHANGED)
    with Store.open(project / STORE) as store, Recorder(store) as recorder:
        recorder.record(
            outcome, response_id="a", ts=datetime(2026, 1, 1), contract="review-result", policy=parser.policy
        )
        recorder.record(
            outcome,
            response_id="b",
            ts=datetime(2026, 1, 1),
            contract="review-result",
            policy=parser.policy,
            spec=parser.contract,
        )
    assert _rows(project, "SELECT response_id, finding_id FROM findings ORDER BY ALL") == [("b", "F1"), ("b", "X-7")]


@pytest.mark.slow  # starts parser worker processes
def test_parallel_ingest_stores_the_same_findings(project: Path, cli: Cli, tmp_path: Path) -> None:
    write_responses(project / "logs" / "a.jsonl", 40)
    assert cli(project, "ingest", str(project / "logs"), "--workers", "2", "--batch-size", "7")[0] == 0
    parallel = _rows(project, "SELECT * EXCLUDE (batch_id) FROM findings ORDER BY ALL")
    (project / STORE).unlink()
    assert cli(project, "ingest", str(project / "logs"), "--workers", "0")[0] == 0
    assert parallel == _rows(project, "SELECT * EXCLUDE (batch_id) FROM findings ORDER BY ALL")
    assert len(parallel) == 80
