"""Parquet export for scale, and the same views over an export directory.

Layout (hive partitions, so engines that read data lakes prune by contract and day)::

    DIR/responses/contract=<name>/day=<YYYY-MM-DD>/<store_id>_<i>.parquet
    DIR/diagnostics/contract=<name>/day=<YYYY-MM-DD>/<store_id>_<i>.parquet
    DIR/traces/contract=<name>/day=<YYYY-MM-DD>/<store_id>_<i>.parquet      (day of started_at)
    DIR/slices/contract=<name>/<store_id>_<i>.parquet

Files carry the exporting store's id, so many stores (one per service) can export into one directory, and a
store exporting again replaces its own files and nobody else's. ``open_parquet`` builds ``responses``,
``diagnostics``, ``slices`` and ``traces`` views over the files with exactly the tables' columns (an export
without a table's files, such as one written before traces existed, reads as that table empty), then the rate
views on top: every rates query runs unchanged. Slice keys depend only on the slice's values, so the slices of
many stores merge; diagnostics exported before store migration 3 (with their slice's columns in each row and
no slices files) read as the same keys and slices.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import duckdb

from promptops.store import ddl, lake_files
from promptops.store.errors import StoreError, describe
from promptops.store.store import Store

TABLES = ("responses", "diagnostics", "slices", "traces")
# Hive partition columns of each table's files; "day" is the date of ddl.TIME_COLUMNS[table].
_PARTITIONS = lake_files.PARTITIONS
# What each table exports: diagnostics take their contract (a partition) from their slice.
_EXPORTED: dict[str, str] = {
    "responses": "SELECT *, CAST(ts AS DATE) AS day FROM responses",
    "diagnostics": (
        "SELECT d.*, s.contract, CAST(d.ts AS DATE) AS day FROM diagnostics d JOIN slices s USING (slice_key)"
    ),
    "slices": "SELECT * FROM slices",
    "traces": "SELECT *, CAST(started_at AS DATE) AS day FROM traces",
}


@dataclass(frozen=True)
class ExportReport:
    directory: str
    files: int
    responses: int
    diagnostics: int
    slices: int  # combinations of the columns rates slice diagnostics by (the store's slices table)
    traces: int  # trace steps of the re-ask loop

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def export_parquet(store: Store, directory: Path, *, display: str, contract: str | None = None) -> ExportReport:
    """Write the store (or one contract of it) to ``directory``, replacing this store's earlier export there.

    Not atomic for readers of the directory: a query running during an export may see some partitions
    missing. The store itself is only read.
    """
    store_id = store.store_id()
    con = store.connection
    counts: dict[str, int] = {}
    files = 0
    for table in TABLES:
        target = directory / table
        depth = "*/" * len(_PARTITIONS[table])
        try:
            target.mkdir(parents=True, exist_ok=True)
            pattern = (
                f"contract={contract}/{depth[2:]}{store_id}_*.parquet" if contract else f"{depth}{store_id}_*.parquet"
            )
            for old in target.glob(pattern):
                old.unlink()
        except OSError as problem:
            raise StoreError(f"{display}/{table}: cannot write: {problem.strerror or problem}") from None
        selected = (
            f"SELECT * FROM ({_EXPORTED[table]}) WHERE contract = {_literal(contract)}"
            if contract
            else _EXPORTED[table]
        )
        try:
            con.execute(
                f"COPY ({selected}) TO {_literal(target.as_posix())} "
                f"(FORMAT parquet, PARTITION_BY ({', '.join(_PARTITIONS[table])}), "
                f"FILENAME_PATTERN '{store_id}_{{i}}', OVERWRITE_OR_IGNORE)"
            )
        except duckdb.Error as problem:
            raise StoreError(f"{display}/{table}: export failed: {describe(problem)}") from None
        counts[table] = int(ddl.scalar(con, f"SELECT count(*) FROM ({selected})"))
        files += sum(1 for _ in target.glob(pattern))
    return ExportReport(display, files, counts["responses"], counts["diagnostics"], counts["slices"], counts["traces"])


def open_parquet(directory: Path, *, display: str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB whose ``responses``/``diagnostics``/``traces`` and rate views read the export in
    ``directory``."""
    if not (directory / "responses").is_dir():
        raise StoreError(f"{display}: not a promptops Parquet export (no responses/ directory)")
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    fs, base = lake_files.filesystem(directory.as_posix())
    state = lake_files.read_state(fs, base) if lake_files.is_lake(fs, base) else None
    try:
        legacy = False
        for table, columns in ddl.TABLE_COLUMNS.items():
            files = _files(directory, table) if state is None else _lake_files(fs, base, table, state)
            if table == "diagnostics" and files is not None:
                present = _columns(con, files)
                # Rows from before store migration 3 carry their slice's columns instead of its key.
                legacy = "slice_key" not in present or "rollout_id" in present
                if legacy:
                    _legacy_diagnostics(con, files, present, _files(directory, "slices"))
                    continue
            if table == "slices" and legacy:
                continue  # made by _legacy_diagnostics
            names = ", ".join(name for name, _ in columns)
            if files is not None:
                distinct = "DISTINCT " if table == "slices" else ""  # several stores export the same slices
                con.execute(f"CREATE VIEW {table} AS SELECT {distinct}{names} FROM {files}")
            else:  # nothing exported yet: an empty table with the right columns
                typed = ", ".join(f"{name} {kind}" for name, kind in columns)
                con.execute(f"CREATE TABLE {table} ({typed})")
        ddl.create_views(con)
    except duckdb.Error as problem:
        con.close()
        raise StoreError(f"{display}: cannot read the export: {describe(problem)}") from None
    return con


