"""Size, nesting and work limits reject cleanly; no input raises."""

from __future__ import annotations

import json

import pytest

from promptops import Code, Contract, Limits, Parser
from promptops.parsing.parser import MAX_FINDINGS, MAX_TOKENS
from tests.helpers import CHANGED, DROP, response


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.fixture(scope="module", params=[True, False], ids=["fast", "slow"])
def small(request: pytest.FixtureRequest, contract: Contract) -> Parser:
    policy = contract.default_policy
    limited = type(policy)(policy.schema_floor, policy.prompt_version, limits=Limits(max_bytes=2000, max_depth=8))
    return Parser(contract, limited, fast_path=request.param)


def test_size_limit_counts_bytes(small: Parser) -> None:
    body = json.dumps(response([], summary=DROP))
    prefix = body[:-1] + ', "summary": "'
    padded = prefix + "x" * (2000 - len(prefix) - 2) + '"}'
    assert len(padded.encode()) == 2000 and small.parse(padded, CHANGED).accepted
    too_big = padded.replace('"x', '"xx', 1)
    assert small.parse(too_big, CHANGED).reason == Code.TOO_LARGE
    assert small.parse(too_big.encode(), CHANGED).reason == Code.TOO_LARGE
    multibyte = body[:-1] + ', "summary": "' + "\u00e9" * 990 + '"}'  # under 2000 characters, over 2000 bytes
    assert small.parse(multibyte, CHANGED).reason == Code.TOO_LARGE


def test_depth_limit(small: Parser) -> None:
    # top-level object (1) + meta object (2) + arrays
    assert small.parse(json.dumps(response([], meta={"x": _nested(6)})), CHANGED).accepted
    outcome = small.parse(json.dumps(response([], meta={"x": _nested(7)})), CHANGED)
    assert outcome.reason == Code.TOO_DEEP and outcome.diagnostics[0].level == "error"


@pytest.mark.parametrize("wrap", ["{}", "```json\n{}\n```", "{}trailing", "{}"[:-1]])
def test_pathological_depth_never_raises(both: Parser, wrap: str) -> None:
    deep = '{"meta": ' + "[" * 40_000 + "]" * 40_000 + "}"
    raw = wrap.replace("{}", deep) if "{}" in wrap else deep[:-20_000]
    outcome = both.parse(raw, CHANGED)
    assert outcome.reason == Code.TOO_DEEP


def test_default_limits_are_the_documented_ones(contract: Contract) -> None:
    assert contract.default_policy.limits == Limits(max_bytes=4 * 1024 * 1024, max_depth=256)


@pytest.mark.parametrize("unit", ["{}", '{"x":1}', "[", '"a",', "<think>"])
def test_a_response_of_too_many_tokens_is_too_large(both: Parser, unit: str) -> None:
    raw = unit * (MAX_TOKENS // max(1, unit.count("{") + unit.count("[") + unit.count('"') + unit.count("<")) + 1)
    outcome = both.parse(raw, CHANGED)
    assert outcome.reason == Code.TOO_LARGE and "over the limit of" in outcome.diagnostics[0].message


def test_more_findings_than_the_limit_is_too_large(both: Parser) -> None:
    raw = json.dumps(response([])).replace(
        '"findings": []', '"findings": [' + ",".join(["1"] * (MAX_FINDINGS + 1)) + "]"
    )
    outcome = both.parse(raw, CHANGED)
    assert outcome.reason == Code.TOO_LARGE and outcome.diagnostics[0].path == "findings"
