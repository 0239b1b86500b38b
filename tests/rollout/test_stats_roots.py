"""The always-valid bounds found by Newton's method keep bisection's contract, and the gate's JSON text is the
bytes of ``json.dumps(..., indent=2)`` (both changed for start-up, docs/performance.md)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from promptops.rollout.gate import ArmCounts, GateResult, Look, Readiness, evaluate
from promptops.rollout.plan import Transition, load_plan
from promptops.rollout.stats import _beta_prior, confidence_sequence
from tests.rollout.plans import write_plan

ALPHA = 0.05


def _excluded(x: int, n: int, p: float, centre: float) -> bool:
    """ln of the two-part mixture's likelihood ratio at ``p`` reaches ln(1/alpha), written out afresh."""
    a, b = _beta_prior(centre, ALPHA, 1000)
    parts = [
        math.lgamma(a_ + x)
        + math.lgamma(b_ + n - x)
        - math.lgamma(a_ + b_ + n)
        - math.lgamma(a_)
        - math.lgamma(b_)
        + math.lgamma(a_ + b_)
        for a_, b_ in ((a, b), (1.0, 1.0))
    ]
    top = max(parts)
    mixture = top + math.log(sum(math.exp(part - top) for part in parts) / 2)
    likelihood = (x * math.log(p) if x else 0.0) + ((n - x) * math.log1p(-p) if n - x else 0.0)
    return mixture - likelihood >= -math.log(ALPHA)


CASES = [
    (x, n)
    for n in (1, 2, 7, 36, 659, 2480, 47_520, 10**6, 10**8, 9 * 10**8)
    for x in sorted({0, 1, n // 1000, n // 100, n // 3, n - 1, n})
    if 0 <= x <= n
]


@pytest.mark.parametrize(("x", "n"), CASES)
@pytest.mark.parametrize("centre", [0.02, 0.5])
def test_each_bound_is_included_and_within_1e_12_of_an_excluded_rate(x: int, n: int, centre: float) -> None:
    interval = confidence_sequence(x, n, ALPHA, centre)
    assert 0.0 <= interval.low <= x / n <= interval.high <= 1.0
    # The bounds are absolute to 1e-12: one closer than that to 0 or 1 has no excluded rate to check beside it.
    if interval.low > 0:
        assert not _excluded(x, n, interval.low, centre)
        assert interval.low < 1.1e-12 or _excluded(x, n, interval.low - 1.1e-12, centre)
    if interval.high < 1:
        assert not _excluded(x, n, interval.high, centre)
        assert interval.high > 1 - 1.1e-12 or _excluded(x, n, interval.high + 1.1e-12, centre)


def _result(tmp_path: Path) -> GateResult:
    start = datetime(2026, 11, 20, tzinfo=UTC)
    plan = load_plan(write_plan(tmp_path), "plan.yaml")
    plan = plan._replace(history=(Transition(start, "t", "promote", 0, 1, "Passed", "ok"),))

    def counts(n: int) -> dict[str, ArmCounts]:
        hits = {"dropped_finding": n // 90, "incompatible_version": 0, "coercion": n // 7, "rejected": n // 120}
        return {
            arm: ArmCounts(n * k, {k2: v * k for k2, v in {**hits, "all_findings_dropped": 0}.items()})
            for arm, k in (("candidate", 1), ("baseline", 19))
        }

    looks = tuple(Look(start + timedelta(hours=h), counts(40 * h)) for h in range(1, 30))
    return evaluate(plan, counts(1200), Readiness(True), start + timedelta(hours=30), looks=looks)


def test_the_gate_json_is_the_bytes_of_json_dumps_with_an_indent(tmp_path: Path) -> None:
    result = _result(tmp_path)
    assert len(result.to_dict()["metrics"][0]["looks"]) == 30
    assert result.dumps() == json.dumps(result.to_dict(), indent=2)
    odd = result._replace(sentence='caf\u00e9 \u2028 \x7f "quoted" \\ /', srm={"share": 1e-7, "big": 10**30})
    assert odd.dumps() == json.dumps(odd.to_dict(), indent=2)
    # msgspec does not read NaN: such a document still comes out as Python's json writes it.
    nan = result._replace(srm={"p_value": float("nan")})
    assert nan.dumps() == json.dumps(nan.to_dict(), indent=2)


@pytest.mark.parametrize(
    "srm",
    [
        # Numbers msgspec writes otherwise than json.dumps, and ones that look like them.
        {"small": [1e-5, -2.5e-6, 1e-7, 9.99e-5, 1e-4, 0.00011, 5e-324, 1e-300, 10.00001, 100.00002, -0.0]},
        {"large": [1e16, -1.2345678901234568e17, 9999999999999998.0, 1e300, 2.0**70], "int": 2**70},
        # Strings holding what the number fixes match, escapes, and a tuple (read back as a list).
        {"note": "a,0.00001,b e5, 1e-7]", "0.00001}": "e16}", "esc": '\x01\t\n"\\/\x1f'},
        {"tuple": (1, 2e-5), "inf": [float("inf"), float("-inf")]},
    ],
)
def test_the_gate_json_writes_every_number_and_string_as_json_dumps(tmp_path: Path, srm: dict[str, Any]) -> None:
    result = _result(tmp_path)._replace(srm=srm)
    assert result.dumps() == json.dumps(result.to_dict(), indent=2)
