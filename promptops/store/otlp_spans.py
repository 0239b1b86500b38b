"""One OTLP/JSON span as a response log record (the mapping is in docs/integrations.md).

- ``raw``: the output text, from ``gen_ai.output.messages`` (the text parts of the first output message), or
  the older ``gen_ai.completion`` attribute or span event, or ``gen_ai.completion.0.content``;
- ``model``: ``gen_ai.request.model`` (else ``gen_ai.response.model``); ``tokens``: input plus output tokens
  (``gen_ai.usage.input_tokens``/``output_tokens``, or the older ``prompt_tokens``/``completion_tokens``);
- ``ts``: the span's end time; ``latency_ms``: end minus start;
- ``promptops.contract``, ``promptops.response_id`` (else ``gen_ai.response.id``), ``promptops.rollout_id``,
  ``promptops.arm``, ``promptops.unit`` and ``promptops.changed_files`` (a string array; none means ``[]``).

A span is a model call when its ``gen_ai.operation.name`` is ``chat``, ``text_completion`` or
``generate_content``, or, without an operation name, when it names a request model or carries
``promptops.contract``; other spans are skipped, unread beyond those three attributes. A model call is read
strictly: a value that breaks the OTLP/JSON encoding (a ``doubleValue`` that is no number, an ``intValue``
outside int64, a time that is no unsigned 64-bit count of nanoseconds, ...) or lacks what a record needs
makes the span a problem, described in one line; nothing about one span raises.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

MODEL_CALL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
MAX_NESTING = 64  # AnyValue levels in one attribute; GenAI messages need about five
_INT64 = (-(2**63), 2**63 - 1)
_FIXED64 = 2**64  # OTLP times are fixed64 nanoseconds since the epoch: at most year 2554
_INTEGER = re.compile(r"-?[0-9]{1,20}")  # ASCII digits only: str.isdigit() also takes "²" and "٣"
_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,4})?")
_DOUBLE_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}  # protobuf's JSON mapping
_IDENTIFYING = ("gen_ai.operation.name", "gen_ai.request.model", "promptops.contract")


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


class SpanProblem(Exception):
    """What makes a model-call span unusable, in one line."""


def shown(value: Any, limit: int = 40) -> str:
    """A value as it may appear in a one-line message: repr (control characters escaped), cut short."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def span_record(span: Any) -> SpanRecord | str | None:
    """The log record of a model-call span, a one-line problem when it cannot give one, or None when it is
    not a model call."""
    try:
        return _record(span)
    except SpanProblem as problem:
        return str(problem)


def _record(span: Any) -> SpanRecord | None:
    if not isinstance(span, dict):
        raise SpanProblem(f"not an object but {_kind(span)}")
    pairs = _pairs(span.get("attributes"), strict=False)
    found = {name: _value(pairs[name], name, 0) for name in _IDENTIFYING if name in pairs}
    operation = found.get("gen_ai.operation.name")
    if operation is not None:
        if not isinstance(operation, str):
            raise SpanProblem(f"attribute 'gen_ai.operation.name': expected a string, not {_kind(operation)}")
        if operation not in MODEL_CALL_OPERATIONS:
            return None
    elif found.get("gen_ai.request.model") is None and found.get("promptops.contract") is None:
        return None
    # A model call: every attribute must be well-formed, read or not, as a receiver would require.
    attributes = _attributes(span.get("attributes"), "attribute")
    contract = _text(attributes, "promptops.contract")
    response_id = _text(attributes, "promptops.response_id") or _text(attributes, "gen_ai.response.id")
    raw = output_text(attributes, _events(span.get("events")))
    start = _nanos(span, "startTimeUnixNano", "start_time_unix_nano", "start time")
    end = _nanos(span, "endTimeUnixNano", "end_time_unix_nano", "end time")
    for value, name in (
        (contract, "attribute 'promptops.contract'"),
        (response_id, "attribute 'promptops.response_id' (or 'gen_ai.response.id')"),
        (raw, "the output text ('gen_ai.output.messages' or 'gen_ai.completion')"),
        (end, "an end time"),
    ):
        if not value:
            raise SpanProblem(f"missing {name}")
    assert contract and response_id and raw is not None and end
    changed = attributes.get("promptops.changed_files", [])
    if not isinstance(changed, list) or not all(isinstance(path, str) for path in changed):
        raise SpanProblem("attribute 'promptops.changed_files': expected an array of strings")
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


def output_text(attributes: dict[str, Any], events: list[dict[str, Any]]) -> str | None:
    """The model's output text: the current semantic conventions first, then the older forms."""
    messages = attributes.get("gen_ai.output.messages")
    if messages is not None:
        return _message_text(_maybe_json(messages))
    for name in ("gen_ai.completion", "gen_ai.completion.0.content"):
        if name in attributes:
            return _completion(attributes[name])
    for event in events:
        if event.get("name") == "gen_ai.content.completion":
            found = _attributes(event.get("attributes"), "event attribute").get("gen_ai.completion")
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
        except (msgspec.DecodeError, RecursionError):  # not JSON after all: the text itself
            return value
    return value


def _tokens(attributes: dict[str, Any]) -> int | None:
    numbers = []
    for new, old in (
        ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
        ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    ):
        name = new if new in attributes else old
        count = attributes.get(name)
        if count is None:
            continue
        if isinstance(count, str) and _INTEGER.fullmatch(count):
            count = int(count)
        if not isinstance(count, int) or isinstance(count, bool):
            raise SpanProblem(f"attribute {name!r}: expected a token count, not {shown(count)}")
        numbers.append(count)
    return sum(numbers) if numbers else None


