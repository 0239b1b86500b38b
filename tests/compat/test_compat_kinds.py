"""Every difference kind, in both directions, from the hand-written pairs in cases.yaml (data-driven)."""

from __future__ import annotations

from typing import Any

import pytest

from promptops.compat import Change, Kind, classify
from tests.compat.compat_oracle import CASES

DIRECTIONS = [
    pytest.param(case, direction, id=f"{case['id']}:{direction}")
    for case in CASES
    for direction in ("expect", "reverse")
]


def _describe(kind: Kind, path: str, backward: bool, forward: bool, tolerant: bool) -> str:
    return f"{kind} {path} {'y' if backward else 'n'}{'y' if forward else 'n'}{'y' if tolerant else 'n'}"


@pytest.mark.parametrize(("case", "direction"), DIRECTIONS)
def test_case(case: dict[str, Any], direction: str) -> None:
    old, new = (case["old"], case["new"]) if direction == "expect" else (case["new"], case["old"])
    expected = case[direction]
    comparison = classify(old, new)
    got = [_describe(d.kind, d.path, d.backward, d.forward, d.forward_tolerant) for d in comparison.differences]
    assert got == expected["differences"]
    assert comparison.change is Change(expected["change"])


def test_every_kind_is_covered_in_both_directions() -> None:
    seen = {
        line.split()[0]
        for case in CASES
        for direction in ("expect", "reverse")
        for line in case[direction]["differences"]
    }
    assert seen == {str(kind) for kind in Kind}


def test_case_ids_are_unique() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) == len(set(ids))
