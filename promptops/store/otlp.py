"""OpenTelemetry spans as response logs: OTLP/JSON files, as the OpenTelemetry Collector's file exporter
writes them (one ``ExportTraceServiceRequest`` per line), streamed into the JSONL ingest (``ingest_segments``)
as the log records their model-call spans give (``otlp_spans``): one place decides what is stored.

Lines are read as the JSONL path reads them (``SegmentReader``: chunked, through gzip too, the file hashed as
it passes, no line over ``logs.MAX_LINE`` ever held), and each span is converted as it is read, so nothing is
copied to disk and memory does not grow with the file. Each level of a request is decoded on its own
(``msgspec.Raw`` skips what a level does not need), so a broken span, scope or resource spoils only itself:

- a line that is not an export request (not JSON, nested too deeply for the decoder, longer than
  ``MAX_LINE``, no ``resourceSpans`` list) is one bad record ``FILE:LINE: problem``;
- a ``resourceSpans`` or ``scopeSpans`` item that cannot be read is one bad record ``FILE:LINE: resourceSpans
  item R[, scopeSpans item S]: problem``, and the other items of its line are read;
- a model-call span that cannot give a record (malformed, or lacking a needed value), or whose record the
  ingest finds bad (an unknown contract, ...), is a bad record ``FILE:LINE: span N (id ID): problem``: N
  counts the spans of that line from 1, ID is the span's ``spanId`` as written (left out when unusable).

A response's ``source_line`` in the store is the span's ordinal among all the spans of its file.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from promptops.core.escape import unreadable
from promptops.store.chunks import ChunkResult, parse_chunk, parse_chunk_in_worker
from promptops.store.ingest import DEFAULT_INGEST_BATCH, BadRecord, IngestReport, ingest_segments
from promptops.store.logs import LINE_TOO_LONG, LogError, Segment, SegmentReader
from promptops.store.otlp_spans import SpanRecord, span_record
from promptops.store.policies import ParserCache
from promptops.store.store import Store

OTLP_SUFFIXES = (".json", ".jsonl", ".json.gz", ".jsonl.gz")
_ENCODER = msgspec.json.Encoder()
_SPAN_ID = re.compile(r"[0-9A-Za-z+/=_-]{1,64}")  # hex as OTLP/JSON writes it, or protobuf's base64


@dataclass
class OtlpIngestReport(IngestReport):
    """An ``IngestReport`` of the spans' records, plus what reading the spans saw."""

    spans: int = 0  # every span read
    spans_skipped: int = 0  # not a model call

    def to_dict(self) -> dict[str, object]:
        data = super().to_dict()
        data["spans"] = self.spans
        data["spans_skipped"] = self.spans_skipped
        return data


def ingest_otlp(
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
) -> OtlpIngestReport:
    """Ingest the OTLP/JSON trace files at ``paths`` (files or directories of them) into ``store``.

    Every guarantee of ``ingest_logs`` holds (idempotent on response ids, whole batches, files remembered by
    their bytes as stored, bad records reported and counted, a file that cannot be read reported in ``failed``
    with what was read before the damage kept).
    """
    report = OtlpIngestReport()
    ingest_segments(
        otlp_segments(paths),
        store,
        parsers,
        relative=relative,
        batch_size=batch_size,
        rescan=rescan,
        on_bad=on_bad,
        on_progress=on_progress,
        processes=processes,
        open_source=lambda segment, display: SpanSource(segment, display, report),
        report=report,
    )
    return report


def otlp_segments(paths: list[Path]) -> list[Segment]:
    """Each file path, and the OTLP files under each directory (recursively, hidden ones skipped)."""
    found: list[Segment] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                Segment(p, p.stat().st_size)
                for p in sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file()
                    and p.name.endswith(OTLP_SUFFIXES)
                    and not any(part.startswith(".") for part in p.relative_to(path).parts)
                )
            )
        elif path.is_file():
            found.append(Segment(path, path.stat().st_size))
        elif path.exists():
            raise LogError(f"{path.as_posix()}: not a regular file or a directory")
        else:
            raise LogError(f"{path.as_posix()}: no such file or directory")
    return found


