"""Ingest response logs: decode each record, parse it under its policy, store outcomes in whole batches.

Guarantees (docs/store.md):
- Idempotent on ``response_id``: ids already stored are skipped (before parsing, when the store was not empty
  at the start), so re-running an ingest adds nothing.
- Each batch is one transaction; a run killed at any point leaves whole batches, and re-running completes
  with exactly the counts of a clean run.
- A segment read to the end is remembered (repo-relative path, byte size, sha256 of its bytes as stored) and
  skipped next time unless ``rescan``; a segment that grew or changed is read again (its stored ids skip).
- A bad record (not UTF-8, not JSON, a missing, mistyped or out-of-range field, an unknown contract, a line
  over logs.MAX_LINE, or anything that fails while the record is parsed or tabulated) is counted and
  reported with its file and line through ``on_bad``; it never stops the run or the good records around it.
  Only counts and the first BAD_SAMPLE bad records are kept, so memory does not grow with bad or blank lines.
- A segment that cannot be read (I/O error, corrupt gzip) keeps what was read before the error, is not
  remembered, and is reported in ``IngestReport.failed``; the run goes on with the next segment.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import pyarrow as pa
import pyarrow.compute as pc

from promptops.core.errors import PromptopsError
from promptops.store.chunks import (
    ChunkResult,
    ChunkSource,
    SourceChunk,
    parse_chunk,
    parse_chunk_in_worker,
    parse_range_in_worker,
    start_worker,
    too_long,
)
from promptops.store.defaults import DEFAULT_INGEST_BATCH as DEFAULT_INGEST_BATCH  # re-exported: otlp.py reads it here
from promptops.store.ingest_stream import ABORT, END, Stream, or_empty
from promptops.store.logs import LogError, Segment, SegmentReader, file_digest, find_segments, read_range
from promptops.store.policies import ParserCache
from promptops.store.store import Batch, Store

# Memory stays flat whatever the logs hold: bad records are counted, and only this many are kept as examples
# (in the report); distinct (contract, rollout_id, arm) slots past SLOT_LIMIT are counted together.
BAD_SAMPLE = 100
SLOT_LIMIT = 10_000
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


Slot = tuple[str, str | None, str | None]  # (contract, rollout_id, arm)


@dataclass
class IngestReport:
    segments: list[SegmentReport] = field(default_factory=list)
    # The first BAD_SAMPLE bad records of the run (bad_records counts them all).
    bad_sample: list[BadRecord] = field(default_factory=list)
    # Records read per (contract, rollout_id, arm), for warnings about names no project file defines; at
    # most SLOT_LIMIT slots, the records of any further ones in ``other_slots``.
    slots: dict[Slot, int] = field(default_factory=dict)
    other_slots: int = 0

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
            "bad_records_sample": [{"source": b.source, "line": b.line, "problem": b.problem} for b in self.bad_sample],
            "bad_records_sample_limit": BAD_SAMPLE,
        }

    def add_bad(self, bad: BadRecord) -> None:
        if len(self.bad_sample) < BAD_SAMPLE:
            self.bad_sample.append(bad)

    def add_slots(self, counts: dict[Slot, int]) -> None:
        slots = self.slots
        for key, count in counts.items():
            if key in slots or len(slots) < SLOT_LIMIT:
                slots[key] = slots.get(key, 0) + count
            else:
                self.other_slots += count


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
    processes: int = 0,
) -> IngestReport:
    """Ingest the logs at ``paths`` (files or directories of segments) into ``store``.

    ``relative`` turns a path into the repo-relative form stored and reported. ``on_progress`` receives the
    number of log bytes consumed since its previous call (see ``total_bytes``). ``processes`` > 0 decodes and
    parses in that many worker processes (``parsers`` must then come from ``ParserCache.for_project``);
    this process still reads (for the hash), looks ids up and writes, in the same order and the same whole
    batches. Workers read the lines of an uncompressed segment from the file themselves, so a segment must
    not be rewritten in place while it is ingested (appending to it is fine). Raises
    only for failures of the run itself (StoreError, a broken contract, a resolver error): batches already
    written stay.
    """
    return ingest_segments(
        find_segments(paths),
        store,
        parsers,
        relative=relative,
        batch_size=batch_size,
        rescan=rescan,
        on_bad=on_bad,
        on_progress=on_progress,
        processes=processes,
    )


def ingest_segments(
    segments: list[Segment],
    store: Store,
    parsers: ParserCache,
    *,
    relative: Callable[[Path], str],
    batch_size: int = DEFAULT_INGEST_BATCH,
    rescan: bool = False,
    on_bad: Callable[[BadRecord], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    processes: int = 0,
    open_source: Callable[[Segment, str], ChunkSource] | None = None,
    report: IngestReport | None = None,
) -> IngestReport:
    """``ingest_logs`` of the given segments; with ``open_source``, each segment's records come from the
    source it opens (segment, display) instead of its lines. The segments are reported in ``report`` (a new
    ``IngestReport`` when None), which is returned."""
    report = IngestReport() if report is None else report
    run = _Run(store, parsers, batch_size, on_bad, on_progress, processes, report)
    try:
        for segment in segments:
            display = relative(segment.path)
            if not rescan and _already_ingested(store, segment, display):
                report.segments.append(SegmentReport(display, skipped=True))
                run.progress(segment.size)
                continue
            source = None if open_source is None else open_source(segment, display)
            report.segments.append(run.segment(segment, display, source))
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


class _IdOnly(msgspec.Struct):
    response_id: str = ""


_IDS = msgspec.json.Decoder(_IdOnly)


class _Run:
    def __init__(
        self,
        store: Store,
        parsers: ParserCache,
        batch_size: int,
        on_bad: Callable[[BadRecord], None] | None,
        on_progress: Callable[[int], None] | None,
        processes: int,
        report: IngestReport,
    ) -> None:
        self._report = report
        self._store = store
        self._parsers = parsers
        self._batch_size = max(1, batch_size)
        # Lines go out a chunk at a time, so only a chunk of raw texts per worker is ever held, however large
        # the batch; the batch keeps just the stored values.
        self._chunk_size = min(self._batch_size, DECODE_CHUNK)
        self._on_bad = on_bad
        self._on_progress = on_progress
        # Look ids up before parsing only when something may already be stored; a fresh store needs no
        # lookup (the write still skips repeats across batches of this run).
        self._precheck = store.count("responses") > 0
        self._pending_ids: set[str] = set()
        self._pending_rows = 0
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="promptops-store-writer")
        self._stream: tuple[Stream, SegmentReport] | None = None  # the batch being written, part by part
        self._in_flight: tuple[Stream, SegmentReport] | None = None  # the batch before it, complete and committing
        self._processes = processes
        self._pool: ProcessPoolExecutor | None = None
        if processes > 0:
            try:
                pickle.dumps(parsers)
            except (TypeError, pickle.PicklingError, AttributeError) as problem:
                raise PromptopsError(f"parallel ingest cannot send the parser setup to workers: {problem}") from None
            # spawn, not fork: this process runs DuckDB and Arrow threads, which a fork would copy mid-flight.
            self._pool = ProcessPoolExecutor(
                processes,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=start_worker,
                initargs=(parsers, os.getpid()),
            )

    def progress(self, consumed: int) -> None:
        if self._on_progress is not None and consumed > 0:
            self._on_progress(consumed)

    def segment(self, segment: Segment, display: str, source: ChunkSource | None = None) -> SegmentReport:
        report = SegmentReport(display)
        lines: SegmentReader | None = None
        reader: SegmentReader | ChunkSource
        if source is None:
            reader = lines = SegmentReader(segment, display)
        else:
            reader = source
        window: deque[tuple[Future[ChunkResult], int]] = deque()
        reported = 0
        try:
            if lines is not None and self._pool is not None and not segment.compressed:
                # Workers read their chunks from the file: this process only hashes the bytes and finds
                # where chunks end, and no log text crosses a pipe.
                for part in lines.line_ranges(self._chunk_size):
                    if part.too_long:  # never read: only reported
                        while window:
                            reported = self._collect(window, report, reported)
                        self._absorb(too_long(part), report)
                        continue
                    skip: frozenset[str] = frozenset()
                    if self._precheck:
                        skip = self._stored(enumerate(read_range(segment.path, display, part)))
                    window.append(
                        (self._pool.submit(parse_range_in_worker, segment.path, display, part, skip), reader.position)
                    )
                    while len(window) > 2 * self._processes:
                        reported = self._collect(window, report, reported)
            else:
                for records, chunk in self._chunks(lines, source):
                    skip = self._stored(records) if self._precheck else frozenset()
                    if self._pool is None:
                        if chunk is None:
                            self._absorb(parse_chunk(records, display, self._parsers, skip), report)
                        else:
                            self._absorb(chunk.parse(display, self._parsers, skip), report)
                    else:
                        future = (
                            self._pool.submit(parse_chunk_in_worker, records, display, skip)
                            if chunk is None
                            else self._pool.submit(chunk.parse_in_worker, display, skip)
                        )
                        window.append((future, reader.position))
                        while len(window) > 2 * self._processes:
                            reported = self._collect(window, report, reported)
                        continue
                    self.progress(reader.position - reported)
                    reported = reader.position
            while window:
                reported = self._collect(window, report, reported)
        except LogError as problem:  # keep what was read before the damage, and do not remember the segment
            with contextlib.suppress(LogError):  # a worker's read failed too: the first error is the one reported
                while window:
                    reported = self._collect(window, report, reported)
            report.error = str(problem)
            self._flush()
            self.wait()
            self.progress(segment.size - reported)
            return report
        self._flush()
        self.wait()  # remember the segment only once all its batches are stored
        self._store.mark_segment(display, reader.size, reader.sha256, report.records, report.bad_records)
        self.progress(reader.position - reported)
        return report

    def _collect(self, window: deque[tuple[Future[ChunkResult], int]], report: SegmentReport, reported: int) -> int:
        future, position = window.popleft()
        try:
            result = future.result()
        except LogError:  # a worker could not read its range: the chunks after it are dropped with it
            for pending, _ in window:
                pending.cancel()
            window.clear()
            raise
        except BrokenProcessPool:
            raise PromptopsError("a parser worker process died; nothing of its chunk was stored") from None
        self._absorb(result, report)
        self.progress(position - reported)
        return position

    def _chunks(
        self, lines: SegmentReader | None, source: ChunkSource | None
    ) -> Iterator[tuple[list[tuple[int, bytes | None]], SourceChunk | None]]:
        """(records, None) chunks of a segment's lines, or (records, chunk) of a source's chunks."""
        if lines is not None:
            yield from ((records, None) for records in self._line_chunks(lines))
        elif source is not None:
            yield from ((chunk.lines, chunk) for chunk in source.chunks(self._chunk_size))

    def _line_chunks(self, reader: SegmentReader) -> Iterator[list[tuple[int, bytes | None]]]:
        chunk: list[tuple[int, bytes | None]] = []
        size = self._chunk_size
        try:
            for numbered in reader.lines():
                chunk.append(numbered)
                if len(chunk) >= size:
                    yield chunk
                    chunk = []
        except LogError:
            if chunk:  # the lines read before the error are kept
                yield chunk
            raise
        if chunk:
            yield chunk

    def _stored(self, lines: Iterable[tuple[int, bytes | memoryview | None]]) -> frozenset[str]:
        ids = []
        for _, line in lines:
            if line is None:
                continue
            try:
                ids.append(_IDS.decode(line).response_id)
            except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
                continue  # a bad record: the parsing step reports it
        return frozenset(self._store.existing_ids(ids)) if ids else frozenset()

    def _absorb(self, result: ChunkResult, report: SegmentReport) -> None:
        report.records += result.records
        report.duplicates += result.duplicates
        for line, problem in result.bad:
            self._bad(report, line, problem)
        self._report.add_slots(result.slots)
        responses, diagnostics, findings = result.responses, result.diagnostics, result.findings
        if not responses.num_rows:  # nothing to store: keep nothing of it (a file of bad or blank lines)
            return
        ids = responses.column("response_id").to_pylist()
        repeated = self._pending_ids.intersection(ids)
        if repeated:  # the same id in an earlier chunk of this batch: the first one stays
            known = pa.array(sorted(repeated), type=pa.string())
            responses = responses.filter(pc.invert(pc.is_in(responses["response_id"], value_set=known)))
            diagnostics = diagnostics.filter(pc.invert(pc.is_in(diagnostics["response_id"], value_set=known)))
            if findings is not None:
                findings = findings.filter(pc.invert(pc.is_in(findings["response_id"], value_set=known)))
            report.duplicates += len(ids) - responses.num_rows
        self._pending_ids.update(ids)
        if self._stream is None:
            self._stream = (Stream(self._writer, self._store), report)
        self._stream[0].put(Batch(responses, diagnostics, result.slices, findings=or_empty(findings)))
        self._pending_rows += responses.num_rows
        if self._pending_rows >= self._batch_size:
            self._flush()

    def _flush(self) -> None:
        """End the batch being streamed: the writer thread commits it while parsing goes on. The batch before
        it is waited for here, so at most two are in flight and a failed write surfaces at the next flush."""
        stream, self._stream = self._stream, None
        self._pending_ids, self._pending_rows = set(), 0
        if stream is None:
            return
        stream[0].put(END)
        self.wait()
        self._in_flight = stream

    def wait(self) -> None:
        """Block until the batch in flight is stored, and count it."""
        if self._in_flight is None:
            return
        (stream, report), self._in_flight = self._in_flight, None
        result = stream.future.result()
        report.inserted += result.responses
        report.duplicates += result.duplicates
        report.diagnostics += result.diagnostics

    def close(self) -> None:
        try:
            if self._stream is not None:  # a batch cut short by a failure of the run: none of it is committed
                self._stream[0].put(ABORT)
                self._stream = None
            self.wait()
        finally:
            self._writer.shutdown(wait=True)
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)

    def _bad(self, report: SegmentReport, line: int, problem: str) -> None:
        report.bad_records += 1
        bad = BadRecord(report.path, line, problem)
        self._report.add_bad(bad)
        if self._on_bad is not None:
            self._on_bad(bad)
