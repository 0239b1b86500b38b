"""The metric catalogue: every metric a rollout plan can gate on, declared once (docs/design.md).

A metric of unit ``response`` is a Bernoulli indicator over one stored response (a ``response_indicators``
column, a ceiling). A metric of unit ``pull_request`` is a usefulness metric over the findings' feedback
(docs/usefulness.md), judged on decided findings with intervals clustered by pull request, usually a floor.
The views (so the Spark lake), the plan validator, the gate, the report (so the Prometheus export) read
``METRICS``; it imports only the standard library, so ``rollout gate`` and ``lint`` read it without duckdb.
"""

from __future__ import annotations

from typing import Literal, NamedTuple


class Metric(NamedTuple):  # not a dataclass: every gate defines it at start-up
    name: str  # the key of a plan's ``slos``
    column: str  # its response_indicators column (unit response); the feedback figure it reads (pull_request)
    sql: str  # the column's definition over one ``responses`` row ("" for a pull_request metric)
    description: str  # when the indicator is true
    # What one observation is (a response, or a pull request's decided findings) and whether the SLO is a
    # ceiling (lower_is_better) or a floor (higher_is_better).
    unit: Literal["response", "pull_request"] = "response"
    direction: Literal["lower_is_better", "higher_is_better"] = "lower_is_better"
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

# Usefulness, from finding feedback (promptops.store.feedback_query): judged on decided findings only, clustered
# by pull request. ``column`` names the per-pull-request figure: acted_on or dismissed findings of the decided
# ones (a ratio), or acted_on findings per pull request (a mean, so a prompt cannot look better by saying less).
USEFULNESS: tuple[Metric, ...] = (
    Metric(
        "acted_on_rate", "acted_on", "", "a decided finding was fixed or accepted", "pull_request", "higher_is_better"
    ),
    Metric("dismissed_rate", "dismissed", "", "a decided finding was dismissed", "pull_request"),
    Metric(
        "acted_on_per_pr",
        "acted_on_per_pr",
        "",
        "findings of a pull request fixed or accepted",
        "pull_request",
        "higher_is_better",
    ),
)
METRICS = (*METRICS, *USEFULNESS)


def per_response() -> tuple[Metric, ...]:
    """The metrics that are a ``response_indicators`` column (read at call time: a test may extend METRICS)."""
    return tuple(m for m in METRICS if m.unit == "response")


def metric(name: str) -> Metric:
    return next(m for m in METRICS if m.name == name)
