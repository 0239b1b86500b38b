"""A seeded slice of the adversarial generators (tests/parsing/generators.py) over every shipped contract: each
input parses with the fast path on and off to the identical outcome, never an exception. The full run of a
million inputs and more is ``benchmarks/fuzz_parse.py``."""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import sys

import pytest

from promptops import Contract, Parser
from promptops.core.contract import Coercions
from promptops.parsing import native
from tests.helpers import REPO_ROOT
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


_WITHOUT_EXTENSION = """
import json, random, sys
sys.modules["promptops.parsing._checks"] = None  # as if it had not been built: the import fails
from promptops import Parser
from promptops.parsing import native
from tests.parsing import generators
from tests.parsing.invariants import _summary
assert native.checks is None
out = []
for contract in generators.contracts():
    parser = Parser(contract)
    assert not parser._fast  # no fast path without the extension
    for raw, changed, request in generators.inputs(random.Random(f"native-{contract.name}"), contract, 150):
        versions = {} if request is None else {"schema_version": request[0], "prompt_version": request[1]}
        out.append(_summary(parser.parse(raw, changed, **versions)))
print(json.dumps(out))
"""


def test_without_the_extension_every_outcome_is_the_same() -> None:
    """A promptops installed without a C compiler has no fast path and gives the same outcomes."""
    if native.checks is None:
        pytest.skip("the _checks extension is not built: nothing to compare with")
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTENSION], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    expected = []
    for contract in generators.contracts():
        parser = Parser(contract)
        for case in generators.inputs(random.Random(f"native-{contract.name}"), contract, 150):
            expected.append(_parse(parser, case))
    assert json.loads(done.stdout) == expected


@pytest.mark.parametrize("trim", [True, False])
@pytest.mark.parametrize("separators", [True, False])
@pytest.mark.parametrize("numeric", [True, False])
def test_every_coercion_setting_gives_one_outcome(
    contract: Contract, trim: bool, separators: bool, numeric: bool
) -> None:
    """The fast path's decline tests follow the contract's coercions (a contract may turn each off)."""
    changed = dataclasses.replace(contract, coercions=Coercions(trim, separators, numeric))
    fast, slow = Parser(changed), Parser(changed, fast_path=False)
    rng = random.Random(f"coercions-{trim}-{separators}-{numeric}")
    cases = list(generators.inputs(rng, changed, 150))

    def finding(finding_id: str) -> dict[str, object]:
        return {"id": finding_id, "severity": "low", "category": "style", "title": "t", "file": "src/api/users.py"}

    for ids in (("F1", " F1"), ("F1", "F1 "), ("", ""), ("F1", "F2")):
        findings = [{**finding(i), "line": 1, "message": "m"} for i in ids]
        body = {"schema_version": "1.0", "prompt_version": "1.0.0", "findings": findings}
        cases.append((json.dumps(body), ["src/api/users.py"], None))
    for case in cases:
        assert _parse(fast, case) == _parse(slow, case), case
