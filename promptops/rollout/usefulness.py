"""The gate's usefulness metrics (docs/usefulness.md, Usefulness gates): catalogue metrics of unit
``pull_request``, judged on decided findings only, with intervals clustered by pull request
(promptops.rollout.clustered) under the plan's ``statistics``.

A higher-is-better metric's SLO is a floor: it fails when the candidate's upper bound is below it and passes when
the lower bound reaches it; its margin is the largest acceptable drop below the baseline. A lower-is-better one
is judged as the per-response metrics are. No decided finding is NO_DATA: never a pass. Pure: the counts come in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from promptops.rollout import clustered
from promptops.rollout.plan import Plan, Slo
from promptops.rollout.stats import Interval
from promptops.store.catalogue import Metric
from promptops.store.feedback_units import ArmFeedback, ClusterSums

ARMS = ("baseline", "candidate")


class Estimate(NamedTuple):
    n: int  # decided findings (a rate) or pull requests with one (per pull request)
    x: int  # acted-on or dismissed findings
    rate: float | None
    low: float
    high: float


class Judgement(NamedTuple):
    arms: dict[str, Estimate]
    difference: tuple[float, float, float] | None
    status: str  # pass, fail, inconclusive, warn
    reason: str | None  # a gate Reason's value
    message: str
    pending: dict[str, int]


def _sums(metric: Metric, arm: ArmFeedback) -> ClusterSums:
    return arm.dismissed if metric.column == "dismissed" else arm.acted_on


def _one(metric: Metric) -> Callable[[ClusterSums, str, float], Interval | None]:
    return clustered.per_pull_request if metric.column == "acted_on_per_pr" else clustered.acted_on_rate


def _two(metric: Metric) -> Callable[[ClusterSums, ClusterSums, str, float], Interval | None]:
    if metric.column == "acted_on_per_pr":
        return clustered.per_pull_request_difference
    return clustered.acted_on_rate_difference


def judge(metric: Metric, slo: Slo, feedback: dict[str, ArmFeedback] | None, plan: Plan) -> Judgement:
    """The usefulness metric ``metric`` of the plan's ``slo`` on the arms' ``feedback`` (None: none was read)."""
    feedback = feedback or {}
    pending = {arm: feedback[arm].pending if arm in feedback else 0 for arm in ARMS}
    pairs = {arm: _sums(metric, feedback[arm]) for arm in ARMS if arm in feedback}
    arms: dict[str, Estimate] = {}
    for arm, prs in pairs.items():
        interval = _one(metric)(prs, plan.statistics, plan.alpha)
        if interval is not None:
            n = prs.clusters if metric.column == "acted_on_per_pr" else prs.n
            arms[arm] = Estimate(n, prs.a, interval.estimate, interval.low, interval.high)
    name = metric.name.replace("_", " ")
    floor = metric.direction == "higher_is_better"
    per_pr = metric.column == "acted_on_per_pr"

    def show(value: float) -> str:
        return f"{value:.2f}" if per_pr else f"{value:.2%}"

    waiting = f" ({pending['candidate']:,} candidate findings still pending)" if pending["candidate"] else ""
    candidate = arms.get("candidate")
    status, reason, message = "pass", None, ""
    if candidate is None:
        status, reason = "inconclusive", "NO_DATA"
        message = f"No decided candidate findings yet for {name}{waiting}: nothing to judge against {show(slo.slo)}."
    elif (candidate.high < slo.slo) if floor else (candidate.low > slo.slo):
        status, reason = "fail", "SLO_BREACH"
        bound = f"at most {show(candidate.high)} (upper" if floor else f"at least {show(candidate.low)} (lower"
        message = (
            f"The candidate's {name} is {bound} bound; {candidate.x:,} of {candidate.n:,} decided{waiting}) "
            f"against an SLO of {show(slo.slo)}: SLO breach."
        )
    elif (candidate.low < slo.slo) if floor else (candidate.high > slo.slo):
        status, reason = "inconclusive", "CI_STRADDLES"
        message = (
            f"The candidate's {name} is {show(candidate.low)} to {show(candidate.high)} on decided findings"
            f"{waiting}: the interval straddles the SLO of {show(slo.slo)}."
        )
    difference = None
    if slo.margin is not None and status != "fail":
        if "baseline" not in pairs or "candidate" not in pairs:
            found = None
        else:
            found = _two(metric)(pairs["candidate"], pairs["baseline"], plan.statistics, plan.alpha)
        if found is None:
            status, reason = "inconclusive", "NO_DATA"
            message = message or f"No decided baseline findings yet to compare {name} against{waiting}."
        else:
            difference = (found.estimate, found.low, found.high)
            # Worse than the baseline by more than the margin: lower for a floor, higher for a ceiling.
            worse = (found.high < -slo.margin) if floor else (found.low > slo.margin)
            unsure = (found.low < -slo.margin) if floor else (found.high > slo.margin)
            if worse:
                status, reason = "fail", "BASELINE_REGRESSION"
                message = (
                    f"The candidate's {name} is {show(found.estimate)} from the baseline's (bounds "
                    f"{show(found.low)} to {show(found.high)}), worse than the margin of {show(slo.margin)}: "
                    "regression against the baseline."
                )
            elif unsure and status == "pass":
                status, reason = "inconclusive", "CI_STRADDLES"
                message = (
                    f"The candidate's {name} is {show(found.estimate)} from the baseline's (bounds {show(found.low)}"
                    f" to {show(found.high)}): not yet shown within the margin of {show(slo.margin)}."
                )
    if slo.severity == "warning" and status != "pass":
        # As for every warning metric, except that nothing to judge warns too: no data is never a pass.
        status = "warn" if status == "fail" or reason == "NO_DATA" else "pass"
    if status == "pass" and not message:
        message = (
            f"{name}: {'at least' if floor else 'within'} {show(slo.slo)}"
            + (f" and the margin of {show(slo.margin)}" if slo.margin is not None and difference else "")
            + waiting
        )
    return Judgement(arms, difference, status, reason, message, pending)
