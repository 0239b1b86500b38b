"""Migrations and views on a real DuckDB file, and the Recorder services use."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest

from promptops import ChangedFiles, Parser
from promptops.store import Recorder, Store, StoreError
from promptops.store.ddl import LATEST_VERSION, MIGRATIONS, TABLE_COLUMNS, VIEWS_STAMP, md5_lower
from tests.helpers import CHANGED, finding, response, text


def test_md5_lower_is_md5_number_lower_which_stored_hashes_used() -> None:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT printf('resp-%09d', range) AS s FROM range(100000) "
        "UNION ALL SELECT md5(range::VARCHAR) || ' é☃' || repeat('x', range) FROM range(300) "
        "UNION ALL SELECT '' UNION ALL SELECT NULL"
    )
    differ = f"SELECT count(*) FROM t WHERE {md5_lower('s')} IS DISTINCT FROM md5_number_lower(s)"
    assert con.execute(differ).fetchall() == [(0,)]


def test_migrations_apply_once_and_record_their_version(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    for _ in range(3):
        Store.open(path).close()
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT version, name FROM schema_version").fetchall() == [
        (m.version, m.name) for m in MIGRATIONS
    ]
    assert con.execute("SELECT value FROM store_meta WHERE key = 'views'").fetchall() == [(VIEWS_STAMP,)]
    assert len(con.execute("SELECT value FROM store_meta WHERE key = 'store_id'").fetchall()) == 1
    for table, columns in TABLE_COLUMNS.items():
        described = con.execute(f"DESCRIBE {table}").fetchall()
        assert [(row[0], row[1]) for row in described] == list(columns)
    con.close()


def test_a_store_from_a_newer_promptops_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    con.execute("INSERT INTO schema_version VALUES (?, 'from the future', now()::TIMESTAMP)", [LATEST_VERSION + 1])
    con.close()
    with pytest.raises(StoreError, match=rf"store schema version {LATEST_VERSION + 1} is newer"):
        Store.open(path, display="s.duckdb")


def test_stale_views_are_recreated_even_by_a_read_only_open(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    con.execute("CREATE OR REPLACE VIEW response_indicators AS SELECT 1 AS stale")
    con.execute("UPDATE store_meta SET value = 'old' WHERE key = 'views'")
    con.close()
    with Store.open(path, read_only=True) as store:
        assert "any_drop" in [row[0] for row in store.connection.execute("DESCRIBE response_indicators").fetchall()]


def test_reading_a_missing_store_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"^nowhere.duckdb: no diagnostics store here \(run promptops ingest first\)$"):
        Store.open(tmp_path / "nowhere.duckdb", display="nowhere.duckdb", read_only=True)


def test_a_file_that_is_not_a_store_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "x.duckdb").write_text("hello, not a database\n" * 100)
    with pytest.raises(StoreError, match=r"^x.duckdb: not a diagnostics store \(not a DuckDB database\)$") as raised:
        Store.open(tmp_path / "x.duckdb", display="x.duckdb")
    assert "\n" not in str(raised.value)


def test_recorder_writes_batches_in_the_ingest_format_and_never_duplicates(tmp_path: Path, parser: Parser) -> None:
    changed = ChangedFiles(CHANGED)
    outcomes = [
        parser.parse(text(response()), changed),
        parser.parse(text(response([finding(1, severity="High"), finding(2, line="7")])), changed),
        parser.parse("not json", changed),
    ]
    start = datetime(2025, 5, 1, 12, tzinfo=timezone(timedelta(hours=2)))
    with Store.open(tmp_path / "s.duckdb") as store:
        with Recorder(store, batch_size=4) as recorder:
            for i in range(10):
                recorder.record(
                    outcomes[i % 3],
                    response_id=f"r{i}",
                    ts=start + timedelta(minutes=i),
                    contract="review-result",
                    policy=parser.policy,
                    rollout_id="review-v7",
                    arm="candidate",
                    unit="acme/api#1",
                    model="m",
                    latency_ms=12.5,
                    tokens=900,
                )
            recorder.record(outcomes[0], response_id="r3", ts=start, contract="review-result", policy=parser.policy)
            assert store.count("responses") == 8  # two full batches so far; the rest is buffered
        assert recorder.written == 10 and recorder.duplicates == 1
        assert store.connection.execute("SELECT count(*), sum(responses) FROM batches").fetchall() == [(3, 10)]
        rows = store.connection.execute(
            "SELECT response_id, ts, accepted, reason, findings_dropped, coercions, n_diagnostics, source "
            "FROM responses ORDER BY ts LIMIT 3"
        ).fetchall()
        assert rows == [
            ("r0", datetime(2025, 5, 1, 10, 0), True, None, 0, 0, 0, None),
            ("r1", datetime(2025, 5, 1, 10, 1), True, None, 1, 1, 2, None),
            ("r2", datetime(2025, 5, 1, 10, 2), False, "invalid_json", 0, 0, 1, None),
        ]
        diagnostics = store.connection.execute(
            "SELECT code, kind, field, arm, rollout_id FROM diagnostic_facts WHERE response_id = 'r1' ORDER BY seq"
        ).fetchall()
        assert diagnostics == [
            ("invalid_enum", "drop", "findings[].severity", "candidate", "review-v7"),
            ("converted_numeric_string", "coercion", "findings[].line", "candidate", "review-v7"),
        ]
        # A retried flush of ids already stored adds nothing.
        with Recorder(store) as again:
            again.record(outcomes[1], response_id="r1", ts=start, contract="review-result", policy=parser.policy)
        assert (again.written, again.duplicates, store.count("responses")) == (0, 1, 10)


def test_recorder_flushes_what_it_holds_when_the_block_fails(tmp_path: Path, parser: Parser) -> None:
    outcome = parser.parse(text(response()), ChangedFiles(CHANGED))
    with Store.open(tmp_path / "s.duckdb") as store:

        def serve() -> None:
            with Recorder(store) as recorder:
                recorder.record(outcome, response_id="r0", ts=datetime.now(UTC), contract="c", policy=parser.policy)
                raise RuntimeError("the service failed after recording")

        with pytest.raises(RuntimeError):
            serve()
        assert store.count("responses") == 1
