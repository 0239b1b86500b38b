"""The rollout gate: per-response rates of the current step against the plan's SLOs (docs/rollouts.md).

``read_window`` asks the store (a ``CountsSource``) for counts per arm (the gate itself reads the same counts
hour by hour with promptops.rollout.looks, for its looks); ``evaluate`` is pure:
counts, readiness and the clock in, a ``GateResult`` out. Each critical metric is judged on the candidate arm
with a one-sided bound at the plan's alpha (fail when the lower bound exceeds the SLO, pass when the upper bound
is within it with at least the responses a zero-failure pass needs, otherwise inconclusive), and, with a margin,
on the interval for candidate minus baseline. The plan's ``statistics`` picks the bounds (promptops.rollout.stats):
always-valid confidence sequences, or fixed Wilson/Newcombe bounds valid for a single look. Verdicts and exit
codes follow the review gate's. Usefulness metrics (catalogue unit ``pull_request``) are judged on the findings'
feedback by promptops.rollout.usefulness.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from promptops.core.outcomes import Verdict, exit_code
from promptops.rollout.plan import Plan, Slo, require_guards
from promptops.rollout.stats import FIXED, bounds, difference_bounds, sample_ratio_p_value, zero_failure_need
from promptops.store import catalogue
from promptops.store.source import ArmCounts as ArmCounts  # re-exported: the gate's input
from promptops.store.source import CountsSource, Window

if TYPE_CHECKING:  # feedback, and the usefulness metrics that judge it, load only for a plan that gates one
    from promptops.store.source import ArmFeedback

SRM_P_VALUE = 0.001
ARMS = ("baseline", "candidate")


class Reason(StrEnum):
    INSUFFICIENT_SAMPLE = "INSUFFICIENT_SAMPLE"
    CI_STRADDLES = "CI_STRADDLES"
    SLO_BREACH = "SLO_BREACH"
    BASELINE_REGRESSION = "BASELINE_REGRESSION"
    SRM = "SRM"
    NO_DATA = "NO_DATA"
    PARSER_NOT_READY = "PARSER_NOT_READY"


class Purpose(StrEnum):
    MONITOR = "monitor"  # watching a slice: an inconclusive result warns
    PROMOTE = "promote"  # deciding to move on: an inconclusive result holds


class Look(NamedTuple):
    """An earlier look at the step: the counts from the step's start up to ``at`` (aware UTC)."""

    at: datetime
    counts: dict[str, ArmCounts]


# The results are NamedTuples: a dataclass compiles its methods with exec at import, which the gate pays at start-up.
class Readiness(NamedTuple):
    """Whether the parser that reads the candidate has shipped (the plan's first stage)."""

    ready: bool
    problems: tuple[str, ...] = ()


class ArmEstimate(NamedTuple):
    n: int
    x: int
    rate: float | None
    low: float
    high: float

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "x": self.x, "rate": self.rate, "lower": self.low, "upper": self.high}


class MetricResult(NamedTuple):
    metric: str
    severity: str
    slo: float
    margin: float | None
    n_needed: int
    arms: dict[str, ArmEstimate]
    difference: tuple[float, float, float] | None  # estimate, lower, upper of candidate - baseline
    status: str  # pass, fail, inconclusive, warn
    reason: Reason | None
    message: str
    path: tuple[dict[str, Any], ...] = ()  # the bounds at each look, the last one this gate's
    pending: dict[str, int] | None = None  # a usefulness metric's findings per arm with no feedback yet

    def to_dict(self) -> dict[str, Any]:
        pending = {} if self.pending is None else {"pending": self.pending}
        return {
            "metric": self.metric,
            "severity": self.severity,
            "slo": self.slo,
            "margin": self.margin,
            "n_needed": self.n_needed,
            "arms": {arm: estimate.to_dict() for arm, estimate in self.arms.items()},
            "difference": None
            if self.difference is None
            else dict(zip(("estimate", "lower", "upper"), self.difference, strict=True)),
            "status": self.status,
            "reason": None if self.reason is None else str(self.reason),
            "message": self.message,
            "looks": list(self.path),
            **pending,
        }


