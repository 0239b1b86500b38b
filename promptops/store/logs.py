"""Response logs (the record format in docs/store.md): finding the segments, reading their lines, decoding each record.

A log is a ``.jsonl`` file, a ``.jsonl.gz`` file, or a directory whose ``*.jsonl`` and ``*.jsonl.gz`` files
(recursively, hidden ones skipped) are its segments, read in path order. Reading streams fixed-size chunks and
hashes the bytes as they pass (the file as stored, i.e. compressed for .gz), so a segment's identity costs no
extra pass.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import queue
import sys
import threading
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import msgspec

from promptops.core import specs
from promptops.core.errors import PromptopsError

SEGMENT_SUFFIXES = (".jsonl", ".jsonl.gz")
MAX_TOKENS = 2**63 - 1  # the store's BIGINT
MAX_LATENCY_MS = sys.float_info.max  # finite: JSON has no infinity, but 1e400 reads as one
_CHUNK = 1 << 20
READ_AHEAD = 4  # blocks of _CHUNK bytes a segment's reader thread may hold ahead of its consumer
# A longer line is a bad record, skipped without being held: a file with no newline (a disk image, a gzip
# bomb) cannot take more memory than this.
MAX_LINE = 32 << 20
# A worker's range closes at a line end once this many bytes are in it, whatever its line count.
MAX_RANGE = 64 << 20
LINE_TOO_LONG = f"line longer than {MAX_LINE >> 20} MiB"


class LogRecord(msgspec.Struct):
    """One response log record. Unknown fields are ignored, so services may log more than this."""

    response_id: Annotated[str, msgspec.Meta(min_length=1)]
    ts: datetime  # RFC 3339; UTC when no offset is given
    contract: Annotated[str, msgspec.Meta(min_length=1)]
    rollout_id: str | None
    arm: str | None
    unit: str | None
    changed_files: list[str]
    raw: str
    model: str | None = None
    # The store's ranges (a BIGINT, a finite DOUBLE): a value outside them is a bad record here, not a
    # failed batch later (batch.check_values says the same for the Recorder).
    latency_ms: Annotated[float, msgspec.Meta(ge=0, le=MAX_LATENCY_MS)] | None = None
    tokens: Annotated[int, msgspec.Meta(ge=0, le=MAX_TOKENS)] | None = None


_DECODER = msgspec.json.Decoder(LogRecord)


def decode_record(line: bytes | memoryview) -> LogRecord | str:
    """The record on ``line``, or a one-line description of what is wrong with it."""
    return specs.decode_line(_DECODER, line)


class BatchRecord(msgspec.Struct):
    """One record of ``validate --batch``: a model's text and, optionally, what the request said."""

    raw: str
    changed_files: list[str] | None = None  # None: the --changed-files of the command
    schema_version: str | None = None
    prompt_version: str | None = None
    response_id: Any = None


BATCH_DECODER = msgspec.json.Decoder(BatchRecord)


class LogError(PromptopsError):
    """A log file or directory cannot be read."""


@dataclass(frozen=True)
class Segment:
    path: Path
    size: int

    @property
    def compressed(self) -> bool:
        return self.path.name.endswith(".gz")


def find_segments(paths: list[Path]) -> list[Segment]:
    """Each path as a segment, or the segment files under it when it is a directory."""
    found: list[Segment] = []
    for path in paths:
        if path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*")
                if p.is_file()
                and p.name.endswith(SEGMENT_SUFFIXES)
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
            found.extend(Segment(p, p.stat().st_size) for p in files)
        elif path.is_file():
            found.append(Segment(path, path.stat().st_size))
        elif path.exists():
            raise LogError(f"{path.as_posix()}: not a regular file or a directory")
        else:
            raise LogError(f"{path.as_posix()}: no such file or directory")
    return found


class _HashingReader:
    """Passes a file's bytes through while hashing them and counting how many were read."""

    def __init__(self, raw: io.RawIOBase | io.BufferedIOBase) -> None:
        self._raw = raw
        self.digest = hashlib.sha256()
        self.consumed = 0

    def read(self, size: int = -1, /) -> bytes:
        data = self._raw.read(size)
        self.digest.update(data)
        self.consumed += len(data)
        return data

    def readinto(self, buffer: bytearray, /) -> int:
        size = self._raw.readinto(buffer) or 0
        self.digest.update(memoryview(buffer)[:size])
        self.consumed += size
        return size

    def seek(self, offset: int, /) -> int:  # gzip's reader protocol names it; a forward-only stream has none
        raise OSError("log streams are read forward only")


