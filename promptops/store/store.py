"""An open diagnostics store: one DuckDB file, its lock, its migrations, and whole-batch writes.

Locking: DuckDB lets one process open a file for writing (an OS lock on the file, released when the process
dies, even by SIGKILL). ``Store.open`` retries while another process holds it and gives up after
``lock_timeout`` seconds with StoreLockedError, so a second writer waits, then fails cleanly; it never writes.
Atomicity: every ``write`` is one transaction holding whole responses with all their diagnostics (and the
re-ask runs' trace steps handed over with them), so a crash leaves whole batches and nothing else (DuckDB's
write-ahead log discards an unfinished commit on reopen).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, NamedTuple

import duckdb

from promptops.store import ddl
from promptops.store.defaults import DEFAULT_LOCK_TIMEOUT
from promptops.store.errors import StoreError, StoreLockedError, describe, store_error
from promptops.store.feedback_totals import add_findings
from promptops.store.source import SqlSource

if TYPE_CHECKING:
    import pyarrow as pa

# Bounds DuckDB's buffer cache so ingest memory does not grow with the size of the store.
DEFAULT_MEMORY_LIMIT = "256MB"
_LOCK_MESSAGE = "Could not set lock on file"

# A batch's inserts, from the Arrow tables registered as _po_responses, _po_slices and _po_diagnostics (see
# batch.py: a diagnostic row names its slice by number in _po_slices until insert_diagnostics keys it).
INSERT_RESPONSES = (
    f"INSERT INTO responses BY NAME SELECT *, {ddl.md5_lower('response_id')} AS id_hash, $batch AS batch_id "
    "FROM _po_responses"
)
INSERT_DIAGNOSTICS = "INSERT INTO diagnostics BY NAME SELECT *, $batch AS batch_id FROM _po_diagnostics"
INSERT_FINDINGS = (
    f"INSERT INTO findings BY NAME SELECT *, {ddl.md5_lower('response_id')} AS id_hash, {ddl.FINDING_KEY} AS key_hash, "
    "$batch AS batch_id FROM _po_findings"
)
_SLICE_KEYS = f"SELECT {ddl.SLICE_KEY} FROM _po_slices ORDER BY slice"
# From the batch's slices with their keys (a batch gathered from several chunks may name one slice twice).
_INSERT_SLICES = (
    "INSERT INTO slices BY NAME SELECT DISTINCT * FROM _po_keyed_slices "
    "WHERE slice_key NOT IN (SELECT slice_key FROM slices)"
)
INSERT_TRACES = (
    f"INSERT INTO traces BY NAME SELECT *, {ddl.md5_lower('run_id')} AS run_hash, $batch AS batch_id FROM _po_traces"
)
_PID = re.compile(r"\(PID (\d+)\)")


@dataclass(frozen=True)
class Batch:
    """Responses and their diagnostics in columnar form (``promptops.store.batch``: RESPONSE_SCHEMA,
    DIAGNOSTIC_SCHEMA, and SLICE_SCHEMA for the slices the diagnostics name by number)."""

    responses: pa.Table
    diagnostics: pa.Table
    slices: pa.Table
    duplicates: int = 0  # response ids repeated inside the batch, already left out
    traces: pa.Table = field(default_factory=lambda: _no_traces())  # re-ask trace steps (traces.TRACE_SCHEMA)
    trace_duplicates: int = 0  # (run_id, attempt) repeated inside the batch, already left out
    findings: pa.Table = field(default_factory=lambda: _no_findings())  # kept findings (findings.FINDING_SCHEMA)


class WriteResult(NamedTuple):  # not a dataclass: cheaper to define at every start-up (source.Window)
    batch_id: int | None  # None when nothing new was written
    responses: int
    diagnostics: int
    duplicates: int  # responses skipped: already stored, or repeated in the batch
    traces: int = 0  # trace steps written
    trace_duplicates: int = 0  # trace steps skipped: (run_id, attempt) already stored, or repeated in the batch


class Store:
    """A DuckDB diagnostics store. Open with ``Store.open``; use as a context manager or call ``close``.

    One Store serializes its own writes (a lock), so recorders on several threads can share it.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path, display: str, read_only: bool) -> None:
        self._con = con
        self.path = path
        self.display = display
        self.read_only = read_only
        self._write_lock = threading.Lock()

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        display: str | None = None,
        read_only: bool = False,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        memory_limit: str = DEFAULT_MEMORY_LIMIT,
    ) -> Store:
        """Open (creating and migrating when writable) the store at ``path``.

        ``display`` is how messages name the store (the repo-relative path). A read-only open of a store
        written by an older promptops migrates it first, briefly taking the write lock.
        """
        shown = display or path.as_posix()
        if read_only and not path.is_file():
            raise StoreError(f"{shown}: no diagnostics store here (run promptops ingest first)")
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        # Rows carry their own order (seq, ts); letting DuckDB append out of order saves it work on every batch.
        config: dict[str, str | bool | int | float | list[str]] = {
            "memory_limit": memory_limit,
            "preserve_insertion_order": False,
            # The store needs no extension: never fetch one from the network because a file looks like
            # another format's, or a query names a function DuckDB does not have built in.
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        }
        check_format(path, shown)
        con = _connect(path, shown, read_only, lock_timeout, config)
        try:
            if read_only:
                if not ddl.is_current(con):
                    con.close()
                    cls.open(path, display=shown, lock_timeout=lock_timeout, memory_limit=memory_limit).close()
                    con = _connect(path, shown, True, lock_timeout, config)
            else:
                ddl.migrate(con, shown)
        except duckdb.Error as problem:
            con.close()
            raise StoreError(f"{shown}: {_first_line(problem)}") from None
        except BaseException:
            con.close()
            raise
        return cls(con, path, shown, read_only)

    @property
    def source(self) -> SqlSource:  # the store's questions (a RatesSource) over this connection
        return SqlSource(self.connection)

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection, for queries over the tables and rate views."""
        return self._con

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def count(self, table: str) -> int:
        if table not in ddl.TABLE_COLUMNS and table not in ("batches", "segments", "findings", "feedback"):
            raise ValueError(f"unknown table {table!r}")
        with self.errors("read failed"):
            return int(ddl.scalar(self._con, f"SELECT count(*) FROM {table}"))

    @contextmanager
    def errors(self, doing: str) -> Iterator[None]:
        """Turn a DuckDB error inside the block into a one-line StoreError (a damaged file, a full disk)."""
        try:
            yield
        except duckdb.Error as problem:
            raise store_error(self.display, problem, doing) from None

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are already stored (committed): the 8-byte hash column first, exact ids only on a
        hit. It reads through a cursor of its own, so it neither waits for nor sees a write in progress."""
        import pyarrow as pa  # only writers need Arrow; a read-only open stays light

        table = pa.table({"response_id": pa.array(list(ids), type=pa.string())})
        with self._con.cursor() as cursor, self.errors("read failed"):
            return _existing(cursor, table)

    def write(self, batch: Batch, *, writer: str = "recorder") -> WriteResult:
        """Store a batch in one transaction; responses whose id is already stored are skipped with their
        diagnostics, and trace steps whose (run_id, attempt) is, too (so writing the same batch twice adds
        nothing)."""
        return self.write_parts(iter((batch,)), writer=writer)

    def write_parts(self, parts: Iterator[Batch], *, writer: str = "recorder") -> WriteResult:
        """``write`` of the batches ``parts`` yields, as one transaction and one batch id, each part inserted as it
        arrives: a producer on another thread goes on making parts while DuckDB (which releases the GIL) stores
        them. Nothing is written when ``parts`` raises."""
        if self.read_only:
            raise StoreError(f"{self.display}: opened read-only")
        with self._write_lock:
            con = self._con
            con.execute("BEGIN TRANSACTION")
            try:
                batch_id = int(ddl.scalar(con, "SELECT coalesce(max(batch_id), 0) + 1 FROM batches"))
                totals = [0, 0, 0, 0, 0, 0]  # responses, diagnostics, duplicates, traces, trace dups, findings
                for part in parts:
                    for i, value in enumerate(self._insert_part(part, batch_id)):
                        totals[i] += value
                responses, diagnostics, duplicates, traces, trace_duplicates, findings = totals
                if responses == 0 and traces == 0:
                    con.execute("ROLLBACK")
                    return WriteResult(None, 0, 0, duplicates, 0, trace_duplicates)
                if findings:
                    add_findings(con, batch_id)
                con.execute(
                    "INSERT INTO batches (batch_id, committed_at, writer, responses, diagnostics, duplicates, "
                    "traces, trace_duplicates, findings) VALUES (?, now()::TIMESTAMP, ?, ?, ?, ?, ?, ?, ?)",
                    [batch_id, writer, *totals],
                )
                con.execute("COMMIT")
            except duckdb.Error as problem:
                _rollback(con)
                raise store_error(self.display, problem, "write failed") from None
            except BaseException:
                _rollback(con)
                raise
        return WriteResult(batch_id, responses, diagnostics, duplicates, traces, trace_duplicates)

    def segment_done(self, path: str, size: int, digest: str | None) -> bool:
        """Whether the segment ``path`` was read to the end at this size (and content, when ``digest``)."""
        with self.errors("read failed"):
            rows = self._con.execute("SELECT sha256 FROM segments WHERE path = ? AND size = ?", [path, size]).fetchall()
        return any(digest is None or row[0] == digest for row in rows)

    def has_segment_size(self, path: str, size: int) -> bool:
        return self.segment_done(path, size, None)

    def mark_segment(self, path: str, size: int, digest: str, records: int, bad_records: int) -> None:
        with self._write_lock:
            try:
                self._con.execute("BEGIN TRANSACTION")
                self._con.execute(
                    "DELETE FROM segments WHERE path = ? AND size = ? AND sha256 = ?", [path, size, digest]
                )
                self._con.execute(
                    "INSERT INTO segments VALUES (?, ?, ?, ?, ?, now()::TIMESTAMP)",
                    [path, size, digest, records, bad_records],
                )
                self._con.execute("COMMIT")
            except duckdb.Error as problem:
                _rollback(self._con)
                raise store_error(self.display, problem, "write failed") from None

    def store_id(self) -> str:
        with self.errors("read failed"):
            value = ddl.scalar(self._con, "SELECT max(value) FROM store_meta WHERE key = 'store_id'")
        if value is None:
            raise StoreError(f"{self.display}: store has no id (store_meta)")
        return str(value)

    # ---- private ------------------------------------------------------------------------------------------

    def _new_steps(self, traces: pa.Table) -> pa.Table:
        """``traces`` less the steps already stored: the 8-byte run_hash column first, exact keys on a hit."""
        import pyarrow as pa
        import pyarrow.compute as pc

        con = self._con
        con.register("_po_traces", traces)
        try:
            rows = con.execute(
                "SELECT DISTINCT s.run_id, s.attempt FROM traces s SEMI JOIN _po_traces t "
                "ON s.run_id = t.run_id AND s.attempt = t.attempt "
                f"WHERE s.run_hash IN (SELECT {ddl.md5_lower('run_id')} FROM _po_traces)"
            ).fetchall()
        finally:
            con.unregister("_po_traces")
        if not rows:
            return traces
        known = pa.array([f"{run}\x1f{attempt}" for run, attempt in rows], type=pa.string())
        keys = pc.binary_join_element_wise(traces["run_id"], pc.cast(traces["attempt"], pa.string()), "\x1f")
        return traces.filter(pc.invert(pc.is_in(keys, value_set=known)))

    def _insert_part(self, batch: Batch, batch_id: int) -> tuple[int, int, int, int, int, int]:
        """Insert one part of a write (in its transaction), less what is stored already: (responses,
        diagnostics, duplicates, traces, trace duplicates, findings) written or skipped."""
        import pyarrow as pa
        import pyarrow.compute as pc

        con = self._con
        responses, diagnostics, traces, findings = batch.responses, batch.diagnostics, batch.traces, batch.findings
        existing = _existing(con, responses.select(["response_id"])) if responses.num_rows else set()
        if existing:
            known = pa.array(sorted(existing), type=pa.string())
            responses = responses.filter(pc.invert(pc.is_in(responses["response_id"], value_set=known)))
            diagnostics = diagnostics.filter(pc.invert(pc.is_in(diagnostics["response_id"], value_set=known)))
            findings = findings.filter(pc.invert(pc.is_in(findings["response_id"], value_set=known)))
        stored_steps = traces.num_rows
        traces = self._new_steps(traces) if stored_steps else traces
        inserts = [
            (name, table, statement)
            for name, table, statement in (
                ("_po_responses", responses, INSERT_RESPONSES),
                ("_po_traces", traces, INSERT_TRACES),
                ("_po_findings", findings, INSERT_FINDINGS),
            )
            if table.num_rows
        ]
        for name, table, _ in inserts:
            con.register(name, table)
        try:
            for _, _, statement in inserts:
                con.execute(statement, {"batch": batch_id})
            if diagnostics.num_rows:
                insert_diagnostics(con, diagnostics, batch.slices, batch_id)
        finally:
            for name, _, _ in inserts:
                con.unregister(name)
        return (
            responses.num_rows,
            diagnostics.num_rows,
            batch.duplicates + len(existing),
            traces.num_rows,
            batch.trace_duplicates + stored_steps - traces.num_rows,
            findings.num_rows,
        )


