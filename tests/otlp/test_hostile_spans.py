"""Hostile OTLP input: one bad span, scope, resource or line is one bad record with its place, and every good
span around it is stored. Good spans come from the real SDK and its own OTLP encoder; each case breaks one
copy of a model-call span (or the structure around it) the way a careless or hostile writer would. The real
CLI, a real DuckDB file."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.conftest import Cli
from tests.helpers import REPO_ROOT
from tests.otlp.sdk import emit, request_lines, responses

HOSTILE_ID = "aG9zdGlsZTE="  # the broken span's spanId, as protobuf's JSON writes 8 bytes
GOOD = [{**record, "response_id": f"good-{number}"} for number, record in enumerate(responses()[:6])]
SPANS_PER_RECORD = 3  # the model call, an embeddings call, the request around them
PER_LINE = 3 * SPANS_PER_RECORD  # line 1 holds the spans of three records, then the hostile one (span 10)
WHERE = f"logs/t.jsonl:1: span {PER_LINE + 1} (id {HOSTILE_ID}):"

Span = dict[str, Any]


def _set(span: Span, key: str, value: Any) -> None:
    attributes = [pair for pair in span["attributes"] if pair["key"] != key]
    span["attributes"] = [*attributes, {"key": key, "value": value}]


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "deep"}
    for _ in range(levels):
        value = {"arrayValue": {"values": [value]}}
    return value


def _deep_request(levels: int) -> bytes:
    """An export request whose one span has an attribute value nested ``levels`` deep (json.dumps would
    recurse as deep)."""
    value = b'{"arrayValue": {"values": [' * levels + b'{"stringValue": "deep"}' + b"]}}" * levels
    return (
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "' + HOSTILE_ID.encode() + b'", "attributes": '
        b'[{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}, {"key": "app.deep", "value": '
        + value
        + b"}]}]}]}]}"
    )


def _attribute(key: str, value: Any) -> Callable[[Span], None]:
    return lambda span: _set(span, key, value)


def _field(name: str, value: Any) -> Callable[[Span], None]:
    return lambda span: span.update({name: value})


# Placeholders swapped for bytes no JSON encoder writes: numbers beyond any double or int64, invalid UTF-8.
RAW = {
    '"@TEN_TO_400@"': b"1" + b"0" * 400,
    '"@1E400@"': b"1e400",
    '"@26_DIGITS@"': b"12345678901234567890123456",
    '"@5000_DIGITS@"': b"7" * 5000,
    '"@NOT_UTF8@"': b'"acme/api#\xff\xfe1"',
    '"@NOT_UTF8_OUTPUT@"': b'"[{\\"role\\": \\"assistant\\", \\"content\\": \\"\xc3\\"}]"',
}

# (case, how the hostile copy of a model-call span is broken, the one stderr line expected)
SPAN_CASES: list[tuple[str, Callable[[Span], None], str]] = [
    (
        "doubleValue-abc",
        _attribute("gen_ai.request.temperature", {"doubleValue": "abc"}),
        f"{WHERE} attribute 'gen_ai.request.temperature': doubleValue 'abc' is not a finite double",
    ),
    (
        "doubleValue-10**400",
        _attribute("gen_ai.request.temperature", {"doubleValue": "@TEN_TO_400@"}),
        f"{WHERE} attribute 'gen_ai.request.temperature': doubleValue 1000000000000000000000000000000000000... "
        "is not a finite double",
    ),
    (
        "doubleValue-1e400",
        _attribute("gen_ai.request.temperature", {"doubleValue": "@1E400@"}),
        f"{WHERE} not valid JSON (number out of range)",
    ),
    (
        "end-time-past-9999",
        _field("endTimeUnixNano", "253402300800000000000"),
        f"{WHERE} end time '253402300800000000000' is not an unsigned 64-bit count of nanoseconds",
    ),
    (
        "end-time-very-negative",
        _field("endTimeUnixNano", "-9223372036854775808000"),
        f"{WHERE} end time '-9223372036854775808000' is not an unsigned 64-bit count of nanoseconds",
    ),
    (  # beyond the platform's time_t: once an I/O error that made the whole file unreadable
        "end-time-26-digits",
        _field("endTimeUnixNano", "9" * 26),
        f"{WHERE} end time '{'9' * 26}' is not an unsigned 64-bit count of nanoseconds",
    ),
    (
        "end-time-26-digits-as-a-number",
        _field("endTimeUnixNano", "@26_DIGITS@"),
        f"{WHERE} end time 12345678901234567890123456 is not an unsigned 64-bit count of nanoseconds",
    ),
    (
        "start-time-not-a-number",
        _field("startTimeUnixNano", "yesterday"),
        f"{WHERE} start time 'yesterday' is not an unsigned 64-bit count of nanoseconds",
    ),
    (
        "invalid-utf8-in-a-string",
        _attribute("promptops.unit", {"stringValue": "@NOT_UTF8@"}),
        f"{WHERE} not valid UTF-8 (byte ",
    ),
    (
        "invalid-utf8-in-the-output",
        _attribute("gen_ai.output.messages", {"stringValue": "@NOT_UTF8_OUTPUT@"}),
        f"{WHERE} not valid UTF-8 (byte ",
    ),
    (
        "values-nested-100-levels",
        _attribute("app.payload", _nested(100)),
        f"{WHERE} attribute 'app.payload': values nested deeper than 64 levels",
    ),
    (
        "operation-name-an-array",
        _attribute("gen_ai.operation.name", {"arrayValue": {"values": [{"stringValue": "chat"}]}}),
        f"{WHERE} attribute 'gen_ai.operation.name': expected a string, not an array",
    ),
    (
        "token-count-superscript-two",
        _attribute("gen_ai.usage.input_tokens", {"intValue": "²"}),
        f"{WHERE} attribute 'gen_ai.usage.input_tokens': intValue '²' is not a 64-bit integer",
    ),
    (
        "token-count-superscript-two-as-a-string",
        _attribute("gen_ai.usage.output_tokens", {"stringValue": "²"}),
        f"{WHERE} attribute 'gen_ai.usage.output_tokens': expected a token count, not '²'",
    ),
    (
        "token-count-of-5000-digits",
        _attribute("gen_ai.usage.input_tokens", {"intValue": "7" * 5000}),
        f"{WHERE} attribute 'gen_ai.usage.input_tokens': intValue '777777777777777777777777777777777777... "
        "is not a 64-bit integer",
    ),
    (
        "token-count-of-5000-digits-as-a-string",
        _attribute("gen_ai.usage.output_tokens", {"stringValue": "7" * 5000}),
        f"{WHERE} attribute 'gen_ai.usage.output_tokens': expected a token count, not '77777777777777777777777777777",
    ),
    (
        "token-count-of-5000-digits-as-a-number",
        _attribute("gen_ai.usage.input_tokens", {"intValue": "@5000_DIGITS@"}),
        f"{WHERE} not valid JSON (integer value out of range)",
    ),
    (
        "boolValue-a-string",
        _attribute("app.cached", {"boolValue": "yes"}),
        f"{WHERE} attribute 'app.cached': boolValue 'yes' is not true or false",
    ),
    (
        "bytesValue-not-base64",
        _attribute("app.blob", {"bytesValue": "%%%"}),
        f"{WHERE} attribute 'app.blob': bytesValue '%%%' is not base64",
    ),
    (
        "attributes-an-object",
        _field("attributes", {"gen_ai.operation.name": "chat"}),
        "",  # no attribute can be read: the span is no model call, and is skipped
    ),
]

# (case, how line 1's request is broken around the good spans, the one stderr line expected)
STRUCTURE_CASES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    (
        "resourceSpans-item-a-number",
        lambda request: request["resourceSpans"].append(42),
        "logs/t.jsonl:1: resourceSpans item 2: expected object, not int",
    ),
    (
        "scopeSpans-an-object",
        lambda request: request["resourceSpans"].append({"scopeSpans": {"spans": []}}),
        "logs/t.jsonl:1: resourceSpans item 2: field 'scopeSpans': expected array, not object",
    ),
    (
        "scopeSpans-a-string",
        lambda request: request["resourceSpans"].append({"scopeSpans": "spans"}),
        "logs/t.jsonl:1: resourceSpans item 2: field 'scopeSpans': expected array, not str",
    ),
    (
        "scopeSpans-item-a-string",
        lambda request: request["resourceSpans"][0]["scopeSpans"].append("scope"),
        "logs/t.jsonl:1: resourceSpans item 1, scopeSpans item 2: expected object, not str",
    ),
    (
        "span-a-number",
        lambda request: request["resourceSpans"][0]["scopeSpans"][0]["spans"].append(42),
        f"logs/t.jsonl:1: span {PER_LINE + 1}: not an object but 42",
    ),
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "versions").symlink_to(REPO_ROOT / "versions", target_is_directory=True)
    (tmp_path / "rollout").symlink_to(REPO_ROOT / "rollout", target_is_directory=True)
    (tmp_path / "logs").mkdir()
    return tmp_path


def _good_requests() -> list[dict[str, Any]]:
    """The good spans (no model call lacking its output) as two export requests of three records each."""
    spans = emit(GOOD)[:-1]
    assert len(spans) == SPANS_PER_RECORD * len(GOOD)
    return [json.loads(line) for line in request_lines(spans, PER_LINE)]


def _text(request: dict[str, Any]) -> bytes:
    data = json.dumps(request).encode()
    for placeholder, raw in RAW.items():
        data = data.replace(placeholder.encode(), raw)
    return data


def _ingest(cli: Cli, project: Path, lines: list[bytes]) -> tuple[int, dict[str, Any], list[str]]:
    (project / "logs" / "t.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    code, out, err = cli(
        project, "ingest", str(project / "logs" / "t.jsonl"), "--input-format", "otlp-json", "--format", "json"
    )
    return code, json.loads(out), [line.removeprefix("promptops: ") for line in err.splitlines()]


def _stored(project: Path) -> list[str]:
    with duckdb.connect(str(project / ".promptops" / "diagnostics.duckdb"), read_only=True) as db:
        return sorted(row[0] for row in db.execute("select response_id from responses").fetchall())


def _model_call(request: dict[str, Any]) -> Span:
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return next(s for s in spans if any(a["value"].get("stringValue") == "chat" for a in s["attributes"]))


@pytest.mark.parametrize(("case", "breaks", "expected"), SPAN_CASES, ids=[case[0] for case in SPAN_CASES])
def test_a_broken_span_is_one_bad_record_and_its_line_is_stored(
    project: Path, cli: Cli, case: str, breaks: Callable[[Span], None], expected: str
) -> None:
    first, second = _good_requests()
    hostile = copy.deepcopy(_model_call(first))
    hostile["spanId"] = HOSTILE_ID
    _set(hostile, "promptops.response_id", {"stringValue": "hostile"})
    breaks(hostile)
    first["resourceSpans"][0]["scopeSpans"][0]["spans"].append(hostile)
    code, summary, err = _ingest(cli, project, [_text(first), _text(second)])
    assert "internal error" not in "\n".join(err)
    assert _stored(project) == sorted(record["response_id"] for record in GOOD)
    assert summary["spans"] == SPANS_PER_RECORD * len(GOOD) + 1
    if not expected:
        assert (code, err, summary["spans_skipped"]) == (0, [], 2 * len(GOOD) + 1)
        return
    assert code == 2 and summary["bad_records"] == 1
    assert len(err) == 1 and err[0].startswith(expected), err
    sample = summary["bad_records_sample"][0]
    assert f"{sample['source']}:{sample['line']}: {sample['problem']}" == err[0]


@pytest.mark.parametrize(("case", "breaks", "expected"), STRUCTURE_CASES, ids=[case[0] for case in STRUCTURE_CASES])
def test_a_broken_resource_or_scope_is_one_bad_record_and_the_rest_is_stored(
    project: Path, cli: Cli, case: str, breaks: Callable[[dict[str, Any]], None], expected: str
) -> None:
    first, second = _good_requests()
    breaks(first)
    code, summary, err = _ingest(cli, project, [_text(first), _text(second)])
    assert (code, err, summary["bad_records"]) == (2, [expected], 1)
    assert _stored(project) == sorted(record["response_id"] for record in GOOD)


@pytest.mark.parametrize(
    ("case", "line", "expected"),
    [
        # deeper than the JSON decoder goes: no span of the line can be told from another
        ("nested-1000-levels", _deep_request(1000), "logs/t.jsonl:2: not valid JSON (nested too deeply)"),
        ("not-an-object", [1, 2], "logs/t.jsonl:2: not an OTLP ExportTraceServiceRequest (no resourceSpans list)"),
        (
            "resourceSpans-an-object",
            {"resourceSpans": {}},
            "logs/t.jsonl:2: not an OTLP ExportTraceServiceRequest (no resourceSpans list)",
        ),
    ],
)
def test_a_line_that_is_no_request_is_one_bad_record(
    project: Path, cli: Cli, case: str, line: Any, expected: str
) -> None:
    first, second = _good_requests()
    text = line if isinstance(line, bytes) else json.dumps(line).encode()
    code, summary, err = _ingest(cli, project, [_text(first), text, _text(second)])
    assert (code, err, summary["bad_records"]) == (2, [expected], 1)
    assert _stored(project) == sorted(record["response_id"] for record in GOOD)


@pytest.mark.parametrize("workers", ["0", "2"])
def test_every_broken_span_of_one_line_is_reported_in_order_by_workers_too(
    project: Path, cli: Cli, workers: str
) -> None:
    """All the cases in one request, after a span the ingest itself finds bad (an unknown contract): each is
    reported at its own place, in order, whether the records are parsed here or in worker processes."""
    first, second = _good_requests()
    spans = first["resourceSpans"][0]["scopeSpans"][0]["spans"]
    unknown = copy.deepcopy(_model_call(first))
    unknown["spanId"] = HOSTILE_ID
    _set(unknown, "promptops.contract", {"stringValue": "no-such-contract"})
    _set(unknown, "promptops.response_id", {"stringValue": "unknown-contract"})
    spans.append(unknown)
    expected = [f"{WHERE} unknown contract 'no-such-contract' (no versions/no-such-contract/)"]
    for number, (_, breaks, problem) in enumerate(SPAN_CASES, PER_LINE + 2):
        hostile = copy.deepcopy(_model_call(first))
        hostile["spanId"] = HOSTILE_ID
        _set(hostile, "promptops.response_id", {"stringValue": f"hostile-{number}"})
        breaks(hostile)
        spans.append(hostile)
        if problem:
            expected.append(problem.replace(f"span {PER_LINE + 1} ", f"span {number} "))
    (project / "logs" / "t.jsonl").write_bytes(_text(first) + b"\n" + _text(second) + b"\n")
    code, _, err = cli(project, "ingest", str(project / "logs"), "--input-format", "otlp-json", "--workers", workers)
    lines = [line.removeprefix("promptops: ") for line in err.splitlines() if "warning" not in line]
    assert code == 2 and len(lines) == len(expected), lines
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(start), (line, start)
    assert _stored(project) == sorted(record["response_id"] for record in GOOD)