def _files(directory: Path, table: str) -> str | None:
    """A read_parquet() call over the table's exported files, or None when there are none."""
    depth = "*/" * len(_PARTITIONS[table])
    if not any((directory / table).glob(f"{depth}*.parquet")):
        return None
    source = _literal(f"{(directory / table).as_posix()}/{depth}*.parquet")
    kinds = ", ".join(f"'{name}': {'DATE' if name == 'day' else 'VARCHAR'}" for name in _PARTITIONS[table])
    return f"read_parquet({source}, hive_partitioning = true, hive_types = {{{kinds}}}, union_by_name = true)"


def _lake_files(fs: Any, base: str, table: str, state: lake_files.LakeState) -> str | None:
    """A read_parquet() call over the table's live files in a lake (``promptops.store.lake_files``)."""
    live = lake_files.live_files(fs, base, table, state)
    if not live:
        return None
    names = ", ".join(_literal(f"{base}/{name}") for name in live)
    kinds = ", ".join(f"'{name}': {'DATE' if name == 'day' else 'VARCHAR'}" for name in _PARTITIONS[table])
    reconcile = "" if state.uniform else ", union_by_name = true"  # files written by other releases
    return f"read_parquet([{names}], hive_partitioning = true, hive_types = {{{kinds}}}{reconcile})"


def _columns(con: duckdb.DuckDBPyConnection, files: str) -> set[str]:
    return {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {files}").fetchall()}


def _legacy_diagnostics(con: duckdb.DuckDBPyConnection, files: str, present: set[str], slice_files: str | None) -> None:
    """Views for a directory holding diagnostics exported before store migration 3 (each row with its slice's
    columns, no slice_key), possibly beside newer exports: the key is computed from the row's columns, exactly
    as the migration does, and those rows' slices join the exported ones."""
    key = ddl.SLICE_KEY if "slice_key" not in present else f"coalesce(slice_key, {ddl.SLICE_KEY})"
    names = [name for name, _ in ddl.TABLE_COLUMNS["diagnostics"]]
    selected = ", ".join(f"{key} AS slice_key" if name == "slice_key" else name for name in names)
    con.execute(f"CREATE VIEW diagnostics AS SELECT {selected} FROM {files}")
    slice_columns = ", ".join(ddl.SLICE_COLUMNS)
    old = f"SELECT {key} AS slice_key, {slice_columns} FROM {files}"
    if "slice_key" in present:
        old += " WHERE slice_key IS NULL"
    exported = f" UNION ALL SELECT slice_key, {slice_columns} FROM {slice_files}" if slice_files else ""
    con.execute(f"CREATE VIEW slices AS SELECT DISTINCT * FROM ({old}{exported})")


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