class GateResult(NamedTuple):
    rollout: str
    contract: str
    step: int
    step_name: str
    weight: float
    purpose: Purpose
    verdict: Verdict
    reason: Reason | None
    sentence: str
    exit_code: int
    window: dict[str, Any]
    statistics: dict[str, Any]
    readiness: Readiness | None = None
    metrics: tuple[MetricResult, ...] = ()
    srm: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rollout": self.rollout,
            "contract": self.contract,
            "step": self.step,
            "step_name": self.step_name,
            "weight": self.weight,
            "purpose": str(self.purpose),
            "verdict": str(self.verdict),
            "reason": None if self.reason is None else str(self.reason),
            "sentence": self.sentence,
            "exit_code": self.exit_code,
            "window": self.window,
            "statistics": self.statistics,
            "srm": self.srm,
            "parser": None
            if self.readiness is None
            else {"ready": self.readiness.ready, "problems": list(self.readiness.problems)},
            "metrics": [m.to_dict() for m in self.metrics],
        }

    def dumps(self) -> str:
        """The JSON text, indented by two spaces: the bytes of ``json.dumps(..., indent=2)``.

        With an indent, json.dumps encodes in Python (a third of a large gate's work, hundreds of looks); its C
        encoder writes the compact text, which msgspec re-indents token by token, numbers and escapes as written.
        """
        data = self.to_dict()
        try:
            return msgspec.json.format(json.dumps(data, separators=(",", ":")), indent=2)
        except msgspec.DecodeError:  # NaN or Infinity, which msgspec does not read
            return json.dumps(data, indent=2)


def read_window(
    source: CountsSource, plan: Plan, since: datetime | None, until: datetime | None = None, arm: str | None = None
) -> dict[str, ArmCounts]:
    """Counts per arm of the plan's responses from ``since`` (the step's start) to ``until`` (the gate's now,
    inclusive: a replay counts nothing logged after it), from the store; both naive UTC. ``arm``: only that
    arm's responses are asked for (cheaper when the caller needs one)."""
    counts = source.counts(Window(plan.contract, plan.rollout_id, since, until, arm))
    return {arm: arm_counts for arm, arm_counts in counts.items() if arm is not None and arm in ARMS}


def evaluate(
    plan: Plan,
    counts: dict[str, ArmCounts],
    readiness: Readiness,
    now: datetime,
    purpose: Purpose = Purpose.MONITOR,
    *,
    strict_warnings: bool = False,
    strict_artifacts: bool = False,
    looks: tuple[Look, ...] = (),
    feedback: dict[str, ArmFeedback] | None = None,
) -> GateResult:
    """Judge the plan's current step from ``counts`` (the step's window up to ``now``) at time ``now``.

    ``looks`` are the step's earlier looks (promptops.rollout.looks), reported with their bounds; this gate is
    the last look. ``feedback`` is per arm what the usefulness metrics judge (None: not read: they have no data).

    Raises PlanError for a plan without critical ``rejected`` and ``all_findings_dropped`` SLOs: a rejected
    answer trips no other indicator, so such a plan would pass a candidate that answers nothing usable.
    """
    require_guards(plan)
    step = plan.steps[plan.step]
    started = plan.step_started
    window = {
        "since": None if started is None else started.isoformat(),
        "now": now.isoformat(),
        "elapsed_seconds": None if started is None else (now - started).total_seconds(),
        "min_duration_seconds": step.min_duration.total_seconds(),
        "min_responses": step.min_responses,
        "responses": {arm: counts[arm].n if arm in counts else 0 for arm in ARMS},
    }
    statistics = {
        "method": plan.statistics,
        "valid_for": "a single look" if plan.statistics == FIXED else "every look",
        "alpha": plan.alpha,
        "looks": len(looks) + 1,
    }

    def result(verdict: Verdict, reason: Reason | None, sentence: str, **extra: Any) -> GateResult:
        return GateResult(
            plan.rollout_id,
            plan.contract,
            plan.step,
            step.name,
            plan.weight,
            purpose,
            verdict,
            reason,
            sentence,
            exit_code(verdict, strict_warnings=strict_warnings, strict_artifacts=strict_artifacts),
            window=window,
            readiness=readiness,
            statistics=statistics,
            **extra,
        )

    if step.weight == 0 and not plan.rolled_back:
        if not readiness.ready:
            return result(
                Verdict.FAILED,
                Reason.PARSER_NOT_READY,
                f"The parser is not ready for the candidate: {'; '.join(readiness.problems)}.",
            )
        return result(
            Verdict.PASSED,
            None,
            "The released parser accepts both baseline and candidate: "
            "the candidate can get its first slice of traffic.",
        )
    if not readiness.ready:
        return result(
            Verdict.FAILED,
            Reason.PARSER_NOT_READY,
            f"The parser is not ready for the candidate: {'; '.join(readiness.problems)}.",
        )
    total = sum(arm.n for arm in counts.values())
    if total == 0:
        nothing = f"no responses of rollout {plan.rollout_id} in this step yet: nothing to judge."
        if purpose == Purpose.PROMOTE:  # a promotion needs evidence: nothing to judge holds, never passes
            return result(Verdict.ESCALATE, Reason.NO_DATA, f"Hold: {nothing}")
        return result(Verdict.SKIPPED, Reason.NO_DATA, nothing[0].upper() + nothing[1:])
    metrics = tuple(_metric(slo, counts, plan, looks, now, feedback) for slo in plan.slos)
    candidate_n = counts["candidate"].n if "candidate" in counts else 0
    baseline_n = counts["baseline"].n if "baseline" in counts else 0
    srm = None
    if 0 < plan.weight < 1:
        p_value = sample_ratio_p_value(candidate_n, baseline_n, plan.weight)
        srm = {
            "p_value": p_value,
            "candidate": candidate_n,
            "baseline": baseline_n,
            "weight": plan.weight,
            "expected_candidate_share": plan.weight,
            "observed_candidate_share": candidate_n / max(total, 1),
        }
    failed = [m for m in metrics if m.status == "fail"]
    if failed:
        worst = failed[0]
        return result(Verdict.FAILED, worst.reason, worst.message, metrics=metrics, srm=srm)
    if srm is not None and srm["p_value"] < SRM_P_VALUE:
        share = srm["observed_candidate_share"]
        return result(
            Verdict.ESCALATE,
            Reason.SRM,
            f"Traffic is not split as planned: the candidate got {share:.2%} of responses against a weight "
            f"of {plan.weight:.0%} (chi-square p = {srm['p_value']:.1e}); check assignment and logging.",
            metrics=metrics,
            srm=srm,
        )
    waiting = _unmet_minimums(plan, counts, now)
    unsure = [m for m in metrics if m.status == "inconclusive"]
    if waiting or unsure:
        reason = Reason.INSUFFICIENT_SAMPLE if waiting else unsure[0].reason
        sentence = waiting[0] if waiting else unsure[0].message
        verdict = Verdict.ESCALATE if purpose == Purpose.PROMOTE else Verdict.PASSED_WITH_WARNINGS
        if purpose == Purpose.PROMOTE:
            sentence = f"Hold: {sentence[0].lower()}{sentence[1:]}"
        return result(verdict, reason, sentence, metrics=metrics, srm=srm)
    warned = [m for m in metrics if m.status == "warn"]
    if warned:
        return result(Verdict.PASSED_WITH_WARNINGS, warned[0].reason, warned[0].message, metrics=metrics, srm=srm)
    return result(
        Verdict.PASSED,
        None,
        f"Every SLO holds on the candidate at step {plan.step} ({step.name}) with enough "
        f"responses ({candidate_n:,} candidate, {baseline_n:,} baseline).",
        metrics=metrics,
        srm=srm,
    )


