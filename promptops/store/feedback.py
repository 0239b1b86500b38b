"""Ingest finding feedback events (``promptops feedback ingest``) into the store's ``feedback`` table.

Guarantees (docs/feedback.md), the same as response ingest's:
- Idempotent on (source, event_id): an event already stored, or repeated in the run, is skipped and counted.
- Each batch is one transaction, so a run killed at any point leaves whole batches; a re-run completes it with
  the counts of a clean run.
- A bad line (not UTF-8, not JSON, not a feedback event) is counted and reported with its file and line
  through ``on_bad``, and the good lines around it are stored.
- An event whose finding the store does not know (yet) is stored like any other and counted as ``unknown``;
  it joins its finding when the response is ingested later.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import pyarrow as pa

from promptops.store import ddl
from promptops.store.feedback_events import FeedbackEvent, decode_event, utc
from promptops.store.feedback_totals import apply_events
from promptops.store.ingest import BAD_SAMPLE, BadRecord
from promptops.store.logs import LINE_TOO_LONG, LogError, SegmentReader, find_segments
from promptops.store.store import Store

DEFAULT_FEEDBACK_BATCH = 50_000

_STR = pa.string()
EVENT_SCHEMA = pa.schema(
    [
        ("event_id", _STR),
        ("source", _STR),
        ("finding_id", _STR),
        ("response_id", _STR),
        ("outcome", _STR),
        ("time", pa.timestamp("us")),
        ("actor", _STR),
        ("actor_kind", _STR),
        ("evidence", _STR),
        ("feedback_version", _STR),
        ("file", _STR),
        ("file_line", pa.int32()),
    ]
)
_INSERT = f"""INSERT INTO feedback BY NAME
    SELECT e.*, $batch AS batch_id
    FROM (SELECT *, {ddl.EVENT_KEY} AS event_hash, {ddl.FINDING_KEY} AS key_hash FROM _po_feedback) e
    WHERE NOT EXISTS (SELECT 1 FROM feedback f
                      WHERE f.event_hash = e.event_hash AND f.source = e.source AND f.event_id = e.event_id)"""
_UNKNOWN = """SELECT count(*) FROM feedback f WHERE batch_id = $batch AND NOT EXISTS (
    SELECT 1 FROM findings g WHERE g.key_hash = f.key_hash AND g.response_id = f.response_id
                                   AND g.finding_id = f.finding_id)"""


@dataclass
class FeedbackFileReport:
    path: str  # repo-relative
    records: int = 0  # non-empty lines
    inserted: int = 0
    duplicates: int = 0  # already stored, or repeated earlier in the run
    unknown: int = 0  # inserted events whose finding the store does not hold yet
    bad_records: int = 0
    error: str | None = None  # the file could not be read to the end (what was read is stored)

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "records": self.records,
            "inserted": self.inserted,
            "duplicates": self.duplicates,
            "unknown": self.unknown,
            "bad_records": self.bad_records,
            "error": self.error,
        }


@dataclass
class FeedbackReport:
    files: list[FeedbackFileReport] = field(default_factory=list)
    bad_sample: list[BadRecord] = field(default_factory=list)

    def total(self, name: str) -> int:
        return sum(int(getattr(f, name)) for f in self.files)

    @property
    def failed(self) -> list[FeedbackFileReport]:
        return [f for f in self.files if f.error is not None]

    def to_dict(self) -> dict[str, Any]:
        return {
            **{name: self.total(name) for name in ("records", "inserted", "duplicates", "unknown", "bad_records")},
            "files": [f.to_dict() for f in self.files],
            "bad_records_sample": [{"source": b.source, "line": b.line, "problem": b.problem} for b in self.bad_sample],
            "bad_records_sample_limit": BAD_SAMPLE,
        }


def ingest_feedback(
    paths: list[Path],
    store: Store,
    *,
    relative: Callable[[Path], str],
    batch_size: int = DEFAULT_FEEDBACK_BATCH,
    on_bad: Callable[[BadRecord], None] | None = None,
) -> FeedbackReport:
    """Store the events in ``paths`` (.jsonl or .jsonl.gz files, or directories of them). Raises only for
    failures of the run itself (StoreError); batches already written stay."""
    report = FeedbackReport()
    for segment in find_segments(paths):
        part = FeedbackFileReport(relative(segment.path))
        report.files.append(part)
        batch = _Batch(store, part, max(1, batch_size))
        try:
            for number, line in SegmentReader(segment, part.path).lines():
                if line is not None and (not line or line.isspace()):
                    continue
                part.records += 1
                event = LINE_TOO_LONG if line is None else decode_event(line)
                if isinstance(event, str):
                    part.bad_records += 1
                    bad = BadRecord(part.path, number, event)
                    if len(report.bad_sample) < BAD_SAMPLE:
                        report.bad_sample.append(bad)
                    if on_bad is not None:
                        on_bad(bad)
                    continue
                batch.add(event, number)
        except LogError as problem:  # keep what was read before the damage
            part.error = str(problem)
        batch.flush()
    return report


class _Batch:
    """Events of one file waiting for their transaction; (source, event_id) repeated inside it are dropped."""

    def __init__(self, store: Store, report: FeedbackFileReport, size: int) -> None:
        self._store, self._report, self._size = store, report, size
        self._rows: dict[tuple[str, str], tuple[Any, ...]] = {}

    def add(self, event: FeedbackEvent, line: int) -> None:
        key = (event.source, event.event_id)
        if key in self._rows:
            self._report.duplicates += 1
            return
        evidence = msgspec.json.encode(event.evidence, order="sorted").decode()
        self._rows[key] = (
            event.event_id,
            event.source,
            event.finding_id,
            event.response_id,
            event.outcome,
            utc(event.time),
            event.actor,
            event.actor_kind,
            evidence,
            event.feedback_version,
            self._report.path,
            line,
        )
        if len(self._rows) >= self._size:
            self.flush()

    def flush(self) -> None:
        if not self._rows:
            return
        columns = list(zip(*self._rows.values(), strict=True))
        table = pa.Table.from_arrays(
            [pa.array(column, type=f.type) for column, f in zip(columns, EVENT_SCHEMA, strict=True)],
            schema=EVENT_SCHEMA,
        )
        offered = len(self._rows)
        self._rows = {}
        inserted, unknown = write_events(self._store, table)
        self._report.inserted += inserted
        self._report.unknown += unknown
        self._report.duplicates += offered - inserted


def write_events(store: Store, events: pa.Table) -> tuple[int, int]:
    """Insert ``events`` (EVENT_SCHEMA, no (source, event_id) twice) in one transaction, skipping those already
    stored; (inserted, of them unknown findings)."""
    con = store.connection
    with store.errors("write failed"):
        con.register("_po_feedback", events)
        try:
            con.execute("BEGIN TRANSACTION")
            try:
                batch_id = int(ddl.scalar(con, "SELECT coalesce(max(batch_id), 0) + 1 FROM batches"))
                con.execute(_INSERT, {"batch": batch_id})
                inserted = int(
                    ddl.scalar(con, "SELECT count(*) FROM feedback WHERE batch_id = $batch", {"batch": batch_id})
                )
                unknown = int(ddl.scalar(con, _UNKNOWN, {"batch": batch_id})) if inserted else 0
                if inserted:
                    apply_events(con, batch_id)
                    con.execute(
                        "INSERT INTO batches (batch_id, committed_at, writer, responses, diagnostics, duplicates, "
                        "feedback) VALUES (?, now()::TIMESTAMP, 'feedback', 0, 0, ?, ?)",
                        [batch_id, events.num_rows - inserted, inserted],
                    )
                con.execute("COMMIT")
            except BaseException:
                with suppress(duckdb.Error):  # a failed write may refuse the rollback too; the first error counts
                    con.execute("ROLLBACK")
                raise
        finally:
            con.unregister("_po_feedback")
    return inserted, unknown