def otlp_bytes(paths: list[Path]) -> int:
    """The size of everything ``ingest_otlp`` would read (for a progress bar)."""
    return sum(segment.size for segment in otlp_segments(paths))


@dataclass
class SpanChunk:
    """Up to a chunk's worth of a trace file's records, with where each came from."""

    lines: list[tuple[int, bytes | None]] = field(default_factory=list)  # (span ordinal in the file, record)
    places: dict[int, tuple[int, int, str]] = field(default_factory=dict)  # ordinal -> (item, line, "span N")
    problems: list[tuple[int, int, str]] = field(default_factory=list)  # (item, line, problem) found reading
    items: int = 0

    def record(self, ordinal: int, line: int, where: str, data: bytes) -> None:
        self.lines.append((ordinal, data))
        self.places[ordinal] = (self.items, line, where)
        self.items += 1

    def problem(self, line: int, problem: str) -> None:
        self.problems.append((self.items, line, problem))
        self.items += 1

    def parse(self, display: str, parsers: ParserCache, skip: frozenset[str]) -> ChunkResult:
        return self._placed(parse_chunk(self.lines, display, parsers, skip))

    def parse_in_worker(self, display: str, skip: frozenset[str]) -> ChunkResult:
        return self._placed(parse_chunk_in_worker(self.lines, display, skip))

    def _placed(self, result: ChunkResult) -> ChunkResult:
        """The ingest's bad records at their spans' places, merged in file order with the problems found while
        reading, which count as records too."""
        found = [
            (item, line, f"{where}: {problem}")
            for ordinal, problem in result.bad
            for item, line, where in (self.places[ordinal],)
        ]
        merged = sorted(found + self.problems, key=lambda entry: entry[0])
        return dataclasses.replace(
            result, records=result.records + len(self.problems), bad=[(line, problem) for _, line, problem in merged]
        )


class SpanSource:
    """A trace file as chunks of records (``chunks.ChunkSource``), counting its spans in ``report``."""

    def __init__(self, segment: Segment, display: str, report: OtlpIngestReport) -> None:
        self._reader = SegmentReader(segment, display)
        self._report = report

    @property
    def position(self) -> int:
        return self._reader.position

    @property
    def size(self) -> int:
        return self._reader.size

    @property
    def sha256(self) -> str:
        return self._reader.sha256

    def chunks(self, size: int) -> Iterator[SpanChunk]:
        chunk = SpanChunk()
        ordinal = 0
        report = self._report
        try:
            for number, line in self._reader.lines():
                for where, outcome in read_request(line):
                    if where is None:  # the line, a resource or a scope could not be read
                        chunk.problem(number, outcome if isinstance(outcome, str) else "")
                    else:
                        ordinal += 1
                        report.spans += 1
                        if outcome is None:
                            report.spans_skipped += 1
                            continue
                        if isinstance(outcome, str):
                            chunk.problem(number, f"{where}: {outcome}")
                        else:
                            chunk.record(ordinal, number, where, _ENCODER.encode(outcome))
                    if chunk.items >= size:
                        yield chunk
                        chunk = SpanChunk()
        except LogError:
            if chunk.items:  # what was read before the damage is kept
                yield chunk
            raise
        if chunk.items:
            yield chunk


# OTLP/JSON names fields in camelCase; the proto's snake_case names are accepted too.
class _Request(msgspec.Struct):
    resourceSpans: list[msgspec.Raw] | None = None
    resource_spans: list[msgspec.Raw] | None = None


class _Resource(msgspec.Struct):
    scopeSpans: list[msgspec.Raw] | None = None
    scope_spans: list[msgspec.Raw] | None = None


class _Scope(msgspec.Struct):
    spans: list[msgspec.Raw] | None = None


class _SpanId(msgspec.Struct):
    spanId: object = None
    span_id: object = None


Outcome = SpanRecord | str | None