def _existing(con: duckdb.DuckDBPyConnection, ids: pa.Table) -> set[str]:
    con.register("_po_ids", ids)
    try:
        hits = ddl.scalar(
            con, f"SELECT count(*) FROM responses WHERE id_hash IN (SELECT {ddl.md5_lower('response_id')} FROM _po_ids)"
        )
        if not hits:
            return set()
        rows = con.execute(
            "SELECT r.response_id FROM responses r SEMI JOIN _po_ids i ON r.response_id = i.response_id "
            f"WHERE r.id_hash IN (SELECT {ddl.md5_lower('response_id')} FROM _po_ids)"
        ).fetchall()
    finally:
        con.unregister("_po_ids")
    return {row[0] for row in rows}


def insert_diagnostics(con: duckdb.DuckDBPyConnection, diagnostics: pa.Table, slices: pa.Table, batch_id: int) -> None:
    """Insert a batch's diagnostic rows and the slices they name that the store lacks, in the caller's
    transaction. The slice numbers become slice keys here, with Arrow's ``take``: DuckDB computes the keys
    (ddl.SLICE_KEY) for the few slices only, never per diagnostic row."""
    import pyarrow as pa
    import pyarrow.compute as pc

    con.register("_po_slices", slices)
    try:  # slice number i is row i (batch.slices_table)
        keys = pa.array([row[0] for row in con.execute(_SLICE_KEYS).fetchall()], type=pa.uint64())
    finally:
        con.unregister("_po_slices")
    numbers = diagnostics.schema.get_field_index("slice")
    tables = {
        "_po_keyed_slices": slices.set_column(0, "slice_key", keys),
        "_po_diagnostics": diagnostics.set_column(numbers, "slice_key", pc.take(keys, diagnostics.column(numbers))),
    }
    for name, table in tables.items():
        con.register(name, table)
    try:
        con.execute(_INSERT_SLICES)
        con.execute(INSERT_DIAGNOSTICS, {"batch": batch_id})
    finally:
        for name in tables:
            con.unregister(name)


