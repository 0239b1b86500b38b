"""OpenTelemetry spans as response logs: OTLP/JSON files, as the OpenTelemetry Collector's file exporter
writes them (one ``ExportTraceServiceRequest`` per line), turned into the same log records the JSONL reader
decodes, then ingested by the JSONL path itself (``ingest_logs``): one place decides what is stored.

Each model-call span becomes one log record (the mapping is in ``docs/integrations.md``):

- ``raw``: the output text, from ``gen_ai.output.messages`` (the text parts of the first output message), or
  the older ``gen_ai.completion`` attribute or span event, or ``gen_ai.completion.0.content``;
- ``model``: ``gen_ai.request.model`` (else ``gen_ai.response.model``); ``tokens``: input plus output tokens
  (``gen_ai.usage.input_tokens``/``output_tokens``, or the older ``prompt_tokens``/``completion_tokens``);
- ``ts``: the span's end time; ``latency_ms``: end minus start;
- ``promptops.contract``, ``promptops.response_id`` (else ``gen_ai.response.id``), ``promptops.rollout_id``,
  ``promptops.arm``, ``promptops.unit`` and ``promptops.changed_files`` (a string array; none means ``[]``).

A span is a model call when its ``gen_ai.operation.name`` is ``chat``, ``text_completion`` or
``generate_content``, or, without an operation name, when it names a request model or carries
``promptops.contract``. Other spans are skipped and counted. A model call without its contract, response id or
output text is a bad record, reported as ``FILE:LINE: span N: problem`` (N counts the spans of that line from
1). A response's ``source_line`` in the store is the span's ordinal among all the spans of its file.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import tempfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec

from promptops.store.ingest import DEFAULT_INGEST_BATCH, BadRecord, IngestReport, SegmentReport, ingest_logs
from promptops.store.logs import LogError
from promptops.store.policies import ParserCache
from promptops.store.store import Store

OTLP_SUFFIXES = (".json", ".jsonl", ".json.gz", ".jsonl.gz")
MODEL_CALL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_PROMPTOPS = "promptops."
_ENCODER = msgspec.json.Encoder()
_KEPT_BAD = 1000  # more than any report shows


@dataclass
class OtlpIngestReport(IngestReport):
    """An ``IngestReport`` of the converted records, plus what the conversion itself saw."""

    spans: int = 0  # every span read
    spans_skipped: int = 0  # not a model call
    bad_spans: int = 0  # lines that are no request, model calls lacking what a record needs

    @property
    def bad_records(self) -> int:
        return self._sum("bad_records") + self.bad_spans

    def to_dict(self) -> dict[str, object]:
        data = super().to_dict()
        data["bad_records"] = self.bad_records
        data["records"] = self.records + self.bad_spans
        data["spans"] = self.spans
        data["spans_skipped"] = self.spans_skipped
        return data


@dataclass(frozen=True)
class SpanRecord:
    """A model-call span as a response log record (the JSONL fields)."""

    response_id: str
    ts: str
    contract: str
    rollout_id: str | None
    arm: str | None
    unit: str | None
    changed_files: list[str]
    raw: str
    model: str | None
    latency_ms: float | None
    tokens: int | None


@dataclass(frozen=True)
class Span:
    line: int  # the request's line in the file
    index: int  # the span's position among that line's spans, from 1
    outcome: SpanRecord | str | None  # the record; a problem; None when the span is no model call


@dataclass
class _Converted:
    source: Path
    display: str
    jsonl: Path
    places: list[tuple[int, int]] = field(default_factory=list)  # record line -> (request line, span index)


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
    content); a file that cannot be read is reported in ``failed`` and stores nothing.
    """
    report = OtlpIngestReport()
    placed_bad: list[BadRecord] = []  # the first bad records, at their places in the trace files

    def tell(found: BadRecord) -> None:
        if len(placed_bad) < _KEPT_BAD:
            placed_bad.append(found)
        if on_bad is not None:
            on_bad(found)

    def bad(display: str, line: int, problem: str) -> None:
        report.bad_spans += 1
        tell(BadRecord(display, line, problem))

    with tempfile.TemporaryDirectory(prefix="promptops-otlp-") as scratch:
        converted: list[_Converted] = []
        for number, source in enumerate(find_otlp_files(paths)):
            item = _Converted(source, relative(source), Path(scratch) / f"{number}.jsonl")
            try:
                _convert(item, report, bad)
            except LogError as problem:
                report.segments.append(SegmentReport(item.display, error=str(problem)))
                continue
            converted.append(item)
            if on_progress is not None:
                on_progress(source.stat().st_size)
        by_path = {item.jsonl: item for item in converted}
        by_display = {item.display: item for item in converted}

        def placed(found: BadRecord) -> None:  # a record line of the converted file -> its span in the source
            line, index = by_display[found.source].places[found.line - 1]
            tell(BadRecord(found.source, line, f"span {index}: {found.problem}"))  # the ingest's report counts it

        inner = ingest_logs(
            [item.jsonl for item in converted],
            store,
            parsers,
            relative=lambda path: by_path[path].display,
            batch_size=batch_size,
            rescan=rescan,
            on_bad=placed,
            processes=processes,
        )
    _take_over(report, inner, placed_bad)
    return report


