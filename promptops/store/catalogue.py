"""The metric catalogue: every metric a rollout plan can gate on, declared once (docs/design.md).

Each metric is a Bernoulli indicator over one stored response: the ``response_indicators`` view computes its
column from ``sql``, and everything else reads this tuple: the views (``ddl``, and the Spark lake through
them), the gate's counts, the plan validator, the report's series and so the Prometheus export.

Plain data on the standard library alone: ``rollout gate`` and ``lint`` read it without duckdb or pyarrow.
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
    # The gate judges an SLO as a ceiling on a share of responses; a metric over another unit, or one where
    # higher is better, needs the gate to learn that first, so the types admit nothing else yet.
    unit: Literal["response"] = "response"
    direction: Literal["lower_is_better"] = "lower_is_better"
    # A critical SLO every gated plan must hold, at this default (what `rollout new` writes and errors suggest).
    guard: float | None = None


# In the view's column order. The guards: a rejected answer keeps no finding, so it never trips the drop or
# coercion indicators, and a candidate whose every answer is rejected (or loses every finding) would pass.
METRICS: tuple[Metric, ...] = (
    Metric("dropped_finding", "any_drop", "findings_dropped > 0", "at least one finding was dropped"),
    Metric("coercion", "any_coercion", "coercions > 0", "at least one coercion was applied (top-level fields too)"),
    Metric(
        "incompatible_version",
        "incompatible_version",
        "coalesce(reason = 'incompatible_version', false)",
        "rejected with incompatible_version",
    ),
    Metric("rejected", "rejected", "NOT accepted", "rejected for any reason", guard=0.02),
    Metric(
        "all_findings_dropped",
        "all_findings_dropped",
        "accepted AND findings_seen > 0 AND findings_kept = 0",
        "accepted, at least one finding present, none kept",
        guard=0.02,
    ),
)