def _text(attributes: dict[str, Any], name: str) -> str | None:
    value = attributes.get(name)
    return value if isinstance(value, str) and value else None


def _nanos(span: dict[str, Any], camel: str, snake: str, name: str) -> int:
    """A span time: OTLP/JSON writes fixed64 as a decimal string (a number is accepted too); 0 when absent."""
    value = span[camel] if camel in span else span.get(snake)
    if value is None:
        return 0
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        number = int(value)
    if number is None or not 0 <= number < _FIXED64:
        raise SpanProblem(f"{name} {shown(value)} is not an unsigned 64-bit count of nanoseconds")
    return number


def _rfc3339(nanos: int) -> str:
    seconds, rest = divmod(nanos, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000).isoformat()


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return f"the string {shown(value)}"
    return "null" if value is None else shown(value)


def _pairs(pairs: Any, *, strict: bool, where: str = "attribute") -> dict[str, Any]:
    """An OTLP ``KeyValue`` list as {key: AnyValue as written}; malformed entries are skipped unless strict."""
    found: dict[str, Any] = {}
    if pairs is None:
        return found
    if not isinstance(pairs, list):
        if strict:
            raise SpanProblem(f"{where}s: expected an array of key-value pairs, not {_kind(pairs)}")
        return found
    for number, pair in enumerate(pairs, 1):
        if isinstance(pair, dict) and isinstance(pair.get("key"), str):
            found[pair["key"]] = pair.get("value")
        elif strict:
            raise SpanProblem(f"{where} {number}: expected a key-value pair with a string key")
    return found


def _attributes(pairs: Any, where: str, depth: int = 0) -> dict[str, Any]:
    """An OTLP ``KeyValue`` list as a plain dict, every value checked."""
    return {key: _value(value, key, depth) for key, value in _pairs(pairs, strict=True, where=where).items()}


def _events(events: Any) -> list[dict[str, Any]]:
    if events is None:
        return []
    if not isinstance(events, list) or not all(isinstance(event, dict) for event in events):
        raise SpanProblem("events: expected an array of objects")
    return events


def _value(value: Any, key: str, depth: int) -> Any:
    """An OTLP ``AnyValue`` as a plain Python value (None when it holds none, or a kind unknown here)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SpanProblem(f"attribute {shown(key)}: expected an AnyValue object, not {_kind(value)}")
    if depth >= MAX_NESTING:
        raise SpanProblem(f"attribute {shown(key)}: values nested deeper than {MAX_NESTING} levels")
    for kind, convert in _KINDS:
        if kind in value:
            item = value[kind]
            converted = convert(item, key, depth + 1)
            if converted is _BAD:
                raise SpanProblem(f"attribute {shown(key)}: {kind} {shown(item)} is {_EXPECTED[kind]}")
            return converted
    return None


_BAD = object()  # a value that breaks its kind's encoding


def _string(item: Any, key: str, depth: int) -> Any:
    return item if isinstance(item, str) else _BAD


def _bool(item: Any, key: str, depth: int) -> Any:
    return item if isinstance(item, bool) else _BAD


def _int(item: Any, key: str, depth: int) -> Any:
    if (isinstance(item, str) and _INTEGER.fullmatch(item)) or (isinstance(item, float) and item.is_integer()):
        item = int(item)
    if not isinstance(item, int) or isinstance(item, bool) or not _INT64[0] <= item <= _INT64[1]:
        return _BAD
    return item


def _double(item: Any, key: str, depth: int) -> Any:
    if isinstance(item, str):
        if item in _DOUBLE_WORDS:
            return _DOUBLE_WORDS[item]
        if len(item) > 400 or not _NUMBER.fullmatch(item):
            return _BAD
        item = float(item)
    if isinstance(item, bool) or not isinstance(item, int | float):
        return _BAD
    try:
        number = float(item)
    except OverflowError:  # an integer literal beyond any double
        return _BAD
    return number if math.isfinite(number) else _BAD


def _array(item: Any, key: str, depth: int) -> Any:
    values = item.get("values", []) if isinstance(item, dict) else None
    if not isinstance(values, list):
        return _BAD
    return [_value(value, key, depth) for value in values]


def _kvlist(item: Any, key: str, depth: int) -> Any:
    if not isinstance(item, dict):
        return _BAD
    return _attributes(item.get("values"), f"attribute {shown(key)}: kvlistValue item", depth)


def _bytes(item: Any, key: str, depth: int) -> Any:
    try:
        return base64.b64decode(item, validate=True) if isinstance(item, str) else _BAD
    except (binascii.Error, ValueError):
        return _BAD


_KINDS: tuple[tuple[str, Callable[[Any, str, int], Any]], ...] = (
    ("stringValue", _string),
    ("boolValue", _bool),
    ("intValue", _int),
    ("doubleValue", _double),
    ("arrayValue", _array),
    ("kvlistValue", _kvlist),
    ("bytesValue", _bytes),
)
_EXPECTED = {
    "stringValue": "not a string",
    "boolValue": "not true or false",
    "intValue": "not a 64-bit integer",
    "doubleValue": "not a finite double",
    "arrayValue": "not an object with a values array",
    "kvlistValue": "not an object with a values array",
    "bytesValue": "not base64",
}
