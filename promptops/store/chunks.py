"""Turning a chunk of log lines into columnar rows: the work ingest does per record, in this process or in
worker processes (this module is what they import).

A chunk is at most a few thousand lines of one segment, so only that many raw texts are ever held.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pyarrow as pa

from promptops.core.errors import PromptopsError
from promptops.core.escape import unreadable
from promptops.parsing import ChangedFiles
from promptops.store.batch import BatchBuilder
from promptops.store.logs import LINE_TOO_LONG, LineRange, decode_record, read_range
from promptops.store.nopandas import skip_pandas_probe
from promptops.store.policies import ParserCache
from promptops.store.values import EDGE_YEARS, check_ts


@dataclass(frozen=True)
class ChunkResult:
    responses: pa.Table
    diagnostics: pa.Table
    slices: pa.Table  # the slices the diagnostics name by number (batch.SLICE_SCHEMA)
    records: int  # non-empty lines
    duplicates: int  # ids repeated inside the chunk, or in ``skip``
    bad: list[tuple[int, str]]  # (line, problem)
    slots: dict[tuple[str, str | None, str | None], int]  # records read per (contract, rollout_id, arm)
    findings: pa.Table | None = None  # the kept findings with their ids (findings.FINDING_SCHEMA); None: none


def parse_chunk(
    lines: Iterable[tuple[int, bytes | memoryview | None]],
    display: str,
    parsers: ParserCache,
    skip: frozenset[str] = frozenset(),
) -> ChunkResult:
    """Decode, parse and tabulate ``lines`` (line number, text) of the segment ``display``.

    Ids in ``skip`` (already stored) are counted as duplicates without being parsed. A line given as None
    was too long to read (logs.MAX_LINE): a bad record.
    """
    builder = BatchBuilder()
    add = builder.add
    slot_of = parsers.slot
    bad: list[tuple[int, str]] = []
    slots: Counter[tuple[str, str | None, str | None]] = Counter()
    records = skipped = 0
    for number, line in lines:
        if line is None:
            records += 1
            bad.append((number, LINE_TOO_LONG))
            continue
        if not line:
            continue
        record = decode_record(line)
        if isinstance(record, str):
            # A blank line is no record; it never decodes, so only lines that fail are checked (and a
            # memoryview has no isspace()).
            if bytes(line).isspace():
                continue
            records += 1
            bad.append((number, record))
            continue
        records += 1
        if skip and record.response_id in skip:
            skipped += 1
            continue
        key = (record.contract, record.rollout_id, record.arm)
        slots[key] += 1
        slot = slot_of(*key)  # a broken contract or plan stops the run: it is no fault of this record
        if slot is None:
            bad.append((number, f"unknown contract {record.contract!r} (no versions/{record.contract}/)"))
            continue
        parser, schema_version, prompt_version = slot
        if record.ts.year in EDGE_YEARS:
            try:
                check_ts(record.ts)
            except ValueError as problem:
                bad.append((number, str(problem)))
                continue
        try:  # whatever fails on one record makes that record bad, and the rest go on
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
                parser.contract,
            )
        except MemoryError:
            raise
        except Exception as problem:
            bad.append((number, unreadable(problem)))
    batch = builder.take()
    return ChunkResult(
        batch.responses,
        batch.diagnostics,
        batch.slices,
        records,
        batch.duplicates + skipped,
        bad,
        dict(slots),
        batch.findings,
    )


class SourceChunk(Protocol):
    """Records read by a ``ChunkSource``, and how they are parsed (in this process or in a worker)."""

    @property
    def lines(self) -> list[tuple[int, bytes | None]]: ...  # the records as log lines, numbered as stored

    def parse(self, display: str, parsers: ParserCache, skip: frozenset[str]) -> ChunkResult: ...

    def parse_in_worker(self, display: str, skip: frozenset[str]) -> ChunkResult: ...


class ChunkSource(Protocol):
    """A segment whose records come from something other than its lines (an OTLP trace file): chunks of
    records, and the file's bytes consumed as ``SegmentReader`` counts and hashes them."""

    @property
    def position(self) -> int: ...

    @property
    def size(self) -> int: ...

    @property
    def sha256(self) -> str: ...

    def chunks(self, size: int) -> Iterator[SourceChunk]: ...


def too_long(part: LineRange) -> ChunkResult:
    """The result of a range holding one line too long to read: a bad record and nothing else."""
    builder = BatchBuilder()
    batch = builder.take()
    return ChunkResult(batch.responses, batch.diagnostics, batch.slices, 1, 0, [(part.first_line, LINE_TOO_LONG)], {})


# ---- worker processes ----------------------------------------------------------------------------------

_WORKER_PARSERS: ParserCache | None = None


def start_worker(parsers: ParserCache, parent: int) -> None:
    """Set up a parser worker of the ingest process ``parent`` (its pid, as the parent saw it)."""
    global _WORKER_PARSERS
    _WORKER_PARSERS = parsers
    skip_pandas_probe()
    # Ctrl-C reaches the whole process group: the ingest process handles it (and stops its workers); a
    # worker's own KeyboardInterrupt would only print a traceback.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A worker whose ingest process died (even by SIGKILL) would wait forever for work: leave with it. The
    # parent's pid comes from the parent: had it died before this ran, getppid() here would already name
    # the process that adopted the worker, and the worker would never leave.
    threading.Thread(target=_exit_with_parent, args=(parent,), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.2)
    os._exit(3)


def parse_chunk_in_worker(
    lines: Iterable[tuple[int, bytes | memoryview | None]], display: str, skip: frozenset[str]
) -> ChunkResult:
    assert _WORKER_PARSERS is not None, "start_worker was not run"
    try:
        return parse_chunk(lines, display, _WORKER_PARSERS, skip)
    except PromptopsError as problem:
        # Subclasses such as ContractError take several arguments and do not survive the trip back to the
        # ingest process; their one-line message is all it needs.
        raise PromptopsError(str(problem)) from None


def parse_range_in_worker(path: Path, display: str, part: LineRange, skip: frozenset[str]) -> ChunkResult:
    """``parse_chunk_in_worker`` for lines the worker reads from the segment file itself."""
    lines = read_range(path, display, part)  # a LogError reaches the ingest process as it is
    return parse_chunk_in_worker(enumerate(lines, part.first_line), display, skip)