def _no_findings() -> pa.Table:
    from promptops.store.findings import empty_findings  # Arrow loads with the first batch, as for traces

    return empty_findings()


def _no_traces() -> pa.Table:
    from promptops.store.traces import empty_traces  # Arrow loads with the first batch, not with the store

    return empty_traces()


# A DuckDB file's main header: an 8-byte checksum, then these 4 bytes.
_DUCKDB_MAGIC = (8, b"DUCK")
_OTHER_FORMATS = (
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"PAR1", "a Parquet file"),
    (b"\x1f\x8b", "a gzip file"),
    (b"PK\x03\x04", "a zip file"),
)


def check_format(path: Path, display: str) -> None:
    """Refuse a file that is not a DuckDB database (an SQLite file, a log given by mistake...) before DuckDB
    opens it; a missing or empty file is a new store. The file's first bytes say what it is."""
    try:
        if not path.exists():
            return
        if not path.is_file():
            raise StoreError(f"{display}: not a diagnostics store (not a regular file)")
        with path.open("rb") as handle:
            head = handle.read(16)
    except OSError as problem:
        raise StoreError(f"{display}: cannot open: {problem.strerror or type(problem).__name__}") from None
    offset, magic = _DUCKDB_MAGIC
    if not head or head[offset : offset + len(magic)] == magic:
        return
    kind = next((name for prefix, name in _OTHER_FORMATS if head.startswith(prefix)), "not a DuckDB database")
    raise StoreError(f"{display}: not a diagnostics store ({kind})")


