"""Store migration 3: diagnostics name their response's slice (the slices table) instead of copying it.

A store written before the migration upgrades to exactly the tables this promptops writes for the same rows,
its rate view shows the same rows, and Parquet exports from before the change (or a directory mixing both)
give the same rates.
"""

from __future__ import annotations

import shutil
from contextlib import closing
from pathlib import Path
from typing import Any

import duckdb
import pytest

from promptops.store import RatesQuery, Store, export_parquet, open_parquet, rates
from promptops.store.ddl import LATEST_VERSION, TABLE_COLUMNS
from tests.store.old_stores import WIDE_DIAGNOSTIC_COLUMNS, built, current_store, old_store, sample_batches

QUERIES = [
    RatesQuery("review-result"),
    RatesQuery("review-result", by=("arm", "prompt_version"), rollout_id="review-v7"),
    RatesQuery("review-result", by=("day", "schema_version")),
]


def _rows(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(duckdb.connect(str(path), read_only=True)) as con:
        return con.execute(f"SELECT * FROM ({sql}) ORDER BY ALL").fetchall()


@pytest.mark.parametrize("version", [1, 2])
def test_an_old_store_upgrades_to_what_this_promptops_writes(tmp_path: Path, version: int) -> None:
    old, new = tmp_path / "old.duckdb", tmp_path / "new.duckdb"
    old_store(old, version, sample_batches())
    current_store(new, sample_batches())
    wide = _rows(old, f"SELECT {WIDE_DIAGNOSTIC_COLUMNS} FROM diagnostics")
    assert len(wide) >= 6

    with Store.open(old) as store:  # migrates
        assert [row[0] for row in store.connection.execute("DESCRIBE diagnostics").fetchall()] == [
            name for name, _ in TABLE_COLUMNS["diagnostics"]
        ]
        migrated_rates = [rates(store.connection, q).to_dict() for q in QUERIES]
    assert _rows(old, "SELECT max(version) FROM schema_version") == [(LATEST_VERSION,)]
    # The same keys and slices as the write path computes, and the rate view shows the rows unchanged.
    for sql in ("FROM diagnostics", "FROM slices", "FROM responses"):
        assert _rows(old, sql) == _rows(new, sql), sql
    assert _rows(old, f"SELECT {WIDE_DIAGNOSTIC_COLUMNS} FROM diagnostic_facts") == wide
    # One slice per distinct (contract, rollout_id, arm, model, versions, floor, pin) of the old rows.
    slices = [row[1:] for row in _rows(old, "FROM slices")]
    assert len(slices) == len(set(slices)) and set(slices) == {(w[8], *w[10:17]) for w in wide}
    with Store.open(new, read_only=True) as store:
        assert [rates(store.connection, q).to_dict() for q in QUERIES] == migrated_rates

    # The upgraded store takes new batches; a slice it already has is not added again.
    with Store.open(old) as store:
        before = store.count("slices")
        for batch in built(sample_batches(), prefix="later-"):
            store.write(batch)
        assert store.count("slices") == before
        orphans = "SELECT count(*) FROM diagnostics ANTI JOIN slices USING (slice_key)"
        assert store.connection.execute(orphans).fetchall() == [(0,)]


def _to_legacy_export(lake: Path) -> None:
    """Rewrite an export's diagnostics as promptops wrote them before migration 3 (each row with its slice's
    columns, no slices files)."""
    con = duckdb.connect()
    source = f"'{lake.as_posix()}/diagnostics/*/*/*.parquet'"
    slices = f"'{lake.as_posix()}/slices/*/*.parquet'"
    con.execute(
        f"CREATE TABLE wide AS SELECT d.* EXCLUDE (slice_key), s.* EXCLUDE (slice_key, contract) "
        f"FROM read_parquet({source}, hive_partitioning = true) d "
        f"JOIN read_parquet({slices}, hive_partitioning = true) s USING (slice_key)"
    )
    shutil.rmtree(lake / "diagnostics")
    shutil.rmtree(lake / "slices")
    con.execute(f"COPY wide TO '{(lake / 'diagnostics').as_posix()}' (FORMAT parquet, PARTITION_BY (contract, day))")
    con.close()


def test_parquet_exports_from_before_the_slices_table_give_the_same_rates(tmp_path: Path) -> None:
    store_path = tmp_path / "s.duckdb"
    current_store(store_path, sample_batches())
    with Store.open(store_path, read_only=True) as store:
        expected = [rates(store.connection, q).to_dict() for q in QUERIES]
        export_parquet(store, tmp_path / "lake", display="lake")
    _to_legacy_export(tmp_path / "lake")
    assert not (tmp_path / "lake" / "slices").exists()
    with closing(open_parquet(tmp_path / "lake", display="lake")) as con:
        assert [rates(con, q).to_dict() for q in QUERIES] == expected

    # A directory holding both kinds (one service upgraded, one not) reads as both stores together.
    other = tmp_path / "other.duckdb"
    current_store(other, sample_batches(), prefix="other-")
    with Store.open(other, read_only=True) as store:
        export_parquet(store, tmp_path / "lake", display="lake")
    both = tmp_path / "both.duckdb"
    current_store(both, sample_batches())
    current_store(both, sample_batches(), prefix="other-")
    with Store.open(both, read_only=True) as store:
        expected = [rates(store.connection, q).to_dict() for q in QUERIES]
        diagnostics, slices = store.count("diagnostics"), store.count("slices")
    with closing(open_parquet(tmp_path / "lake", display="lake")) as con:
        assert [rates(con, q).to_dict() for q in QUERIES] == expected
        assert con.execute("SELECT count(*) FROM diagnostic_facts").fetchall() == [(diagnostics,)]
        assert con.execute("SELECT count(*) FROM slices").fetchall() == [(slices,)]
