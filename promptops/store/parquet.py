"""Parquet export for scale, and the same views over an export directory.

Layout (hive partitions, so engines that read data lakes prune by contract and day)::

    DIR/responses/contract=<name>/day=<YYYY-MM-DD>/<store_id>_<i>.parquet
    DIR/diagnostics/contract=<name>/day=<YYYY-MM-DD>/<store_id>_<i>.parquet
    DIR/traces/contract=<name>/day=<YYYY-MM-DD>/<store_id>_<i>.parquet      (day of started_at)

Files carry the exporting store's id, so many stores (one per service) can export into one directory, and a
store exporting again replaces its own files and nobody else's. ``open_parquet`` builds ``responses``,
``diagnostics`` and ``traces`` views over the files with exactly the tables' columns (an export without a
table's files, such as one written before traces existed, reads as that table empty), then the rate views on
top: every rates query runs unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from promptops.store import ddl
from promptops.store.errors import StoreError
from promptops.store.store import Store

TABLES = ("responses", "diagnostics", "traces")


@dataclass(frozen=True)
class ExportReport:
    directory: str
    files: int
    responses: int
    diagnostics: int
    traces: int  # trace steps of the re-ask loop

    def to_dict(self) -> dict[str, object]:
        return {
            "directory": self.directory,
            "files": self.files,
            "responses": self.responses,
            "diagnostics": self.diagnostics,
            "traces": self.traces,
        }


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
        try:
            target.mkdir(parents=True, exist_ok=True)
            pattern = f"contract={contract}/day=*/{store_id}_*.parquet" if contract else f"*/*/{store_id}_*.parquet"
            for old in target.glob(pattern):
                old.unlink()
        except OSError as problem:
            raise StoreError(f"{display}/{table}: cannot write: {problem.strerror or problem}") from None
        where = f"WHERE contract = {_literal(contract)}" if contract else ""
        try:
            con.execute(
                f"COPY (SELECT *, CAST({ddl.TIME_COLUMNS[table]} AS DATE) AS day FROM {table} {where}) "
                f"TO {_literal(target.as_posix())} "
                f"(FORMAT parquet, PARTITION_BY (contract, day), FILENAME_PATTERN '{store_id}_{{i}}', "
                "OVERWRITE_OR_IGNORE)"
            )
        except duckdb.Error as problem:
            raise StoreError(f"{display}/{table}: export failed: {str(problem).splitlines()[0]}") from None
        counts[table] = int(ddl.scalar(con, f"SELECT count(*) FROM {table} {where}"))
        files += sum(1 for _ in target.glob(pattern))
    return ExportReport(display, files, counts["responses"], counts["diagnostics"], counts["traces"])


def open_parquet(directory: Path, *, display: str) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB whose ``responses``/``diagnostics``/``traces`` and rate views read the export in
    ``directory``."""
    if not (directory / "responses").is_dir():
        raise StoreError(f"{display}: not a promptops Parquet export (no responses/ directory)")
    con = duckdb.connect()
    try:
        for table, columns in ddl.TABLE_COLUMNS.items():
            names = ", ".join(name for name, _ in columns)
            if any((directory / table).glob("*/*/*.parquet")):
                source = _literal(f"{(directory / table).as_posix()}/*/*/*.parquet")
                con.execute(
                    f"CREATE VIEW {table} AS SELECT {names} FROM read_parquet({source}, hive_partitioning = true, "
                    "hive_types = {'contract': VARCHAR, 'day': DATE}, union_by_name = true)"
                )
            else:  # nothing exported yet: an empty table with the right columns
                typed = ", ".join(f"{name} {kind}" for name, kind in columns)
                con.execute(f"CREATE TABLE {table} ({typed})")
        ddl.create_views(con)
    except duckdb.Error as problem:
        con.close()
        raise StoreError(f"{display}: cannot read the export: {str(problem).splitlines()[0]}") from None
    return con


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
