"""Repeated looks at the gate (issue 30): seeded simulations through the pure gate, not timed.

Each rollout is gated at every look on the cumulative counts, as a CI job or a monitor would run it. A look
"fails" or "passes" when the gate's verdict says so. The always-valid default must keep the chance of a wrong
decision at any look within alpha (plus three Monte-Carlo standard errors); the same runs with
``statistics: fixed`` must show the inflation that made the default necessary.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from promptops.core.outcomes import Verdict
from promptops.rollout.gate import ArmCounts, Purpose, Readiness, Reason, evaluate
from promptops.rollout.plan import Plan, PlanError, Slo, Step, Transition, load_plan
from tests.rollout.plans import write_plan

START = datetime(2026, 11, 20, tzinfo=UTC)
ALPHA = 0.05
RUNS = 1000
LIMIT = ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / RUNS)  # 0.0707


def _plan(tmp_path: Path, statistics: str, weight: float, slo: float, margin: float | None) -> Plan:
    base = load_plan(write_plan(tmp_path), "plan.yaml")
    return base._replace(
        statistics=statistics,
        alpha=ALPHA,
        steps=(Step("parser", 0.0), Step("judged", weight)),
        slos=(Slo("rejected", slo, "critical", margin), Slo("all_findings_dropped", 0.5, "critical")),
        history=(Transition(START, "t", "promote", 0, 1, "Passed", "ok"),),
    )


def _arm(n: int, rejected: int) -> ArmCounts:
    hits = {"dropped_finding": 0, "incompatible_version": 0, "coercion": 0, "rejected": rejected}
    return ArmCounts(n, {**hits, "all_findings_dropped": 0})


def _any_look(
    plan: Plan, candidate: np.ndarray, baseline: np.ndarray | None, per_look: int, wanted: Verdict
) -> tuple[float, set[Reason | None]]:
    """Share of rollouts whose gate said ``wanted`` at some look; and the reasons it gave."""
    hit, reasons = 0, set()
    for run in range(candidate.shape[0]):
        for look in range(candidate.shape[1]):
            n = per_look * (look + 1)
            counts = {"candidate": _arm(n, int(candidate[run, look]))}
            if baseline is not None:
                counts["baseline"] = _arm(n, int(baseline[run, look]))
            result = evaluate(plan, counts, Readiness(True), START + timedelta(hours=look + 1))
            if result.verdict == wanted:
                hit += 1
                reasons.add(result.reason)
                break
    return hit / candidate.shape[0], reasons


def _cumulative(rng: np.random.Generator, rate: float, per_look: int, looks: int) -> np.ndarray:
    return rng.binomial(per_look, rate, size=(RUNS, looks)).cumsum(axis=1)


@pytest.mark.slow
def test_one_arm_at_the_slo_fails_at_some_look_within_alpha_only_when_always_valid(tmp_path: Path) -> None:
    # The case: SLO 2%, true rate exactly 2%, 30 looks of 200 responses, full traffic (no baseline).
    counts = _cumulative(np.random.default_rng(30), 0.02, 200, 30)
    always, reasons = _any_look(_plan(tmp_path, "always-valid", 1.0, 0.02, None), counts, None, 200, Verdict.FAILED)
    fixed, _ = _any_look(_plan(tmp_path, "fixed", 1.0, 0.02, None), counts, None, 200, Verdict.FAILED)
    assert always <= LIMIT, always
    assert reasons <= {Reason.SLO_BREACH}
    assert fixed > LIMIT, fixed  # the old bounds, looked at 30 times, cry wolf far more often than alpha


@pytest.mark.slow
def test_one_arm_breach_passes_at_some_look_within_alpha_only_when_always_valid(tmp_path: Path) -> None:
    # A real breach: SLO 2%, true rate 2.1%; a pass at any look would promote a candidate that breaks the SLO.
    counts = _cumulative(np.random.default_rng(31), 0.021, 200, 30)
    always, _ = _any_look(_plan(tmp_path, "always-valid", 1.0, 0.02, None), counts, None, 200, Verdict.PASSED)
    fixed, _ = _any_look(_plan(tmp_path, "fixed", 1.0, 0.02, None), counts, None, 200, Verdict.PASSED)
    assert always <= LIMIT, always
    assert fixed > LIMIT, fixed


@pytest.mark.slow
def test_aa_comparison_raises_a_false_regression_within_alpha_only_when_always_valid(tmp_path: Path) -> None:
    # A/A: both arms at 2%, 200 responses per arm per look, 30 looks, margin ~0; the SLO (10%) is out of reach,
    # so every Failed is a regression against the baseline.
    rng = np.random.default_rng(32)
    candidate, baseline = _cumulative(rng, 0.02, 200, 30), _cumulative(rng, 0.02, 200, 30)
    plans = {method: _plan(tmp_path, method, 0.5, 0.10, 1e-6) for method in ("always-valid", "fixed")}
    always, reasons = _any_look(plans["always-valid"], candidate, baseline, 200, Verdict.FAILED)
    fixed, _ = _any_look(plans["fixed"], candidate, baseline, 200, Verdict.FAILED)
    assert always <= LIMIT, always
    assert reasons <= {Reason.BASELINE_REGRESSION}
    assert fixed > LIMIT, fixed


@pytest.mark.slow
def test_comparison_breach_passes_within_alpha(tmp_path: Path) -> None:
    # The candidate is worse by exactly the margin (3% against 2%, margin 1%): showing non-inferiority at any
    # look is the wrong decision.
    rng = np.random.default_rng(33)
    candidate, baseline = _cumulative(rng, 0.03, 200, 30), _cumulative(rng, 0.02, 200, 30)
    plan = _plan(tmp_path, "always-valid", 0.5, 0.10, 0.01)
    passed, _ = _any_look(plan, candidate, baseline, 200, Verdict.PASSED)
    assert passed <= LIMIT, passed


def test_the_gate_states_its_method_looks_and_the_bound_at_each(tmp_path: Path) -> None:
    from promptops.rollout.gate import Look

    plan = _plan(tmp_path, "always-valid", 0.5, 0.02, 0.01)
    earlier = tuple(
        Look(START + timedelta(hours=h), {"candidate": _arm(100 * h, h), "baseline": _arm(100 * h, h)}) for h in (1, 2)
    )
    now = START + timedelta(hours=2, minutes=30)
    result = evaluate(
        plan,
        {"candidate": _arm(300, 3), "baseline": _arm(300, 3)},
        Readiness(True),
        now,
        Purpose.MONITOR,
        looks=earlier,
    ).to_dict()
    assert result["statistics"] == {"method": "always-valid", "valid_for": "every look", "alpha": ALPHA, "looks": 3}
    rejected = result["metrics"][0]
    assert [look["at"] for look in rejected["looks"]] == [
        "2026-11-20T01:00:00+00:00",
        "2026-11-20T02:00:00+00:00",
        "2026-11-20T02:30:00+00:00",
    ]
    assert [look["arms"]["candidate"]["n"] for look in rejected["looks"]] == [100, 200, 300]
    assert rejected["looks"][-1]["arms"] == rejected["arms"]  # the last look is this gate's
    uppers = [look["difference"]["upper"] for look in rejected["looks"]]
    assert uppers == sorted(uppers, reverse=True)  # same rates, more responses: the bound tightens
    fixed = evaluate(plan._replace(statistics="fixed"), {"candidate": _arm(300, 3)}, Readiness(True), now).to_dict()[
        "statistics"
    ]
    assert fixed["valid_for"] == "a single look"


def test_a_plan_chooses_fixed_statistics_and_a_typo_is_refused(tmp_path: Path) -> None:
    path = write_plan(tmp_path)
    assert load_plan(path, "review-1.1.yaml").statistics == "always-valid"
    path.write_text("statistics: fixed\n" + path.read_text())
    assert load_plan(path, "review-1.1.yaml").statistics == "fixed"
    path.write_text(path.read_text().replace("statistics: fixed", "statistics: sequential"))
    with pytest.raises(PlanError, match=r"review-1.1.yaml: line 1: statistics: must be one of"):
        load_plan(path, "review-1.1.yaml")


def test_sizing_follows_the_plans_statistics(tmp_path: Path) -> None:
    from promptops.rollout.sizing import plan_needs
    from promptops.rollout.stats import non_inferiority_need, zero_failure_need

    plan = _plan(tmp_path, "always-valid", 0.5, 0.02, 0.01)
    for method in ("always-valid", "fixed"):
        need = plan_needs(plan._replace(statistics=method))[1]
        rejected = need.metrics[0]
        assert rejected.zero_failure == zero_failure_need(method, 0.02, ALPHA)
        assert rejected.per_arm == non_inferiority_need(method, 0.02, 0.01, ALPHA)
        assert need.candidate_needed == need.baseline_needed == rejected.per_arm
    always, fixed = (plan_needs(plan._replace(statistics=m))[1].candidate_needed for m in ("always-valid", "fixed"))
    assert always > fixed  # a bound that holds at every look needs more responses to decide
