"""The metric catalogue: every metric a rollout plan can gate on, declared once (docs/design.md).

Each is a Bernoulli indicator over one stored response (a ``response_indicators`` column). The views (so the
Spark lake), the plan validator, the gate, the report (so the Prometheus export) read ``METRICS``; it imports
only the standard library, so ``rollout gate`` and ``lint`` read it without duckdb or pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Metric:
    name: str  # the key of a plan's ``slos``
    column: str  # its response_indicators column
    sql: str  # the column's definition over one ``responses`` row
    description: str  # when the indicator is true
    # The gate judges an SLO as a ceiling on a share of responses: another unit or direction needs it taught first.
    unit: Literal["response"] = "response"
    direction: Literal["lower_is_better"] = "lower_is_better"
    guard: float | None = None  # a critical SLO every gated plan must hold, at this default (what `rollout new` writes)


# In the view's column order. The guards: a rejected answer keeps no finding, so it trips no drop or coercion
# indicator, and a candidate whose every answer is rejected (or loses every finding) would otherwise pass.
_VERSION = "coalesce(reason = 'incompatible_version', false)"
METRICS: tuple[Metric, ...] = (
    Metric("dropped_finding", "any_drop", "findings_dropped > 0", "at least one finding was dropped"),
    Metric("coercion", "any_coercion", "coercions > 0", "at least one coercion was applied (top-level fields too)"),
    Metric("incompatible_version", "incompatible_version", _VERSION, "rejected with incompatible_version"),
    Metric("rejected", "rejected", "NOT accepted", "rejected for any reason", guard=0.02),
    Metric(
        "all_findings_dropped",
        "all_findings_dropped",
        "accepted AND findings_seen > 0 AND findings_kept = 0",
        "accepted, at least one finding present, none kept",
        guard=0.02,
    ),
)
