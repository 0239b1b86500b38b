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
from promptops.store.feedback_totals import RANK

# Sums over units (per_unit: one row per slice, severity and unit with its counts).
_TOTALS = """SELECT contract, rollout_id, arm, prompt_version, severity,
       sum(findings)::BIGINT AS findings,
       sum(fixed)::BIGINT AS fixed, sum(accepted)::BIGINT AS accepted,
       sum(dismissed)::BIGINT AS dismissed, sum(ignored)::BIGINT AS ignored,
       count(*) AS units,
       sum((fixed + accepted + dismissed + ignored) * (fixed + accepted + dismissed + ignored))::BIGINT
           AS sum_decided_sq,
       sum((fixed + accepted) * (fixed + accepted))::BIGINT AS sum_acted_sq,
       sum((fixed + accepted) * (fixed + accepted + dismissed + ignored))::BIGINT AS sum_acted_decided,
       sum(dismissed * dismissed)::BIGINT AS sum_dismissed_sq,
       sum(dismissed * (fixed + accepted + dismissed + ignored))::BIGINT AS sum_dismissed_decided
FROM per_unit
GROUP BY ALL
ORDER BY ALL
"""
# Joins go by the 64-bit hashes (responses.id_hash, findings.key_hash), never by the id strings: at 10^7
# findings a collision is about a one-in-a-million chance of one finding counted in the wrong place.
_PER_UNIT = f"""
WITH scope AS (
    SELECT id_hash, contract, rollout_id, arm, prompt_version, unit
    FROM responses
    WHERE ts <= $now AND ($rollout IS NULL OR rollout_id = $rollout) AND ($contract IS NULL OR contract = $contract)
),
effective AS (
    SELECT key_hash, arg_max({RANK}, epoch_us(time) * 4 + {RANK}) AS rank
    FROM feedback
    WHERE time <= $now
    GROUP BY key_hash
),
per_unit AS (
    SELECT s.contract, s.rollout_id, s.arm, s.prompt_version, f.severity, s.unit,
           count(*) AS findings,
           count(*) FILTER (WHERE e.rank = 3) AS fixed,
           count(*) FILTER (WHERE e.rank = 2) AS accepted,
           count(*) FILTER (WHERE e.rank = 1) AS dismissed,
           count(*) FILTER (WHERE e.rank = 0) AS ignored
    FROM findings f
    JOIN scope s ON s.id_hash = f.id_hash
    LEFT JOIN effective e ON e.key_hash = f.key_hash
    GROUP BY ALL
)
"""
_QUERY = _PER_UNIT + _TOTALS

# When no response and no event stored is later than ``now``, the per-unit counts ingest keeps
# (promptops.store.feedback_totals) are the same rows, without reading a finding or an event.
_KEPT = f"""
WITH per_unit AS (
    SELECT * FROM feedback_units
    WHERE findings > 0 AND ($rollout IS NULL OR rollout_id = $rollout) AND ($contract IS NULL OR contract = $contract)
)
{_TOTALS}"""
_LATEST = "SELECT (SELECT max(ts) FROM responses) AS responses, (SELECT max(time) FROM feedback) AS feedback"

_UNKNOWN = """
SELECT count(DISTINCT key_hash), count(*) FROM feedback e
WHERE time <= $now AND NOT EXISTS (SELECT 1 FROM findings f WHERE f.key_hash = e.key_hash)
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
    latest = con.execute(_LATEST).fetchall()[0]
    current = all(moment is None or moment <= params["now"] for moment in latest)
    if current:
        del params["now"]
    rows = con.execute(_KEPT if current else _QUERY, params).fetchall()
    return [FeedbackCounts(*row) for row in rows]


def unknown_feedback(con: duckdb.DuckDBPyConnection, now: datetime) -> UnknownFeedback:
    findings, events = con.execute(_UNKNOWN, {"now": utc(now)}).fetchall()[0]
    return UnknownFeedback(int(findings), int(events))
