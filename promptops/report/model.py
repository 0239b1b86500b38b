"""What a report holds: aggregates only (counts, rates, bounds, a few example rows), never raw responses.

``gather`` fills these from the store, the plans and the release lock; ``html``, ``prom`` and the JSON summary
render them. Every number travels with its denominator, and every path is repo-relative.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from promptops.store.source import Example as Example  # re-exported: the store's answers, as the report keeps them
from promptops.store.source import TrafficRow as TrafficRow

REPORT_VERSION = 1


@dataclass(frozen=True)
class Point:
    """One bucket of one arm: x of n responses tripped the indicator, with one-sided Wilson bounds."""

    start: datetime  # UTC, the bucket's first instant
    n: int
    x: int
    lower: float
    upper: float

    @property
    def rate(self) -> float | None:
        return self.x / self.n if self.n else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start.isoformat(),
            "n": self.n,
            "x": self.x,
            "rate": self.rate,
            "lower": self.lower,
            "upper": self.upper,
        }


@dataclass(frozen=True)
class MetricSeries:
    """A plan metric over time: per arm, one point per bucket that has responses of that arm."""

    metric: str
    severity: str
    slo: float
    margin: float | None
    arms: dict[str, tuple[Point, ...]]

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "severity": self.severity,
            "slo": self.slo,
            "margin": self.margin,
            "arms": {arm: [p.to_dict() for p in points] for arm, points in self.arms.items()},
        }


@dataclass(frozen=True)
class Count:
    label: str
    count: int

    def to_dict(self, key: str) -> dict[str, Any]:
        return {key: self.label, "count": self.count}


@dataclass(frozen=True)
class ArmSummary:
    """Everything a rollout's arm did since its first response, with the reasons behind the drops."""

    responses: int
    accepted: int
    top_drop_reasons: tuple[Count, ...]
    top_coerced_fields: tuple[Count, ...]
    top_reject_reasons: tuple[Count, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "responses": self.responses,
            "accepted": self.accepted,
            "top_drop_reasons": [c.to_dict("code") for c in self.top_drop_reasons],
            "top_coerced_fields": [c.to_dict("field") for c in self.top_coerced_fields],
            "top_reject_reasons": [c.to_dict("code") for c in self.top_reject_reasons],
        }


@dataclass(frozen=True)
class RolloutView:
    """One rollout plan as it stands: its steps, the latest gate (``GateResult.to_dict()``) and its series.

    For a rolled-back plan the gate is the one that held it (the step judged at ``held_at``, the rollback),
    not the empty window that follows.
    """

    rollout: str
    plan: str  # repo-relative plan file
    baseline: dict[str, str]
    candidate: dict[str, str]
    step: int
    step_name: str
    weight: float
    rolled_back: bool
    held_at: datetime | None
    alpha: float
    statistics: str  # the gate's method: always-valid or fixed
    steps: tuple[dict[str, Any], ...]
    history: tuple[dict[str, Any], ...]
    gate: dict[str, Any]
    bucket: str  # hour, day, week or month
    series: tuple[MetricSeries, ...]
    arms: dict[str, ArmSummary]

    @property
    def verdict(self) -> str:
        return str(self.gate["verdict"])

    def to_dict(self) -> dict[str, Any]:
        return {
            "rollout": self.rollout,
            "plan": self.plan,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "step": self.step,
            "step_name": self.step_name,
            "weights": {"candidate": self.weight, "baseline": 1 - self.weight},
            "rolled_back": self.rolled_back,
            "held_at": None if self.held_at is None else self.held_at.isoformat(),
            "alpha": self.alpha,
            "statistics": self.statistics,
            "steps": list(self.steps),
            "history": list(self.history),
            "gate": self.gate,
            "bucket": self.bucket,
            "series": [s.to_dict() for s in self.series],
            "arms": {arm: summary.to_dict() for arm, summary in self.arms.items()},
        }


@dataclass(frozen=True)
class ContractReport:
    """The whole report of one contract at one moment."""

    contract: str
    now: datetime
    rollout_filter: str | None
    has_store: bool
    rollouts: tuple[RolloutView, ...]
    traffic: tuple[TrafficRow, ...]
    examples: tuple[Example, ...]
    releases: tuple[dict[str, Any], ...]
    matrix: dict[str, Any] | None  # Matrix.to_dict(); None when there are no releases
    notes: tuple[str, ...] = field(default=())  # what was left out, so a reader knows the view is partial

    def to_dict(self) -> dict[str, Any]:
        return {
            "report_version": REPORT_VERSION,
            "contract": self.contract,
            "generated_at": self.now.isoformat(),
            "rollout": self.rollout_filter,
            "store": self.has_store,
            "rollouts": [r.to_dict() for r in self.rollouts],
            "traffic": [t.to_dict() for t in self.traffic],
            "recent_drops": [e.to_dict() for e in self.examples],
            "releases": list(self.releases),
            "compat_matrix": self.matrix,
            "notes": list(self.notes),
        }