def _take_over(report: OtlpIngestReport, inner: IngestReport, placed_bad: list[BadRecord]) -> None:
    """Whatever the ingest's report records besides its segments is the OTLP report's too; a sample of bad
    records it keeps names the places in the trace files, not in the converted records."""
    for spec in dataclasses.fields(inner):
        if spec.name != "segments":
            setattr(report, spec.name, getattr(inner, spec.name))
    report.segments.extend(inner.segments)
    sample, add = getattr(report, "bad_sample", None), getattr(report, "add_bad", None)
    if isinstance(sample, list) and callable(add):
        sample.clear()
        for found in placed_bad:
            add(found)


def find_otlp_files(paths: list[Path]) -> list[Path]:
    """Each file path, and the OTLP files under each directory (recursively, hidden ones skipped)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file()
                    and p.name.endswith(OTLP_SUFFIXES)
                    and not any(part.startswith(".") for part in p.relative_to(path).parts)
                )
            )
        elif path.is_file():
            found.append(path)
        else:
            raise LogError(f"{path.as_posix()}: no such file or directory")
    return found


def _convert(item: _Converted, report: OtlpIngestReport, bad: Callable[[str, int, str], None]) -> None:
    # One output line per span, in file order (blank for spans that are no record), so a stored response's
    # source_line is its span's ordinal in the file.
    with item.jsonl.open("wb") as out:
        for span in read_spans(item.source, item.display):
            if isinstance(span, tuple):  # a line that holds no request
                bad(item.display, span[0], span[1])
                continue
            report.spans += 1
            if span.outcome is None:
                report.spans_skipped += 1
                out.write(b"\n")
            elif isinstance(span.outcome, str):
                bad(item.display, span.line, f"span {span.index}: {span.outcome}")
                out.write(b"\n")
            else:
                out.write(_ENCODER.encode(span.outcome) + b"\n")
            item.places.append((span.line, span.index))


def read_spans(path: Path, display: str) -> Iterator[Span | tuple[int, str]]:
    """The spans of an OTLP/JSON file, each as a record, a problem or a skip; (line, problem) for a line that
    is not an export request."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    request = msgspec.json.decode(line)
                except msgspec.DecodeError as problem:
                    yield number, f"not valid JSON ({problem})"
                    continue
                if not isinstance(request, dict) or not isinstance(
                    _get(request, "resourceSpans", "resource_spans"), list
                ):
                    yield number, "not an OTLP ExportTraceServiceRequest (no resourceSpans list)"
                    continue
                for index, span in enumerate(_spans(request), 1):
                    yield Span(number, index, span_record(span))
    except (OSError, EOFError, zlib.error) as problem:
        reason = problem.strerror if isinstance(problem, OSError) and problem.strerror else str(problem)
        raise LogError(f"{display}: cannot read: {reason or type(problem).__name__}") from None


