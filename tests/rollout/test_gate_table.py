"""Every row of the verdict and exit-code table (docs/rollouts.md), on the pure gate."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from promptops.core.outcomes import Verdict, exit_code
from promptops.rollout.gate import ArmCounts, Purpose, Readiness, Reason, evaluate
from promptops.rollout.plan import Plan, Transition, load_plan
from tests.rollout.plans import write_plan

START = datetime(2026, 11, 20, tzinfo=UTC)
LATER = START + timedelta(days=2)
READY = Readiness(True)


def _plan(tmp_path: Path, step: int = 1) -> Plan:
    plan = load_plan(write_plan(tmp_path), "plan.yaml")
    history = tuple(Transition(START, "t", "promote", i, i + 1, "Passed", "ok") for i in range(step))
    return plan._replace(history=history)


def _arm(n: int, dropped: int = 0, incompatible: int = 0, coerced: int = 0) -> ArmCounts:
    hits = {
        "dropped_finding": dropped,
        "incompatible_version": incompatible,
        "coercion": coerced,
        "rejected": incompatible,
        "all_findings_dropped": 0,
    }
    return ArmCounts(n, hits)


# plan: dropped_finding slo 2% margin 1% critical; incompatible_version 1% critical; coercion 20% warning.
# step 1 (canary): weight 5%, min 300 responses, 24h.
ROWS = [
    # id, counts, purpose, verdict, reason, exit (plain), exit (strict-warnings), exit (strict-artifacts)
    ("no-data", {}, Purpose.MONITOR, Verdict.SKIPPED, Reason.NO_DATA, 0, 0, 2),
    ("no-data-promoting", {}, Purpose.PROMOTE, Verdict.ESCALATE, Reason.NO_DATA, 2, 2, 2),
    (
        "clean-enough",
        {"candidate": _arm(3000), "baseline": _arm(57000, dropped=600)},
        Purpose.PROMOTE,
        Verdict.PASSED,
        None,
        0,
        0,
        0,
    ),
    (
        "slo-breach",
        {"candidate": _arm(400, dropped=60), "baseline": _arm(7600, dropped=70)},
        Purpose.MONITOR,
        Verdict.FAILED,
        Reason.SLO_BREACH,
        2,
        2,
        2,
    ),
    (
        "baseline-regression",
        {"candidate": _arm(3000, dropped=58), "baseline": _arm(57000, dropped=10)},
        Purpose.MONITOR,
        Verdict.FAILED,
        Reason.BASELINE_REGRESSION,
        2,
        2,
        2,
    ),
    ("srm", {"candidate": _arm(3000), "baseline": _arm(17000)}, Purpose.MONITOR, Verdict.ESCALATE, Reason.SRM, 2, 2, 2),
    (
        "inconclusive-monitoring",
        {"candidate": _arm(100), "baseline": _arm(1900)},
        Purpose.MONITOR,
        Verdict.PASSED_WITH_WARNINGS,
        Reason.INSUFFICIENT_SAMPLE,
        0,
        1,
        0,
    ),
    (
        "inconclusive-promoting",
        {"candidate": _arm(100), "baseline": _arm(1900)},
        Purpose.PROMOTE,
        Verdict.ESCALATE,
        Reason.INSUFFICIENT_SAMPLE,
        2,
        2,
        2,
    ),
    (
        "straddles",
        {"candidate": _arm(3000, dropped=55), "baseline": _arm(57000, dropped=1000)},
        Purpose.PROMOTE,
        Verdict.ESCALATE,
        Reason.CI_STRADDLES,
        2,
        2,
        2,
    ),
    (
        "warning-metric",
        {"candidate": _arm(3000, coerced=900), "baseline": _arm(57000, coerced=9000)},
        Purpose.PROMOTE,
        Verdict.PASSED_WITH_WARNINGS,
        Reason.SLO_BREACH,
        0,
        1,
        0,
    ),
]


@pytest.mark.parametrize(
    ("counts", "purpose", "verdict", "reason", "plain", "strict_w", "strict_a"),
    [r[1:] for r in ROWS],
    ids=[r[0] for r in ROWS],
)
def test_verdict_table(
    tmp_path: Path,
    counts: dict[str, ArmCounts],
    purpose: Purpose,
    verdict: Verdict,
    reason: Reason | None,
    plain: int,
    strict_w: int,
    strict_a: int,
) -> None:
    plan = _plan(tmp_path)
    result = evaluate(plan, counts, READY, LATER, purpose)
    assert (result.verdict, result.reason, result.exit_code) == (verdict, reason, plain), result.sentence
    assert evaluate(plan, counts, READY, LATER, purpose, strict_warnings=True).exit_code == strict_w
    assert evaluate(plan, counts, READY, LATER, purpose, strict_artifacts=True).exit_code == strict_a
    assert result.sentence and result.sentence.endswith(".")


def test_parser_stage(tmp_path: Path) -> None:
    plan = _plan(tmp_path, step=0)
    ready = evaluate(plan, {}, READY, LATER)
    assert (ready.verdict, ready.exit_code) == (Verdict.PASSED, 0)
    not_ready = evaluate(plan, {}, Readiness(False, ("the candidate prompt 1.1.0 is not released",)), LATER)
    assert (not_ready.verdict, not_ready.reason, not_ready.exit_code) == (Verdict.FAILED, Reason.PARSER_NOT_READY, 2)
    assert "1.1.0 is not released" in not_ready.sentence


def test_minimum_duration_holds_a_promotion(tmp_path: Path) -> None:
    plan = _plan(tmp_path)
    counts = {"candidate": _arm(3000), "baseline": _arm(57000, dropped=600)}
    early = evaluate(plan, counts, READY, START + timedelta(hours=3), Purpose.PROMOTE)
    assert (early.verdict, early.reason) == (Verdict.ESCALATE, Reason.INSUFFICIENT_SAMPLE)
    assert "21.0h to go" in early.sentence


def test_json_carries_n_x_bounds_slo_and_reason(tmp_path: Path) -> None:
    result = evaluate(_plan(tmp_path), {"candidate": _arm(400, dropped=60), "baseline": _arm(7600)}, READY, LATER)
    metric = result.to_dict()["metrics"][0]
    candidate = metric["arms"]["candidate"]
    assert (metric["metric"], metric["slo"], metric["reason"], candidate["n"], candidate["x"]) == (
        "dropped_finding",
        0.02,
        "SLO_BREACH",
        400,
        60,
    )
    assert candidate["lower"] < candidate["rate"] < candidate["upper"]
    assert metric["difference"]["lower"] > 0


@pytest.mark.parametrize(("verdict", "expected"), [(Verdict.PASSED, 0), (Verdict.FAILED, 2), (Verdict.ESCALATE, 2)])
def test_exit_codes(verdict: Verdict, expected: int) -> None:
    assert exit_code(verdict) == exit_code(verdict, strict_warnings=True, strict_artifacts=True) == expected
