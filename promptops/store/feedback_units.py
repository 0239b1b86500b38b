"""Per pull request of each arm, what the gate's usefulness metrics need: acted-on, dismissed and decided findings
as of ``now`` (docs/usefulness.md, Usefulness gates).

The effective outcome is promptops.store.feedback_query's (latest event at or before ``now``, ties to the stronger
signal); this question keeps one row per pull request, because a clustered interval is not additive over the
severity and prompt-version rows ``feedback_counts`` answers with.

It is answered from ``response_feedback``, the counts both ingests keep per response with the outcomes of every
event stored (promptops.store.feedback_totals): the window's responses are summed, whatever its bounds. Only
findings with an event after ``now`` (a replay, or a clock ahead) are counted again from their events, as of
``now``; a gate at the present has none, and reads no finding and no event.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from operator import itemgetter
from typing import Any

from promptops.store.feedback_totals import RANK  # the effective outcome: one rule, in one place

_WINDOW = "r.contract = $contract AND r.rollout_id = $rollout AND r.ts <= $now"
_KEPT = """
SELECT arm, unit, sum(fixed + accepted)::BIGINT AS acted_on, sum(dismissed)::BIGINT AS dismissed,
       sum(fixed + accepted + dismissed + ignored)::BIGINT AS decided, sum(findings)::BIGINT AS findings
FROM response_feedback r WHERE {window}
GROUP BY arm, unit"""
_LATE = "SELECT EXISTS (SELECT 1 FROM feedback WHERE time > $now)"
# Findings of the window with an event after ``now``: each moves from its kept outcome (its latest event of all)
# to its outcome as of ``now`` (none: pending again).
_MOVED = f"""
SELECT r.arm, r.unit,
       sum(coalesce(l.rank >= 2, false)::BIGINT - (l.kept >= 2)::BIGINT) AS acted_on,
       sum(coalesce(l.rank = 1, false)::BIGINT - (l.kept = 1)::BIGINT) AS dismissed,
       sum((l.rank IS NOT NULL)::BIGINT - 1) AS decided
FROM (
    SELECT key_hash,
           arg_max({RANK}, epoch_us(time) * 4 + {RANK}) AS kept,
           arg_max({RANK}, epoch_us(time) * 4 + {RANK}) FILTER (WHERE time <= $now) AS rank
    FROM feedback
    WHERE key_hash IN (SELECT key_hash FROM feedback WHERE time > $now)
    GROUP BY key_hash
) l JOIN findings f ON f.key_hash = l.key_hash JOIN response_feedback r ON r.id_hash = f.id_hash
WHERE {{window}}
GROUP BY r.arm, r.unit"""
_ANSWER = """WITH kept AS ({kept}), moved AS ({moved})
SELECT k.arm, k.acted_on + coalesce(m.acted_on, 0), k.dismissed + coalesce(m.dismissed, 0),
       k.decided + coalesce(m.decided, 0), k.findings - k.decided - coalesce(m.decided, 0)
FROM kept k LEFT JOIN moved m ON m.arm = k.arm AND m.unit IS NOT DISTINCT FROM k.unit
ORDER BY k.arm, k.unit"""


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
    params: dict[str, Any] = {"contract": contract, "rollout": rollout_id, "now": now}
    window = _WINDOW
    if since is not None:  # a literal bound, not "$since IS NULL OR", so the scan skips row groups by time
        params["since"], window = since, f"{window} AND r.ts >= $since"
    kept = _KEPT.format(window=window)
    if con.execute(_LATE, {"now": now}).fetchall()[0][0]:
        sql = _ANSWER.format(kept=kept, moved=_MOVED.format(window=window))
    else:  # nothing stored is later than now: the kept counts are the answer
        sql = f"SELECT arm, acted_on, dismissed, decided, findings - decided FROM ({kept}) ORDER BY arm, unit"
    found = {}
    # A busy window holds tens of thousands of pull requests: the rows become tuples in C loops, not Python.
    for arm, rows in groupby(con.execute(sql, params).fetchall(), itemgetter(0)):
        prs = list(rows)
        found[str(arm)] = ArmFeedback(tuple(map(itemgetter(1, 2, 3), prs)), sum(map(itemgetter(4), prs)))
    return found


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