def _spans(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for resource in _get(request, "resourceSpans", "resource_spans"):
        for scope in _get(resource, "scopeSpans", "scope_spans") or []:
            for span in scope.get("spans") or []:
                if isinstance(span, dict):
                    yield span


def span_record(span: dict[str, Any]) -> SpanRecord | str | None:
    """The log record of a model-call span, a one-line problem when it lacks a needed value, or None when
    it is not a model call."""
    attributes = _attributes(span.get("attributes"))
    operation = attributes.get("gen_ai.operation.name")
    if operation is not None:
        if operation not in MODEL_CALL_OPERATIONS:
            return None
    elif "gen_ai.request.model" not in attributes and "promptops.contract" not in attributes:
        return None
    contract = _text(attributes, "promptops.contract")
    response_id = _text(attributes, "promptops.response_id") or _text(attributes, "gen_ai.response.id")
    raw = output_text(attributes, span.get("events") or [])
    start, end = (
        _nanos(_get(span, "startTimeUnixNano", "start_time_unix_nano")),
        _nanos(_get(span, "endTimeUnixNano", "end_time_unix_nano")),
    )
    for value, name in (
        (contract, "attribute 'promptops.contract'"),
        (response_id, "attribute 'promptops.response_id' (or 'gen_ai.response.id')"),
        (raw, "the output text ('gen_ai.output.messages' or 'gen_ai.completion')"),
        (end, "an end time"),
    ):
        if not value:
            return f"missing {name}"
    assert contract and response_id and raw is not None and end
    changed = attributes.get("promptops.changed_files", [])
    if not isinstance(changed, list) or not all(isinstance(path, str) for path in changed):
        return "attribute 'promptops.changed_files': expected an array of strings"
    return SpanRecord(
        response_id=response_id,
        ts=_rfc3339(end),
        contract=contract,
        rollout_id=_text(attributes, "promptops.rollout_id"),
        arm=_text(attributes, "promptops.arm"),
        unit=_text(attributes, "promptops.unit"),
        changed_files=changed,
        raw=raw,
        model=_text(attributes, "gen_ai.request.model") or _text(attributes, "gen_ai.response.model"),
        latency_ms=(end - start) / 1e6 if start else None,
        tokens=_tokens(attributes),
    )


def output_text(attributes: dict[str, Any], events: list[Any]) -> str | None:
    """The model's output text: the current semantic conventions first, then the older forms."""
    messages = attributes.get("gen_ai.output.messages")
    if messages is not None:
        return _message_text(_maybe_json(messages))
    for name in ("gen_ai.completion", "gen_ai.completion.0.content"):
        if name in attributes:
            return _completion(attributes[name])
    for event in events:
        if isinstance(event, dict) and event.get("name") == "gen_ai.content.completion":
            found = _attributes(event.get("attributes")).get("gen_ai.completion")
            if found is not None:
                return _completion(found)
    return None


def _message_text(messages: Any) -> str | None:
    """The text parts of the first assistant message (the first choice), joined."""
    if not isinstance(messages, list):
        return None
    for message in messages:
        if isinstance(message, dict) and message.get("role", "assistant") == "assistant":
            parts = message.get("parts")
            if isinstance(parts, list):
                texts = [
                    p["content"]
                    for p in parts
                    if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str)
                ]
                return "".join(texts) if texts else None
            content = message.get("content")
            return content if isinstance(content, str) else None
    return None


def _completion(value: Any) -> str | None:
    # The older attribute holds either the text itself or a JSON list of messages with "content".
    if not isinstance(value, str):
        return None
    decoded = _maybe_json(value)
    if isinstance(decoded, list) and decoded and all(isinstance(m, dict) for m in decoded):
        return _message_text(decoded)
    return value


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return msgspec.json.decode(value)
        except msgspec.DecodeError:
            return value
    return value


def _tokens(attributes: dict[str, Any]) -> int | None:
    counts = [
        attributes.get(new, attributes.get(old))
        for new, old in (
            ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
            ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
        )
    ]
    numbers = [int(c) for c in counts if isinstance(c, int | str) and str(c).lstrip("-").isdigit()]
    return sum(numbers) if numbers else None


def _text(attributes: dict[str, Any], name: str) -> str | None:
    value = attributes.get(name)
    return value if isinstance(value, str) and value else None


def _rfc3339(nanos: int) -> str:
    seconds, rest = divmod(nanos, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000).isoformat()


def _nanos(value: Any) -> int:
    # OTLP/JSON writes 64-bit integers as strings.
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _get(data: dict[str, Any], camel: str, snake: str) -> Any:
    return data[camel] if camel in data else data.get(snake)


def _attributes(pairs: Any) -> dict[str, Any]:
    """OTLP ``KeyValue`` list -> plain dict."""
    found: dict[str, Any] = {}
    if isinstance(pairs, list):
        for pair in pairs:
            if isinstance(pair, dict) and isinstance(pair.get("key"), str):
                found[pair["key"]] = _value(pair.get("value"))
    return found


def _value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as a plain Python value."""
    if not isinstance(value, dict):
        return None
    for kind, convert in _KINDS:
        if kind in value:
            return convert(value[kind])
    return None


def _array(value: Any) -> list[Any]:
    values = value.get("values", []) if isinstance(value, dict) else []
    return [_value(item) for item in values] if isinstance(values, list) else []


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _bytes(value: Any) -> bytes | None:
    try:
        return base64.b64decode(value)
    except (TypeError, ValueError):
        return None


_KINDS: tuple[tuple[str, Callable[[Any], Any]], ...] = (
    ("stringValue", lambda v: v if isinstance(v, str) else None),
    ("boolValue", bool),
    ("intValue", _int),
    ("doubleValue", lambda v: float(v) if isinstance(v, int | float | str) else None),
    ("arrayValue", _array),
    ("kvlistValue", lambda v: _attributes(v.get("values")) if isinstance(v, dict) else None),
    ("bytesValue", _bytes),
)