def _estimates(slo: Slo, counts: dict[str, ArmCounts], plan: Plan) -> dict[str, ArmEstimate]:
    arms: dict[str, ArmEstimate] = {}
    for arm in ARMS:
        if arm in counts:
            n, x = counts[arm].n, counts[arm].hits[slo.metric]
            interval = bounds(plan.statistics, x, n, plan.alpha, slo.slo)
            arms[arm] = ArmEstimate(n, x, x / n if n else None, interval.low, interval.high)
    return arms


def _difference(slo: Slo, arms: dict[str, ArmEstimate], plan: Plan) -> tuple[float, float, float] | None:
    candidate, baseline = arms.get("candidate"), arms.get("baseline")
    if slo.margin is None or candidate is None or baseline is None or not candidate.n or not baseline.n:
        return None
    d = difference_bounds(plan.statistics, (candidate.x, candidate.n), (baseline.x, baseline.n), plan.alpha)
    return d.estimate, d.low, d.high


def _look(at: datetime, arms: dict[str, ArmEstimate], difference: tuple[float, float, float] | None) -> dict[str, Any]:
    return {
        "at": at.isoformat(),
        "arms": {arm: estimate.to_dict() for arm, estimate in arms.items()},
        "difference": None
        if difference is None
        else dict(zip(("estimate", "lower", "upper"), difference, strict=True)),
    }


def _path(slo: Slo, plan: Plan, looks: tuple[Look, ...]) -> list[dict[str, Any]]:
    """The bounds at each earlier look, judged as this gate judges."""
    path = []
    for look in looks:
        arms = _estimates(slo, look.counts, plan)
        path.append(_look(look.at, arms, _difference(slo, arms, plan)))
    return path