def _connect(
    path: Path,
    display: str,
    read_only: bool,
    lock_timeout: float,
    config: dict[str, str | bool | int | float | list[str]],
) -> duckdb.DuckDBPyConnection:
    deadline = time.monotonic() + max(lock_timeout, 0.0)
    pause = 0.02
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only, config=config)
        except duckdb.IOException as problem:
            message = str(problem)
            if _LOCK_MESSAGE not in message:
                raise StoreError(f"{display}: cannot open: {_first_line(problem)}") from None
            if time.monotonic() >= deadline:
                holder = _PID.search(message)
                who = f" (PID {holder.group(1)})" if holder else ""
                raise StoreLockedError(
                    f"{display}: store is locked by another process{who}; gave up after {lock_timeout:g} s "
                    "(raise --lock-timeout to wait longer)"
                ) from None
            time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
            pause = min(pause * 2, 0.5)
        except duckdb.Error as problem:
            raise StoreError(f"{display}: cannot open: {_first_line(problem)}") from None


def _first_line(problem: BaseException) -> str:
    return describe(problem)


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    # After a failed write DuckDB may refuse the rollback too ("cannot rollback"): the first error is the
    # one to report, and an unfinished transaction is discarded when the connection closes.
    with suppress(duckdb.Error):
        con.execute("ROLLBACK")