class SegmentReader:
    """Iterates a segment's lines as (line number, bytes); afterwards ``size`` and ``sha256`` describe exactly
    the bytes that were read. ``position`` (bytes of the file consumed) drives the progress bar."""

    def __init__(self, segment: Segment, display: str) -> None:
        self.segment = segment
        self.display = display
        self._hashing: _HashingReader | None = None

    @property
    def position(self) -> int:
        return self._hashing.consumed if self._hashing is not None else 0

    @property
    def size(self) -> int:
        return self.position

    @property
    def sha256(self) -> str:
        return self._hashing.digest.hexdigest() if self._hashing is not None else hashlib.sha256().hexdigest()

    def lines(self) -> Generator[tuple[int, bytes | None]]:
        """(line number, its bytes), or (line number, None) for a line longer than MAX_LINE."""
        try:
            with self.segment.path.open("rb") as raw:
                self._hashing = _HashingReader(raw)
                # read1 hands over what one underlying read decompressed, so the lines before a damaged spot
                # in a gzip stream are yielded before the error surfaces.
                stream = gzip.GzipFile(fileobj=self._hashing, mode="rb") if self.segment.compressed else None
                yield from _split_lines(_read_ahead(self._hashing.read if stream is None else stream.read1))
        except (OSError, EOFError, zlib.error) as problem:
            reason = problem.strerror if isinstance(problem, OSError) and problem.strerror else str(problem)
            raise LogError(f"{self.display}: cannot read: {reason or type(problem).__name__}") from None

    def line_ranges(self, lines: int) -> Iterator[LineRange]:
        """The segment as consecutive ranges of ``lines`` lines (the last one may be shorter), the same
        lines ``lines()`` yields, without making an object of any line: a worker process reads and splits
        its range itself, so the text never crosses a pipe. Uncompressed segments only (a gzip stream
        cannot be entered in the middle)."""
        if self.segment.compressed:
            raise ValueError("line ranges need an uncompressed segment")
        try:
            with self.segment.path.open("rb", buffering=0) as raw:
                self._hashing = _HashingReader(raw)
                yield from _line_ranges(self._hashing, lines)
        except OSError as problem:
            raise LogError(f"{self.display}: cannot read: {problem.strerror or type(problem).__name__}") from None


@dataclass(frozen=True)
class LineRange:
    start: int  # byte offset in the segment
    length: int  # bytes, newlines included
    first_line: int  # number of its first line
    too_long: bool = False  # one line longer than MAX_LINE: a bad record, never read


def _line_ranges(stream: _HashingReader, lines: int) -> Iterator[LineRange]:
    # find() is memchr: walking the newlines one call a line costs a third of bytes.count() (a byte loop),
    # and far less than splitting the text into line objects. One buffer is reused for every block.
    buffer = bytearray(_CHUNK)
    find = buffer.find
    start = offset = 0  # the current range's first byte; the current block's first byte in the file
    line_start = 0  # the current line's first byte
    first = 1
    count = 0  # lines in the current range
    while size := stream.readinto(buffer):
        position = 0
        while (position := find(b"\n", position, size) + 1) > 0:
            end = offset + position
            if end - line_start > MAX_LINE + 1:
                if count:
                    yield LineRange(start, line_start - start, first)
                yield LineRange(line_start, end - line_start, first + count, too_long=True)
                first, count, start = first + count + 1, 0, end
            else:
                count += 1
                if count == lines or end - start >= MAX_RANGE:
                    yield LineRange(start, end - start, first)
                    first, count, start = first + count, 0, end
            line_start = end
        offset += size
    if offset - line_start > MAX_LINE:  # the final line, without a newline, is too long
        if line_start > start:
            yield LineRange(start, line_start - start, first)
        yield LineRange(line_start, offset - line_start, first + count, too_long=True)
        return
    if offset > start:
        yield LineRange(start, offset - start, first)


def read_range(path: Path, display: str, part: LineRange) -> list[memoryview]:
    """The lines of ``part`` of the uncompressed segment at ``path`` (``display`` names it in errors), as
    views into one read of the range: no line is copied."""
    try:
        with path.open("rb", buffering=0) as handle:
            handle.seek(part.start)
            data = handle.read(part.length)
    except OSError as problem:
        raise LogError(f"{display}: cannot read: {problem.strerror or type(problem).__name__}") from None
    if len(data) != part.length:
        raise LogError(f"{display}: cannot read: the file shrank while it was read")
    view = memoryview(data)
    find = data.find
    lines = []
    start = 0
    while (end := find(b"\n", start)) >= 0:
        lines.append(view[start:end])
        start = end + 1
    if start < len(data):  # an unterminated last line
        lines.append(view[start:])
    return lines


def _read_ahead(read: Callable[[int], bytes]) -> Iterator[bytes]:
    """The blocks ``read`` returns up to the end, read (hashed, decompressed) on a thread of its own at most
    READ_AHEAD blocks ahead: file reads, sha256 and zlib release the GIL, so they run beside the parser on a
    second core. An error of ``read`` is raised here after the blocks read before it."""
    blocks: queue.Queue[bytes | BaseException] = queue.Queue(maxsize=READ_AHEAD)
    stop = threading.Event()

    def hand_over(item: bytes | BaseException) -> bool:
        while not stop.is_set():
            with contextlib.suppress(queue.Full):
                blocks.put(item, timeout=0.05)
                return True
        return False

    def reader() -> None:
        try:
            while hand_over(block := read(_CHUNK)) and block:
                pass
        except BaseException as problem:  # handed to the consumer, which raises it
            hand_over(problem)

    thread = threading.Thread(target=reader, name="promptops-log-reader", daemon=True)
    thread.start()
    try:
        while True:
            item = blocks.get()
            if isinstance(item, BaseException):
                raise item
            if not item:
                return
            yield item
    finally:  # the consumer stopped early (a failed run, Ctrl-C): the reader stops at its next block
        stop.set()
        thread.join()


def _split_lines(blocks: Iterator[bytes]) -> Iterator[tuple[int, bytes | None]]:
    number = 0
    rest = b""
    skipping = False  # inside a line longer than MAX_LINE, already reported
    for chunk in blocks:
        parts = (rest + chunk).split(b"\n") if rest else chunk.split(b"\n")
        rest = parts.pop()
        if skipping and parts:  # the long line ends here
            parts.pop(0)
            skipping = False
        for line in parts:
            number += 1
            yield number, (line if len(line) <= MAX_LINE else None)
        if len(rest) > MAX_LINE and not skipping:
            number += 1
            yield number, None
            skipping = True
        if skipping:
            rest = b""
    if rest:
        yield number + 1, rest


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, as ``SegmentReader`` computes it while reading."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