def _metric(
    slo: Slo,
    counts: dict[str, ArmCounts],
    plan: Plan,
    looks: tuple[Look, ...],
    now: datetime,
    feedback: dict[str, ArmFeedback] | None,
) -> MetricResult:
    metric = catalogue.metric(slo.metric)
    if metric.unit == "pull_request":  # judged at this look only: feedback has no hourly looks
        from promptops.rollout import usefulness

        judged = usefulness.judge(metric, slo, feedback, plan)
        useful = {arm: ArmEstimate(*estimate) for arm, estimate in judged.arms.items()}
        return MetricResult(
            slo.metric,
            slo.severity,
            slo.slo,
            slo.margin,
            0,
            useful,
            judged.difference,
            judged.status,
            None if judged.reason is None else Reason(judged.reason),
            judged.message,
            (_look(now, useful, judged.difference),),
            judged.pending,
        )
    arms = _estimates(slo, counts, plan)
    needed = zero_failure_need(plan.statistics, slo.slo, plan.alpha)
    name = slo.metric.replace("_", " ")
    candidate = arms.get("candidate")
    status, reason, message = "pass", None, ""
    if candidate is None or candidate.n == 0:
        status, reason = "inconclusive", Reason.INSUFFICIENT_SAMPLE
        message = f"No candidate responses yet for {name} (need {needed:,} to judge an SLO of {slo.slo:.2%})."
    elif candidate.low > slo.slo:
        status, reason = "fail", Reason.SLO_BREACH
        message = (
            f"The candidate's {name} rate is at least {candidate.low:.2%} (lower bound; {candidate.x} of "
            f"{candidate.n:,} responses) against an SLO of {slo.slo:.2%}: SLO breach."
        )
    elif candidate.n < needed:
        status, reason = "inconclusive", Reason.INSUFFICIENT_SAMPLE
        message = (
            f"{candidate.n:,} candidate responses are too few to judge {name} against {slo.slo:.2%}: "
            f"{needed:,} are needed."
        )
    elif candidate.high > slo.slo:
        status, reason = "inconclusive", Reason.CI_STRADDLES
        message = (
            f"The candidate's {name} rate is {candidate.rate:.2%}, between {candidate.low:.2%} and "
            f"{candidate.high:.2%}: the interval straddles the SLO of {slo.slo:.2%}."
        )
    baseline = arms.get("baseline")
    difference = _difference(slo, arms, plan)
    if difference is not None and candidate is not None and baseline is not None and slo.margin is not None:
        d_estimate, d_low, d_high = difference
        if status != "fail":
            if d_low > slo.margin:
                status, reason = "fail", Reason.BASELINE_REGRESSION
                message = (
                    f"The candidate's {name} rate exceeds the baseline's by at least {d_low:.2%} (candidate "
                    f"{candidate.rate:.2%}, baseline {baseline.rate:.2%}), more than the margin of "
                    f"{slo.margin:.2%}: regression against the baseline."
                )
            elif d_high > slo.margin and status == "pass":
                status, reason = "inconclusive", Reason.CI_STRADDLES
                message = (
                    f"The candidate's {name} rate is {d_estimate:+.2%} from the baseline's, up to "
                    f"{d_high:+.2%}: not yet shown within the margin of {slo.margin:.2%}."
                )
    if slo.severity == "warning" and status != "pass":
        # A warning metric never holds or fails a rollout: a breach warns, an open question is noted.
        status = "warn" if status == "fail" else "pass"
    if status == "pass" and not message:
        message = f"{name}: within {slo.slo:.2%}" + (f" and the margin of {slo.margin:.2%}" if difference else "")
    return MetricResult(
        slo.metric,
        slo.severity,
        slo.slo,
        slo.margin,
        needed,
        arms,
        difference,
        status,
        reason,
        message,
        (*_path(slo, plan, looks), _look(now, arms, difference)),
    )


def _unmet_minimums(plan: Plan, counts: dict[str, ArmCounts], now: datetime) -> list[str]:
    step = plan.steps[plan.step]
    notes = []
    for arm in ARMS:
        if arm == "baseline" and plan.weight >= 1:
            continue
        n = counts[arm].n if arm in counts else 0
        if n < step.min_responses:
            notes.append(f"The {arm} has {n:,} of the {step.min_responses:,} responses step {step.name} needs.")
    started = plan.step_started
    if step.min_duration and started is not None and now - started < step.min_duration:
        left = step.min_duration - (now - started)
        notes.append(
            f"Step {step.name} has run {_human(now - started)} of its {_human(step.min_duration)}: "
            f"{_human(left)} to go."
        )
    return notes


def _human(delta: Any) -> str:
    seconds = int(delta.total_seconds())
    if seconds >= 86400:
        return f"{seconds / 86400:.1f}d"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    return f"{seconds // 60}m"
