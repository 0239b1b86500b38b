"""The generic reader's walks and shortcuts for wrapped, cut and repeated objects, against their references."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptops import Contract, Limits, Parser
from promptops.parsing import jsontext
from tests.helpers import CHANGED, finding, response
from tests.parsing.invariants import _summary

_WALKED = st.text(alphabet='{}[]"\\ a:,é\u0100\U0001f600', max_size=40)


@settings(max_examples=1500, deadline=None)
@given(_WALKED, st.integers(-2, 45))
def test_native_span_matches_its_twin_for_every_kind(text: str, start: int) -> None:
    if jsontext.native_span is None:
        pytest.skip("the C helpers are not built")
    for variant in (text, text.replace("é", "e").replace("\u0100", "a").replace("\U0001f600", "b")):
        assert jsontext.native_span(variant, start) == jsontext._span(variant, start), (variant, start)


@settings(max_examples=1500, deadline=None)
@given(_WALKED, st.integers(-1, 12))
def test_native_bracket_count_matches_its_twin(text: str, limit: int) -> None:
    if jsontext.native_brackets is None:
        pytest.skip("the C helpers are not built")
    for variant in (text, text.replace("é", "e").replace("\u0100", "a").replace("\U0001f600", "b")):
        expected = jsontext.brackets_at_most(variant, limit)
        assert jsontext.native_brackets(variant, limit) is expected, (variant, limit)
        data = variant.encode()
        assert jsontext.native_brackets(data, limit) is jsontext.brackets_at_most(data, limit) is expected


@settings(max_examples=1500, deadline=None)
@given(_WALKED, st.integers(0, 45))
def test_the_walks_depth_is_the_one_deeper_than_measures(text: str, start: int) -> None:
    if start >= len(text) or text[start] not in "{[":
        return
    end, deepest = jsontext._span(text, start)
    assert end == jsontext._span_end(text, start)
    stop = end if end >= 0 else len(text)
    for limit in range(deepest + 2):
        assert jsontext._deeper_than(text, start, stop, limit) is (deepest > limit), (text, start, limit)


def _deep(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"k": value}
    return value


_BODIES = [
    json.dumps(response([finding(1), finding(2)])),
    json.dumps(response([finding(1)], meta=_deep(4))),
    json.dumps(response([finding(1)], meta=_deep(5)), indent=2),
    json.dumps(response([finding(1), finding(2, severity="High")], meta=_deep(6))),
]


def _malformed(body: str) -> list[str]:
    half = len(body) // 2
    return [
        f"Here is my review:\n```json\n{body}\n```\n",
        f"<think>The diff changes the query builder.</think>\n{body}",
        f"<THINK>a</Think><think>b</think>{body}",
        body[:half],
        body[: len(body) - 3],
        body[:-1].rstrip() + ",}",
        f"{body}\n{body}",
        f"{body}\n{body[:half]}",
        f"Two: {body} and {json.dumps(_deep(7))}",
        f"\ufeff{body} x",
        f"  {body}\u00a0",
        f"{body}\u200b",
        f'{body} {{"a": 1}}',
        f"{body} trailing words",
        f"{body[:-1]}\n",
    ]


@pytest.mark.parametrize("max_depth", [3, 5, 6, 7, 8, 256])
@pytest.mark.parametrize("body", _BODIES)
def test_malformed_responses_read_alike_on_every_path_near_the_depth_limit(
    contract: Contract, max_depth: int, body: str
) -> None:
    policy = contract.default_policy
    limited = type(policy)(policy.schema_floor, policy.prompt_version, limits=Limits(max_depth=max_depth))
    slow = Parser(contract, limited, fast_path=False)
    parsers = (Parser(contract, limited), Parser(contract, limited, speedups=False))
    for text in _malformed(body):
        expected = _summary(slow.parse(text, CHANGED))
        for parser in parsers:
            assert _summary(parser.parse(text, CHANGED)) == expected, text
            assert _summary(parser.parse(text.encode(), CHANGED)) == expected, text


_CUT_ITEMS = [
    finding(1),
    finding(2, severity="High", title="  padded  "),
    finding(3, file="src\\api\\users.py"),
    finding(4, line="44", extra="x"),
    finding(5, file="elsewhere.py"),
    finding(6),
]
_CUT_BODIES = [
    response(_CUT_ITEMS),
    response(_CUT_ITEMS, schema_version="1.1"),
    response(_CUT_ITEMS, schema_version="2.0"),
    response(_CUT_ITEMS, schema_version=" 1.0"),
    {"findings": _CUT_ITEMS, "schema_version": "1.0", "prompt_version": "1.0.0"},
]


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("body", _CUT_BODIES)
def test_cut_responses_read_alike_on_every_path(contract: Contract, body: dict[str, Any], indent: int | None) -> None:
    """Every cut of responses whose findings the typed readers take, coerce, drop or cannot read (and whose
    versions they read exactly or not): the salvaged findings decoded typed must not change the outcome."""
    text = json.dumps(body, indent=indent)
    # A repeated key inside a finding: the typed decoder would keep the last value without a word.
    text = text.replace('"id": "F6"', '"id": "F6", "id": "F7"', 1)
    slow = Parser(contract, fast_path=False)
    parsers = (Parser(contract), Parser(contract, speedups=False))
    for cut in range(1, len(text), 7):
        expected = _summary(slow.parse(text[:cut], CHANGED))
        for parser in parsers:
            assert _summary(parser.parse(text[:cut], CHANGED)) == expected, text[:cut]
