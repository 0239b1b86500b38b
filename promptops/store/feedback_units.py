"""Per pull request of each arm, what the gate's usefulness metrics need: acted-on, dismissed and decided findings
as of ``now`` (docs/usefulness.md, Usefulness gates).

The effective outcome is promptops.store.feedback_query's (latest event at or before ``now``, ties to the stronger
signal); this question keeps one row per pull request, because a clustered interval is not additive over the
severity and prompt-version rows ``feedback_counts`` answers with.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

_QUERY = """
WITH scope AS (
    SELECT id_hash, arm, unit FROM responses
    WHERE contract = $contract AND rollout_id = $rollout AND ts <= $now AND ($since IS NULL OR ts >= $since)
),
effective AS (
    SELECT key_hash, arg_max({rank}, epoch_us(time) * 4 + {rank}) AS rank
    FROM feedback WHERE time <= $now GROUP BY key_hash
)
SELECT s.arm, s.unit,
       count(*) FILTER (WHERE e.rank >= 2) AS acted_on,
       count(*) FILTER (WHERE e.rank = 1) AS dismissed,
       count(e.rank) AS decided,
       count(*) - count(e.rank) AS pending
FROM findings f
JOIN scope s ON s.id_hash = f.id_hash
LEFT JOIN effective e ON e.key_hash = f.key_hash
WHERE s.arm IS NOT NULL
GROUP BY ALL
ORDER BY ALL
"""


@dataclass(frozen=True)
class ArmFeedback:
    """One arm's findings by ``now``: (acted_on, dismissed, decided) per pull request with a finding, and how many
    findings have no feedback yet (pending; never judged)."""

    pull_requests: tuple[tuple[int, int, int], ...]
    pending: int

    @property
    def decided(self) -> int:
        return sum(decided for _, _, decided in self.pull_requests)

    def to_dict(self) -> dict[str, Any]:
        return {"pull_requests": len(self.pull_requests), "decided": self.decided, "pending": self.pending}


def arm_feedback(
    con: Any, contract: str, rollout_id: str, since: datetime | None, now: datetime
) -> dict[str, ArmFeedback]:
    """Per arm, the findings of the rollout's responses in [since, now] (naive UTC) and their feedback by ``now``."""
    from promptops.store.feedback_totals import RANK  # the effective outcome: one rule, in one place

    params = {"contract": contract, "rollout": rollout_id, "since": since, "now": now}
    found: dict[str, tuple[list[tuple[int, int, int]], list[int]]] = {}
    for arm, _, acted_on, dismissed, decided, pending in con.execute(_QUERY.format(rank=RANK), params).fetchall():
        prs, waiting = found.setdefault(str(arm), ([], [0]))
        prs.append((int(acted_on), int(dismissed), int(decided)))
        waiting[0] += int(pending)
    return {arm: ArmFeedback(tuple(prs), waiting[0]) for arm, (prs, waiting) in found.items()}


_FINDINGS = """
SELECT f.response_id, f.finding_id, r.arm FROM findings f JOIN responses r ON r.id_hash = f.id_hash
WHERE r.contract = $contract AND r.rollout_id = $rollout AND r.arm IS NOT NULL AND r.ts >= $since AND r.ts <= $until
ORDER BY ALL
"""


def rollout_findings(
    con: Any, contract: str, rollout_id: str, since: datetime, until: datetime
) -> list[tuple[str, str, str]]:
    """(response_id, finding_id, arm) of the rollout's findings logged in [since, until] (naive UTC): what a
    simulation of feedback (``promptops demo --useless``) answers."""
    params = {"contract": contract, "rollout": rollout_id, "since": since, "until": until}
    return [(str(r), str(f), str(a)) for r, f, a in con.execute(_FINDINGS, params).fetchall()]
