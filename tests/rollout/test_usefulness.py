"""The usefulness judge on its own: floors and ceilings, margins, and no decided finding never passing."""

from __future__ import annotations

from promptops.rollout.plan import Plan, Slo, load_plan
from promptops.rollout.usefulness import judge
from promptops.store.catalogue import metric
from promptops.store.feedback_units import ArmFeedback
from tests.helpers import REPO_ROOT

PLAN = "rollout/review-result/review-1.1.yaml"


def _plan(statistics: str = "always-valid") -> Plan:
    return load_plan(REPO_ROOT / PLAN, PLAN)._replace(statistics=statistics)


def _arm(acted: int, dismissed: int, prs: int, pending: int = 0) -> ArmFeedback:
    """``prs`` pull requests, each with ``acted`` acted-on and ``dismissed`` dismissed findings."""
    return ArmFeedback.of([(acted, dismissed, acted + dismissed)] * prs, pending)


def test_the_acted_on_rate_is_a_floor() -> None:
    slo = Slo("acted_on_rate", 0.25)
    low = judge(metric("acted_on_rate"), slo, {"candidate": _arm(1, 9, 200)}, _plan())
    assert (low.status, low.reason) == ("fail", "SLO_BREACH") and low.arms["candidate"].high < 0.25
    high = judge(metric("acted_on_rate"), slo, {"candidate": _arm(5, 5, 200)}, _plan())
    assert (high.status, high.reason) == ("pass", None) and high.arms["candidate"].low >= 0.25


def test_the_dismissed_rate_is_a_ceiling() -> None:
    slo = Slo("dismissed_rate", 0.5)
    judged = judge(metric("dismissed_rate"), slo, {"candidate": _arm(1, 9, 200)}, _plan("fixed"))
    assert (judged.status, judged.reason) == ("fail", "SLO_BREACH") and judged.arms["candidate"].low > 0.5
    assert judged.arms["candidate"].x == 9 * 200


def test_per_pull_request_counts_pull_requests_and_a_prompt_that_says_less_falls() -> None:
    slo = Slo("acted_on_per_pr", 1.5, margin=0.5)
    baseline = _arm(2, 2, 150)  # two acted-on findings per pull request
    terse = _arm(1, 0, 150)  # a perfect acted-on rate, but one finding per pull request
    judged = judge(metric("acted_on_per_pr"), slo, {"candidate": terse, "baseline": baseline}, _plan())
    assert judged.arms["candidate"].n == 150 and judged.arms["candidate"].rate == 1.0
    assert (judged.status, judged.reason) == ("fail", "SLO_BREACH")
    rate = judge(metric("acted_on_rate"), Slo("acted_on_rate", 0.25), {"candidate": terse}, _plan())
    assert rate.status == "pass"  # the rate alone would let it through


def test_a_margin_judges_the_drop_below_the_baseline() -> None:
    slo = Slo("acted_on_rate", 0.05, margin=0.1)
    arms = {"candidate": _arm(2, 8, 300), "baseline": _arm(5, 5, 300)}
    judged = judge(metric("acted_on_rate"), slo, arms, _plan())
    assert (judged.status, judged.reason) == ("fail", "BASELINE_REGRESSION")
    assert judged.difference is not None and judged.difference[2] < -0.1
    same = judge(metric("acted_on_rate"), slo, {"candidate": _arm(2, 8, 2000), "baseline": _arm(2, 8, 2000)}, _plan())
    assert same.status == "pass"


def test_nothing_decided_is_no_data_and_never_a_pass() -> None:
    slo = Slo("acted_on_rate", 0.25)
    for feedback in (None, {}, {"candidate": ArmFeedback.of([], 40)}, {"candidate": ArmFeedback.of([(0, 0, 0)], 3)}):
        judged = judge(metric("acted_on_rate"), slo, feedback, _plan())
        assert (judged.status, judged.reason, judged.arms) == ("inconclusive", "NO_DATA", {})
    warned = judge(metric("acted_on_rate"), slo._replace(severity="warning"), None, _plan())
    assert (warned.status, warned.reason) == ("warn", "NO_DATA")
    pending = judge(metric("acted_on_rate"), slo, {"candidate": ArmFeedback.of([], 40)}, _plan())
    assert (
        pending.pending == {"baseline": 0, "candidate": 40} and "40 candidate findings still pending" in pending.message
    )
    # With a margin, a baseline with nothing decided is no data too, however good the candidate.
    margin = judge(metric("acted_on_rate"), slo._replace(margin=0.05), {"candidate": _arm(9, 1, 300)}, _plan())
    assert (margin.status, margin.reason) == ("inconclusive", "NO_DATA")
