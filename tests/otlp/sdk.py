"""Spans from the real OpenTelemetry SDK, encoded by the SDK's own OTLP encoder, written as OTLP/JSON lines the
way the Collector's file exporter writes them: the good spans of every OTLP test."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToJson
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

START = datetime(2026, 11, 2, 9, 30, tzinfo=UTC)


def demo_records() -> list[dict[str, Any]]:
    text = files("promptops.demo").joinpath("review-result.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def nanos(moment: datetime) -> int:
    return int((moment - datetime(1970, 1, 1, tzinfo=UTC)) / timedelta(microseconds=1)) * 1000


def responses() -> list[dict[str, Any]]:
    """The demo's responses as log records, spread over a rollout's two arms, with model, latency and tokens."""
    records = []
    for number, demo in enumerate(demo_records() * 3):
        end = START + timedelta(minutes=number, microseconds=number * 137)
        records.append(
            {
                "response_id": f"{demo['response_id']}-{number}",
                "ts": end.isoformat(),
                "contract": "review-result",
                "rollout_id": "review-1.1" if number % 4 else None,
                "arm": ("baseline", "candidate")[number % 2] if number % 4 else None,
                "unit": f"acme/api#{number}" if number % 4 else None,
                "changed_files": demo["changed_files"],
                "raw": demo["raw"],
                "model": "model-a" if number % 3 else "model-b",
                "latency_ms": 1200.5 + number,
                "tokens": 900 + number + 300,
            }
        )
    return records


def emit(records: list[dict[str, Any]]) -> list[ReadableSpan]:
    """Each record as a model-call span under a request span, with the real SDK; plus non-model spans and
    one model call that lost its output."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("review-service")
    for number, record in enumerate(records):
        end = nanos(datetime.fromisoformat(record["ts"]))
        start = end - int(record["latency_ms"] * 1_000_000)
        parent = tracer.start_span("POST /review", kind=SpanKind.SERVER, start_time=start - 1000)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": record["model"],
            "gen_ai.usage.input_tokens": 900 + number,
            "gen_ai.usage.output_tokens": 300,
            "promptops.contract": record["contract"],
            "promptops.response_id": record["response_id"],
            "promptops.changed_files": record["changed_files"],
        }
        for name in ("rollout_id", "arm", "unit"):
            if record[name] is not None:
                attributes[f"promptops.{name}"] = record[name]
        if number % 5 != 4:  # the current conventions: the output messages as a JSON string
            attributes["gen_ai.output.messages"] = json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": record["raw"]}], "finish_reason": "stop"}]
            )
        with trace.use_span(parent, end_on_exit=False):
            span = tracer.start_span(
                f"chat {record['model']}", kind=SpanKind.CLIENT, start_time=start, attributes=attributes
            )
        if number % 5 == 4:  # the older form: the completion as a span event
            span.add_event("gen_ai.content.completion", {"gen_ai.completion": record["raw"]}, timestamp=end)
        span.end(end_time=end)
        embed = tracer.start_span(
            "embeddings text-embed", start_time=start, attributes={"gen_ai.operation.name": "embeddings"}
        )
        embed.end(end_time=start + 5000)
        parent.end(end_time=end + 1000)
    lost = tracer.start_span(
        "chat model-a",
        start_time=nanos(START),
        attributes={
            "gen_ai.operation.name": "chat",
            "promptops.contract": "review-result",
            "promptops.response_id": "lost",
        },
    )
    lost.end(end_time=nanos(START) + 10**9)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def write_otlp(path: Path, spans: list[ReadableSpan], per_request: int) -> None:
    """The spans as the Collector's file exporter writes them: one ExportTraceServiceRequest a line."""
    with path.open("w", encoding="utf-8") as out:
        for first in range(0, len(spans), per_request):
            request = encode_spans(spans[first : first + per_request])
            out.write(MessageToJson(request, indent=None) + "\n")


def span_id(span: ReadableSpan) -> str:
    """The span's id as the SDK's encoder writes it in OTLP/JSON (protobuf's base64 of the 8 bytes)."""
    assert span.context is not None
    return base64.b64encode(span.context.span_id.to_bytes(8, "big")).decode()


def request_lines(spans: list[ReadableSpan], per_request: int) -> list[str]:
    """The spans as export requests, one JSON text each."""
    return [
        MessageToJson(encode_spans(spans[first : first + per_request]), indent=None)
        for first in range(0, len(spans), per_request)
    ]
