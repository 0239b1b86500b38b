"""A seeded slice of the adversarial generators (tests/parsing/generators.py) over every shipped contract: each
input parses with the fast path on and off to the identical outcome, never an exception. The full run of a
million inputs and more is ``benchmarks/fuzz_parse.py``."""

from __future__ import annotations

import random

import pytest

from promptops import Contract, Parser
from tests.parsing import generators
from tests.parsing.invariants import _summary

SLICE = 600  # inputs per contract


def _parse(parser: Parser, case: generators.Case) -> str:
    raw, changed, request = case
    if request is None:
        return _summary(parser.parse(raw, changed))
    return _summary(parser.parse(raw, changed, schema_version=request[0], prompt_version=request[1]))


@pytest.mark.parametrize("contract", generators.contracts(), ids=generators.CONTRACTS)
def test_every_configuration_gives_one_outcome(contract: Contract) -> None:
    fast, slow = Parser(contract), Parser(contract, fast_path=False)
    rng = random.Random(f"adversarial-{contract.name}")
    accepted = 0
    for case in generators.inputs(rng, contract, SLICE):
        expected = _parse(slow, case)
        assert _parse(fast, case) == expected, case
        accepted += '"outcome": "accepted"' in expected
    assert 0 < accepted < SLICE  # both verdicts are reached


@pytest.mark.parametrize("kind", generators.HUGE_KINDS)
def test_four_mebibyte_inputs_parse_alike(contract: Contract, kind: str) -> None:
    text = generators.huge(kind, contract)
    fast, slow = Parser(contract), Parser(contract, fast_path=False)
    for raw in (text, text.encode()):
        assert _summary(fast.parse(raw, generators.CHANGED)) == _summary(slow.parse(raw, generators.CHANGED))


def test_a_lone_surrogate_is_invalid_json_for_str_and_its_bytes(contract: Contract) -> None:
    text = '{"schema_version": "1.0", "prompt_version": "1.0.0", "findings": [], "summary": "\ud800"}'
    for parser in (Parser(contract), Parser(contract, fast_path=False)):
        outcomes = [parser.parse(raw, []) for raw in (text, text.encode("utf-8", "surrogatepass"))]
        assert [o.reason for o in outcomes] == ["invalid_json", "invalid_json"]
        assert _summary(outcomes[0]) == _summary(outcomes[1])