def read_request(line: bytes | None) -> Iterator[tuple[str | None, Outcome]]:
    """What one line gives: ("span N (id ID)", its record, problem or None when no model call) per span, and
    (None, problem) for a line, resource or scope that cannot be read. A blank line gives nothing."""
    if line is None:
        yield None, LINE_TOO_LONG
        return
    if not line.strip():
        return
    request = _decode(line, _Request)
    if isinstance(request, _Failed) and request.problem.startswith(("not valid JSON", "not valid UTF-8")):
        yield None, request.problem
        return
    resources = None
    if isinstance(request, _Request):
        resources = request.resourceSpans if request.resourceSpans is not None else request.resource_spans
    if resources is None:
        yield None, "not an OTLP ExportTraceServiceRequest (no resourceSpans list)"
        return
    index = 0
    for r, raw_resource in enumerate(resources, 1):
        resource = _decode(raw_resource, _Resource)
        if not isinstance(resource, _Resource):
            yield None, f"resourceSpans item {r}: {_problem(resource)}"
            continue
        scopes = resource.scopeSpans if resource.scopeSpans is not None else resource.scope_spans
        for s, raw_scope in enumerate(scopes or [], 1):
            scope = _decode(raw_scope, _Scope)
            if not isinstance(scope, _Scope):
                yield None, f"resourceSpans item {r}, scopeSpans item {s}: {_problem(scope)}"
                continue
            for raw_span in scope.spans or []:
                index += 1
                span = _decode(raw_span, None)
                if isinstance(span, _Failed):
                    yield f"span {index}{_id_of(raw_span, None)}", span.problem
                else:
                    yield f"span {index}{_id_of(raw_span, span)}", _converted(span)


def _converted(span: object) -> Outcome:
    try:
        return span_record(span)
    except MemoryError:
        raise
    except Exception as problem:  # whatever else fails on one span makes that span bad, as for a log record
        return unreadable(problem)


@dataclass(frozen=True)
class _Failed:
    problem: str


def _decode(data: bytes | msgspec.Raw, kind: type[msgspec.Struct] | None) -> object:
    """``data`` decoded as ``kind``, or as plain JSON values when None; a ``_Failed`` when it cannot be."""
    what = "line" if isinstance(data, bytes) else "span" if kind is None else "item"
    try:
        return msgspec.json.decode(data) if kind is None else msgspec.json.decode(data, type=kind)
    except msgspec.ValidationError as problem:  # typed: a wrong type; plain: a number out of every range
        if kind is not None:
            return _Failed(_wrong_type(str(problem)))
        found = str(problem).partition(" - at ")[0]  # the place it names is no JSON path
        return _Failed(f"not valid JSON ({found[:1].lower()}{found[1:]})")
    except msgspec.DecodeError as problem:
        return _Failed(f"not valid JSON ({problem})")
    except RecursionError:
        return _Failed("not valid JSON (nested too deeply)")
    except UnicodeDecodeError:  # msgspec checks UTF-8 only inside the strings it decodes, and names no place
        try:
            bytes(data).decode("utf-8")
        except UnicodeDecodeError as problem:
            return _Failed(f"not valid UTF-8 (byte {problem.start + 1} of the {what})")
        return _Failed("not valid UTF-8")


_WRONG_TYPE = re.compile(r"Expected `(.+?)`, got `(.+?)`(?: - at `\$\.?(.*)`)?")


def _wrong_type(message: str) -> str:
    # msgspec says "Expected `array | null`, got `object` - at `$.scopeSpans`"
    match = _WRONG_TYPE.fullmatch(message)
    if match is None:
        return message[:1].lower() + message[1:]
    expected, got, where = match.groups()
    text = f"expected {expected.removesuffix(' | null')}, not {got}"
    return f"field {where!r}: {text}" if where else text


def _problem(failed: object) -> str:
    return failed.problem if isinstance(failed, _Failed) else "not readable"


def _id_of(raw: msgspec.Raw, span: object) -> str:
    """`` (id ID)`` when the span has a usable ``spanId``; read on its own when the span cannot be decoded."""
    if isinstance(span, dict):
        value = span["spanId"] if "spanId" in span else span.get("span_id")
    else:
        try:
            found = msgspec.json.decode(raw, type=_SpanId)
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            return ""
        value = found.spanId if found.spanId is not None else found.span_id
    return f" (id {value})" if isinstance(value, str) and _SPAN_ID.fullmatch(value) else ""
