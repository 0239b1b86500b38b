"""What each step of a plan needs before it can decide: ``promptops rollout plan``."""

from __future__ import annotations

from dataclasses import dataclass

from promptops.rollout.plan import Plan
from promptops.rollout.stats import non_inferiority_need, zero_failure_need
from promptops.store import catalogue


@dataclass(frozen=True)
class MetricNeed:
    metric: str
    slo: float
    severity: str
    zero_failure: int  # responses to pass the absolute SLO with no failure at all
    per_arm: int | None  # responses per arm to show non-inferiority within the margin (None: no margin)


@dataclass(frozen=True)
class StepNeed:
    index: int
    name: str
    weight: float
    min_responses: int
    min_duration_seconds: float
    candidate_needed: int  # what the candidate arm must reach: the largest of the above and min_responses
    baseline_needed: int  # what the baseline arm must reach (margins compare against it)
    metrics: tuple[MetricNeed, ...]

    def to_dict(self) -> dict[str, object]:
        return {
            "step": self.index,
            "name": self.name,
            "weight": self.weight,
            "min_responses": self.min_responses,
            "min_duration_seconds": self.min_duration_seconds,
            "candidate_needed": self.candidate_needed,
            "baseline_needed": self.baseline_needed,
            "metrics": [m.__dict__ for m in self.metrics],
        }


def plan_needs(plan: Plan) -> list[StepNeed]:
    """Per step, the responses each arm needs under the plan's statistics: to pass an absolute SLO with zero
    failures, and the per-arm size to show non-inferiority within a margin (at the SLO rate, power 0.8)."""
    metrics = tuple(
        MetricNeed(
            slo.metric,
            slo.slo,
            slo.severity,
            zero_failure_need(plan.statistics, slo.slo, plan.alpha),
            non_inferiority_need(plan.statistics, slo.slo, slo.margin, plan.alpha) if slo.margin is not None else None,
        )
        for slo in plan.slos
        if catalogue.metric(slo.metric).unit == "response"  # usefulness: findings, not responses (docs/usefulness.md)
    )
    critical = [m for m in metrics if m.severity == "critical"]
    absolute = max((m.zero_failure for m in critical), default=0)
    comparative = max((m.per_arm or 0 for m in critical), default=0)
    needs = []
    for index, step in enumerate(plan.steps):
        candidate_share = step.weight
        if candidate_share == 0:  # the parser stage serves no candidate traffic
            candidate, baseline = 0, 0
        else:
            has_baseline = candidate_share < 1
            candidate = max(step.min_responses, absolute, comparative if has_baseline else 0)
            baseline = max(step.min_responses, comparative) if has_baseline else 0
        needs.append(
            StepNeed(
                index,
                step.name,
                step.weight,
                step.min_responses,
                step.min_duration.total_seconds(),
                candidate,
                baseline,
                metrics,
            )
        )
    return needs
