"""The read side of finding feedback: per arm, prompt version and severity, how many findings were acted on,
dismissed, ignored or are still pending, as of a given time, with what a clustered interval needs.

The effective outcome of a finding is that of its latest event at or before ``now`` (event ``time``); between
events at the same time the stronger signal wins: fixed, then accepted, dismissed, ignored. Every event stays
stored; only this query picks. A finding with no event by ``now`` is pending. ``now`` also bounds the responses
(``ts``), so a replay sees what was known then.

The unit of analysis is the pull request (the rollout's ``unit``): every row carries, besides the totals, the
number of units and sums over units of products of per-unit counts, from which the delta-method variance of a
ratio clustered by unit follows without reading a row per unit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import duckdb

from promptops.store.feedback_events import utc

# Ranks for the tie-break at equal times (higher wins).
_RANK = "CASE outcome WHEN 'fixed' THEN 3 WHEN 'accepted' THEN 2 WHEN 'dismissed' THEN 1 ELSE 0 END"

_QUERY = f"""
WITH scope AS (
    SELECT response_id, contract, rollout_id, arm, prompt_version, unit
    FROM responses
    WHERE ts <= $now AND ($rollout IS NULL OR rollout_id = $rollout) AND ($contract IS NULL OR contract = $contract)
),
effective AS (
    SELECT key_hash, response_id, finding_id, arg_max(outcome, epoch_us(time) * 4 + {_RANK}) AS outcome
    FROM feedback
    WHERE time <= $now
    GROUP BY key_hash, response_id, finding_id
),
per_unit AS (
    SELECT s.contract, s.rollout_id, s.arm, s.prompt_version, f.severity, s.unit,
           count(*) AS findings,
           count(*) FILTER (WHERE e.outcome = 'fixed') AS fixed,
           count(*) FILTER (WHERE e.outcome = 'accepted') AS accepted,
           count(*) FILTER (WHERE e.outcome = 'dismissed') AS dismissed,
           count(*) FILTER (WHERE e.outcome = 'ignored') AS ignored
    FROM findings f
    JOIN scope s ON s.response_id = f.response_id
    LEFT JOIN effective e ON e.key_hash = f.key_hash AND e.response_id = f.response_id AND e.finding_id = f.finding_id
    GROUP BY ALL
)
SELECT contract, rollout_id, arm, prompt_version, severity,
       sum(findings)::BIGINT AS findings,
       sum(fixed)::BIGINT AS fixed, sum(accepted)::BIGINT AS accepted,
       sum(dismissed)::BIGINT AS dismissed, sum(ignored)::BIGINT AS ignored,
       count(*) AS units,
       sum((fixed + accepted + dismissed + ignored) ** 2)::BIGINT AS sum_decided_sq,
       sum((fixed + accepted) ** 2)::BIGINT AS sum_acted_sq,
       sum((fixed + accepted) * (fixed + accepted + dismissed + ignored))::BIGINT AS sum_acted_decided,
       sum(dismissed ** 2)::BIGINT AS sum_dismissed_sq,
       sum(dismissed * (fixed + accepted + dismissed + ignored))::BIGINT AS sum_dismissed_decided
FROM per_unit
GROUP BY ALL
ORDER BY ALL
"""

_UNKNOWN = """
SELECT count(DISTINCT (response_id, finding_id)), count(*) FROM feedback e
WHERE time <= $now AND NOT EXISTS (SELECT 1 FROM findings f WHERE f.key_hash = e.key_hash
                                   AND f.response_id = e.response_id AND f.finding_id = e.finding_id)
"""


@dataclass(frozen=True)
class FeedbackCounts:
    """Findings of one (contract, rollout, arm, prompt version, severity) and what became of them by ``now``.

    ``units`` is the number of pull requests (response ``unit``; responses without one form one unit) with a
    finding here; the ``sum_*`` fields are sums over those units of per-unit products (decided = fixed +
    accepted + dismissed + ignored, acted = fixed + accepted), for intervals clustered by unit.
    """

    contract: str
    rollout_id: str | None
    arm: str | None
    prompt_version: str | None
    severity: str | None
    findings: int
    fixed: int
    accepted: int
    dismissed: int
    ignored: int
    units: int
    sum_decided_sq: int
    sum_acted_sq: int
    sum_acted_decided: int
    sum_dismissed_sq: int
    sum_dismissed_decided: int

    @property
    def acted_on(self) -> int:
        return self.fixed + self.accepted

    @property
    def decided(self) -> int:
        return self.fixed + self.accepted + self.dismissed + self.ignored

    @property
    def pending(self) -> int:
        return self.findings - self.decided

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "acted_on": self.acted_on, "decided": self.decided, "pending": self.pending}


@dataclass(frozen=True)
class UnknownFeedback:
    """Feedback (events at or before ``now``) for findings the store does not hold."""

    findings: int  # distinct (response_id, finding_id)
    events: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def feedback_counts(
    con: duckdb.DuckDBPyConnection,
    now: datetime,
    *,
    rollout_id: str | None = None,
    contract: str | None = None,
) -> list[FeedbackCounts]:
    """Per (contract, rollout, arm, prompt version, severity), the findings of responses stored with ``ts`` at
    or before ``now`` and their effective outcomes as of ``now`` (a naive ``now`` is UTC)."""
    params = {"now": utc(now), "rollout": rollout_id, "contract": contract}
    rows = con.execute(_QUERY, params).fetchall()
    return [FeedbackCounts(*row) for row in rows]


def unknown_feedback(con: duckdb.DuckDBPyConnection, now: datetime) -> UnknownFeedback:
    findings, events = con.execute(_UNKNOWN, {"now": utc(now)}).fetchall()[0]
    return UnknownFeedback(int(findings), int(events))
