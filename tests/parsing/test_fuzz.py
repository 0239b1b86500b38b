"""A seeded mutation fuzzer: 20,000 damaged responses, every invariant checked, fast and slow paths compared."""

from __future__ import annotations

import json
import random

import pytest

from promptops import Contract
from tests.helpers import CHANGED, finding, response
from tests.parsing.invariants import Checker

RUNS = 20_000
ALPHABET = [*list('{}[]",:\\ \n\t0123456789.-+eEtrufalsn'), "é", "\ufeff", "\xa0", "<think>", "</think>", "```"]


def _seeds() -> list[str]:
    body = response(
        [
            finding(1),
            finding(2, line="7", end_line=9),
            finding(3, file="./src/auth/login.py"),
            finding(4, severity="High"),
            finding(5, file="x.py"),
        ],
        meta={"k": [1, {"v": "a:b"}]},
    )
    compact, pretty = json.dumps(body), json.dumps(body, indent=2)
    # each seed is clean except for one thing the fast path must notice and hand over
    single_fixes = [
        response([finding(1, title=" padded ")]),
        response([finding(1, file="src\\api\\users.py")]),
        response([finding(1, line=9.0)]),
        response([finding(1), finding(1, line=50)]),
        response([finding(1, end_line=3)]),
        response(schema_version="1.2"),
    ]
    return [
        compact,
        pretty,
        f"```json\n{pretty}\n```",
        f"<think>hmm</think>{compact}",
        compact[:-90],
        json.dumps(response([])),
        *(json.dumps(r) for r in single_fixes),
    ]


def _mutate(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 4)):
        if not text:
            break
        i = rng.randrange(len(text))
        j = min(len(text), i + rng.randint(1, 12))
        op = rng.randrange(6)
        if op == 0:
            text = text[:i] + text[j:]  # delete a span
        elif op == 1:
            text = text[:i] + "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 4))) + text[i:]
        elif op == 2:
            text = text[:j] + text[i:j] + text[j:]  # duplicate a span (duplicate keys, repeated objects)
        elif op == 3:
            text = text[:i]  # truncate
        elif op == 4:
            text = text[:i] + rng.choice(ALPHABET) + text[i + 1 :]
        else:
            k = rng.randrange(len(text))
            a, b = sorted((i, k))
            text = text[:a] + text[b : b + 1] + text[a + 1 : b] + text[a : a + 1] + text[b + 1 :]  # swap two chars
    return text


@pytest.mark.slow  # 20,000 fuzzed inputs
def test_fuzz_twenty_thousand_inputs(contract: Contract) -> None:
    checker = Checker(contract)
    rng = random.Random(20261122)
    seeds = _seeds()
    outcomes = {"accepted": 0, "rejected": 0}
    for _ in range(RUNS):
        raw = _mutate(rng, rng.choice(seeds))
        outcome = checker.check(raw.encode("utf-8", "surrogatepass") if rng.random() < 0.2 else raw, CHANGED)
        outcomes[outcome.outcome] += 1
    # the fuzzer reaches both verdicts often enough to mean something
    assert outcomes["accepted"] > RUNS // 20 and outcomes["rejected"] > RUNS // 20, outcomes
