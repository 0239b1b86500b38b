"""Ingest response logs: decode each record, parse it under its policy, store outcomes in whole batches.

Guarantees (README "Diagnostics store"):
- Idempotent on ``response_id``: ids already stored are skipped (before parsing, when the store was not empty
  at the start), so re-running an ingest adds nothing.
- Each batch is one transaction; a run killed at any point leaves whole batches, and re-running completes
  with exactly the counts of a clean run.
- A segment read to the end is remembered (repo-relative path, byte size, sha256 of its bytes as stored) and
  skipped next time unless ``rescan``; a segment that grew or changed is read again (its stored ids skip).
- A bad record (not JSON, a missing or mistyped field, an unknown contract) is counted and reported with its
  file and line through ``on_bad``; it never stops the run or the good records around it. A segment that
  cannot be read (I/O error, corrupt gzip) keeps what was read before the error, is not remembered, and is
  reported in ``IngestReport.failed``; the run goes on with the next segment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from promptops.parsing import ChangedFiles, Parser
from promptops.store.batch import BatchBuilder
from promptops.store.logs import LogError, LogRecord, Segment, SegmentReader, decode_record, file_digest, find_segments
from promptops.store.policies import ParserCache
from promptops.store.store import Store, WriteResult

DEFAULT_INGEST_BATCH = 125_000  # at least one DuckDB row group (122,880), written straight to the file, not the WAL
DECODE_CHUNK = 5_000


@dataclass(frozen=True)
class BadRecord:
    source: str  # repo-relative path of the log
    line: int
    problem: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.problem}"


@dataclass
class SegmentReport:
    path: str
    records: int = 0  # non-empty lines read
    inserted: int = 0
    duplicates: int = 0
    bad_records: int = 0
    diagnostics: int = 0
    skipped: bool = False  # already ingested in an earlier run
    error: str | None = None


@dataclass
class IngestReport:
    segments: list[SegmentReport] = field(default_factory=list)

    def _sum(self, name: str) -> int:
        return sum(getattr(s, name) for s in self.segments)

    @property
    def records(self) -> int:
        return self._sum("records")

    @property
    def inserted(self) -> int:
        return self._sum("inserted")

    @property
    def duplicates(self) -> int:
        return self._sum("duplicates")

    @property
    def bad_records(self) -> int:
        return self._sum("bad_records")

    @property
    def diagnostics(self) -> int:
        return self._sum("diagnostics")

    @property
    def skipped(self) -> list[str]:
        return [s.path for s in self.segments if s.skipped]

    @property
    def failed(self) -> list[SegmentReport]:
        return [s for s in self.segments if s.error is not None]

    def to_dict(self) -> dict[str, object]:
        return {
            "segments": len(self.segments),
            "segments_skipped": len(self.skipped),
            "segments_failed": [{"path": s.path, "error": s.error} for s in self.failed],
            "records": self.records,
            "inserted": self.inserted,
            "duplicates": self.duplicates,
            "bad_records": self.bad_records,
            "diagnostics": self.diagnostics,
        }


def ingest_logs(
    paths: list[Path],
    store: Store,
    parsers: ParserCache,
    *,
    relative: Callable[[Path], str],
    batch_size: int = DEFAULT_INGEST_BATCH,
    rescan: bool = False,
    on_bad: Callable[[BadRecord], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> IngestReport:
    """Ingest the logs at ``paths`` (files or directories of segments) into ``store``.

    ``relative`` turns a path into the repo-relative form stored and reported. ``on_progress`` receives the
    number of log bytes consumed since its previous call (see ``total_bytes``). Raises only for failures of
    the run itself (StoreError, a broken contract, a resolver error): batches already written stay.
    """
    segments = find_segments(paths)
    run = _Run(store, parsers, batch_size, on_bad, on_progress)
    report = IngestReport()
    try:
        for segment in segments:
            display = relative(segment.path)
            if not rescan and _already_ingested(store, segment, display):
                report.segments.append(SegmentReport(display, skipped=True))
                run.progress(segment.size)
                continue
            report.segments.append(run.segment(segment, display))
    finally:
        run.close()
    return report


def total_bytes(paths: list[Path]) -> int:
    """The size of everything ``ingest`` would read (for a progress bar)."""
    return sum(segment.size for segment in find_segments(paths))


def _already_ingested(store: Store, segment: Segment, display: str) -> bool:
    # Hash only when path and size match a remembered segment: the common miss costs nothing.
    return store.has_segment_size(display, segment.size) and store.segment_done(
        display, segment.size, file_digest(segment.path)
    )


class _Run:
    def __init__(
        self,
        store: Store,
        parsers: ParserCache,
        batch_size: int,
        on_bad: Callable[[BadRecord], None] | None,
        on_progress: Callable[[int], None] | None,
    ) -> None:
        self._store = store
        self._parsers = parsers
        self._batch_size = max(1, batch_size)
        # Records are decoded (and looked up) a chunk at a time, so only a chunk of raw texts is ever held,
        # however large the batch; the batch itself keeps just the stored values.
        self._chunk_size = min(self._batch_size, DECODE_CHUNK)
        self._on_bad = on_bad
        self._on_progress = on_progress
        # Look ids up before parsing only when something may already be stored; a fresh store needs no
        # lookup (the write still skips repeats across batches of this run).
        self._precheck = store.count("responses") > 0
        self._builder = BatchBuilder()
        self._slots: dict[tuple[str, str | None, str | None], tuple[Parser, str, str] | None] = {}
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="promptops-store-writer")
        self._in_flight: tuple[SegmentReport, Future[WriteResult]] | None = None

    def progress(self, consumed: int) -> None:
        if self._on_progress is not None and consumed:
            self._on_progress(consumed)

    def segment(self, segment: Segment, display: str) -> SegmentReport:
        report = SegmentReport(display)
        reader = SegmentReader(segment, display)
        reported = 0
        try:
            for chunk in self._chunks(reader, report):
                self._parse(chunk, display, report)
                if len(self._builder) >= self._batch_size:
                    self._flush(report)
                self.progress(reader.position - reported)
                reported = reader.position
        except LogError as problem:
            report.error = str(problem)
            self._flush(report)
            self.wait()
            self.progress(segment.size - reported)
            return report
        self._flush(report)
        self.wait()  # remember the segment only once all its batches are stored
        self._store.mark_segment(display, reader.size, reader.sha256, report.records, report.bad_records)
        self.progress(reader.position - reported)
        return report

    def _chunks(self, reader: SegmentReader, report: SegmentReport) -> Iterator[list[tuple[int, LogRecord]]]:
        chunk: list[tuple[int, LogRecord]] = []
        size = self._chunk_size
        try:
            for number, line in reader.lines():
                if not line or line.isspace():  # isspace() scans without copying the line, unlike strip()
                    continue
                report.records += 1
                record = decode_record(line)
                if isinstance(record, str):
                    self._bad(report, number, record)
                    continue
                chunk.append((number, record))
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
        except LogError:
            if chunk:  # the good records read before the error are kept
                yield chunk
            raise
        if chunk:
            yield chunk

    def _parse(self, chunk: list[tuple[int, LogRecord]], display: str, report: SegmentReport) -> None:
        stored = self._store.existing_ids(r.response_id for _, r in chunk) if self._precheck else set()
        add = self._builder.add
        slots = self._slots
        for number, record in chunk:
            if stored and record.response_id in stored:
                report.duplicates += 1
                continue
            key = (record.contract, record.rollout_id, record.arm)
            if key in slots:
                slot = slots[key]
            else:
                slot = slots[key] = self._slot(*key)
            if slot is None:  # an unknown contract (cached as None)
                self._bad(report, number, f"unknown contract {record.contract!r} (no versions/{record.contract}/)")
                continue
            parser, schema_version, prompt_version = slot
            outcome = parser.parse(
                record.raw,
                ChangedFiles(record.changed_files),
                schema_version=schema_version,
                prompt_version=prompt_version,
            )
            add(
                outcome,
                parser.policy,
                record.response_id,
                record.ts,
                record.contract,
                record.rollout_id,
                record.arm,
                record.unit,
                record.model,
                record.latency_ms,
                record.tokens,
                display,
                number,
            )

    def _slot(self, contract: str, rollout_id: str | None, arm: str | None) -> tuple[Parser, str, str] | None:
        """The parser of a (contract, rollout, arm) slot and the request versions its policy implies."""
        parser = self._parsers.parser(contract, rollout_id, arm)
        if parser is None:
            return None
        policy = parser.policy
        return parser, str(policy.schema_floor), str(policy.prompt_version)

    def _flush(self, report: SegmentReport) -> None:
        """Hand the batch to the writer thread and go back to parsing while DuckDB (which releases the GIL)
        stores it. At most one batch is in flight; its errors surface at the next flush or ``wait``."""
        if not self._builder.pending:
            return
        batch = self._builder.take()
        self.wait()
        self._in_flight = (report, self._writer.submit(self._store.write, batch, writer="ingest"))

    def wait(self) -> None:
        """Block until the batch in flight is stored, and count it."""
        if self._in_flight is None:
            return
        report, future = self._in_flight
        self._in_flight = None
        result = future.result()
        report.inserted += result.responses
        report.duplicates += result.duplicates
        report.diagnostics += result.diagnostics

    def close(self) -> None:
        try:
            self.wait()
        finally:
            self._writer.shutdown(wait=True)

    def _bad(self, report: SegmentReport, line: int, problem: str) -> None:
        report.bad_records += 1
        if self._on_bad is not None:
            self._on_bad(BadRecord(report.path, line, problem))
