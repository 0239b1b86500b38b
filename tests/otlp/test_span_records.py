"""How one OTLP/JSON span becomes a response log record: each documented attribute form, in OTLP/JSON's own
encoding (attributes as KeyValue lists, 64-bit integers as strings)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptops.store.otlp_spans import SpanRecord, span_record

START, END = 1_762_075_800_000_000_000, 1_762_075_801_250_500_000  # 1.2505 s apart


def _value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": _value(v)} for k, v in value.items()]}}
    return {"stringValue": value}


def _span(attributes: dict[str, Any], events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "name": "chat",
        "startTimeUnixNano": str(START),
        "endTimeUnixNano": str(END),
        "attributes": [{"key": k, "value": _value(v)} for k, v in attributes.items()],
        "events": events or [],
    }


BASE = {"promptops.contract": "review-result", "promptops.response_id": "r1"}
TEXT = '{"findings": []}'


def test_the_current_conventions() -> None:
    record = span_record(
        _span(
            {
                **BASE,
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "m1",
                "gen_ai.response.model": "m1-2026",
                "gen_ai.usage.input_tokens": 900,
                "gen_ai.usage.output_tokens": 300,
                "promptops.rollout_id": "review-1.1",
                "promptops.arm": "candidate",
                "promptops.unit": "acme/api#42",
                "promptops.changed_files": ["a.py", "b/c.py"],
                "gen_ai.output.messages": json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": TEXT[:5]}, {"type": "text", "content": TEXT[5:]}],
                        }
                    ]
                ),
            }
        )
    )
    assert record == SpanRecord(
        response_id="r1",
        ts="2025-11-02T09:30:01.250500+00:00",
        contract="review-result",
        rollout_id="review-1.1",
        arm="candidate",
        unit="acme/api#42",
        changed_files=["a.py", "b/c.py"],
        raw=TEXT,
        model="m1",
        latency_ms=1250.5,
        tokens=1200,
    )


@pytest.mark.parametrize(
    ("attributes", "events"),
    [
        ({"gen_ai.completion": TEXT}, []),
        ({"gen_ai.completion": json.dumps([{"role": "assistant", "content": TEXT}])}, []),
        ({"gen_ai.completion.0.content": TEXT}, []),
        (
            {},
            [
                {
                    "name": "gen_ai.content.completion",
                    "attributes": [{"key": "gen_ai.completion", "value": {"stringValue": TEXT}}],
                }
            ],
        ),
        # structured rather than a JSON string: an array of key-value lists
        ({"gen_ai.output.messages": [{"role": "assistant", "parts": [{"type": "text", "content": TEXT}]}]}, []),
    ],
)
def test_older_and_structured_output_forms(attributes: dict[str, Any], events: list[dict[str, Any]]) -> None:
    record = span_record(_span({**BASE, "gen_ai.request.model": "m1", **attributes}, events))
    assert isinstance(record, SpanRecord) and record.raw == TEXT


def test_fallbacks_for_ids_models_and_tokens() -> None:
    record = span_record(
        _span(
            {
                "promptops.contract": "review-result",
                "gen_ai.response.id": "chatcmpl-1",
                "gen_ai.response.model": "m2",
                "gen_ai.usage.prompt_tokens": 10,
                "gen_ai.usage.completion_tokens": 5,
                "gen_ai.completion": TEXT,
            }
        )
    )
    assert isinstance(record, SpanRecord)
    assert (record.response_id, record.model, record.tokens, record.changed_files) == ("chatcmpl-1", "m2", 15, [])
    assert (record.rollout_id, record.arm, record.unit) == (None, None, None)


@pytest.mark.parametrize(
    "attributes",
    [
        {"name": "no generative AI attribute at all"},
        {"gen_ai.operation.name": "embeddings", "gen_ai.request.model": "e1"},
        {"gen_ai.operation.name": "execute_tool", **BASE},
    ],
)
def test_spans_that_are_no_model_call_are_skipped(attributes: dict[str, Any]) -> None:
    assert span_record(_span(attributes)) is None


@pytest.mark.parametrize(
    ("attributes", "problem"),
    [
        ({"promptops.response_id": "r1", "gen_ai.completion": TEXT}, "missing attribute 'promptops.contract'"),
        ({"promptops.contract": "c", "gen_ai.completion": TEXT}, "missing attribute 'promptops.response_id'"),
        (BASE, "missing the output text"),
        ({**BASE, "gen_ai.output.messages": "[]"}, "missing the output text"),
        (
            {**BASE, "gen_ai.completion": TEXT, "promptops.changed_files": "a.py"},
            "attribute 'promptops.changed_files': expected an array of strings",
        ),
    ],
)
def test_a_model_call_without_what_a_record_needs_is_a_problem(attributes: dict[str, Any], problem: str) -> None:
    found = span_record(_span({"gen_ai.operation.name": "chat", **attributes}))
    assert isinstance(found, str) and found.startswith(problem)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
_KINDS = ["stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue"]
_NAMES = [
    "gen_ai.operation.name",
    "gen_ai.request.model",
    "promptops.contract",
    "promptops.response_id",
    "promptops.changed_files",
    "gen_ai.output.messages",
    "gen_ai.completion",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
]
_ANY_VALUE = st.dictionaries(st.sampled_from(_KINDS), _JSON, max_size=2) | _JSON
_SPANS = st.fixed_dictionaries(
    {},
    optional={
        "attributes": st.lists(
            st.fixed_dictionaries({"key": st.sampled_from(_NAMES) | st.text(max_size=4), "value": _ANY_VALUE}),
            max_size=6,
        )
        | _JSON,
        "startTimeUnixNano": _JSON,
        "endTimeUnixNano": st.integers().map(str) | _JSON,
        "events": _JSON,
    },
)


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
@settings(max_examples=400, deadline=None)
@given(_SPANS)
def test_no_span_makes_the_conversion_raise(span: dict[str, Any]) -> None:
    """Whatever a span holds, it gives a record, a one-line problem or None (no model call)."""
    found = span_record(span)
    assert found is None or isinstance(found, SpanRecord) or (isinstance(found, str) and "\n" not in found)
