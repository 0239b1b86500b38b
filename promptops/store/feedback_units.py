"""Per arm, what the gate's usefulness metrics need: sums over its pull requests of their acted-on, dismissed and
decided findings as of ``now`` (docs/usefulness.md, Usefulness gates).

The effective outcome is promptops.store.feedback_query's (latest event at or before ``now``, ties to the stronger
signal); this question groups by pull request first, because a clustered interval is not additive over the
severity and prompt-version rows ``feedback_counts`` answers with, then sums the squares and products a
clustered interval needs.

It is answered from ``response_feedback``, the counts both ingests keep per response with the outcomes of every
event stored (promptops.store.feedback_totals): the window's responses are summed, whatever its bounds. Only
findings with an event after ``now`` (a replay, or a clock ahead) are counted again from their events, as of
``now``; a gate at the present has none, and reads no finding and no event.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
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
FROM kept k LEFT JOIN moved m ON m.arm = k.arm AND m.unit IS NOT DISTINCT FROM k.unit"""


@dataclass(frozen=True)
class ClusterSums:
    """One outcome's sums over an arm's pull requests with a decided finding, ``a`` the pull request's findings
    with the outcome and ``n`` its decided ones: all a clustered interval needs (promptops.rollout.clustered)."""

    clusters: int  # pull requests with a decided finding
    a: int  # sum of a
    a2: int  # sum of a * a
    an: int  # sum of a * n
    n: int  # sum of n
    n2: int  # sum of n * n

    @classmethod
    def of(cls, pairs: Iterable[tuple[int, int]]) -> ClusterSums:
        """The sums of (a, n) pairs, one per pull request (those with n = 0 add nothing)."""
        decided = [(a, n) for a, n in pairs if n > 0]
        return cls(
            len(decided),
            sum(a for a, _ in decided),
            sum(a * a for a, _ in decided),
            sum(a * n for a, n in decided),
            sum(n for _, n in decided),
            sum(n * n for _, n in decided),
        )


@dataclass(frozen=True)
class ArmFeedback:
    """One arm's findings by ``now``: the pull requests with a finding, the sums of its acted-on and its dismissed
    findings over them, and how many findings have no feedback yet (pending; never judged)."""

    pull_requests: int
    acted_on: ClusterSums
    dismissed: ClusterSums
    pending: int

    @classmethod
    def of(cls, pull_requests: Sequence[tuple[int, int, int]], pending: int) -> ArmFeedback:
        """From (acted_on, dismissed, decided) per pull request with a finding."""
        return cls(
            len(pull_requests),
            ClusterSums.of((acted, n) for acted, _, n in pull_requests),
            ClusterSums.of((dismissed, n) for _, dismissed, n in pull_requests),
            pending,
        )

    @property
    def decided(self) -> int:
        return self.acted_on.n

    def to_dict(self) -> dict[str, Any]:
        return {"pull_requests": self.pull_requests, "decided": self.decided, "pending": self.pending}


# The sums per arm over the per-pull-request rows, in SQL: a busy window holds tens of thousands of pull requests,
# and only a dozen integers per arm leave the store (HUGEINT: sums of squares need not fit 64 bits).
_SUMS = """
SELECT arm, count(*), sum(pending)::BIGINT,
       count(*) FILTER (WHERE decided > 0), sum(acted_on)::BIGINT, sum(acted_on * acted_on)::HUGEINT,
       sum(acted_on * decided)::HUGEINT, sum(decided)::BIGINT, sum(decided * decided)::HUGEINT,
       sum(dismissed)::BIGINT, sum(dismissed * dismissed)::HUGEINT, sum(dismissed * decided)::HUGEINT
FROM ({prs}) AS prs(arm, acted_on, dismissed, decided, pending)
GROUP BY arm ORDER BY arm"""


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
        prs = _ANSWER.format(kept=kept, moved=_MOVED.format(window=window))
    else:  # nothing stored is later than now: the kept counts are the answer
        prs = f"SELECT arm, acted_on, dismissed, decided, findings - decided FROM ({kept})"
    found = {}
    for arm, count, pending, clusters, a, a2, an, n, n2, d, d2, dn in con.execute(
        _SUMS.format(prs=prs), params
    ).fetchall():
        sums = (int(n or 0), int(n2 or 0))
        acted = ClusterSums(clusters, int(a or 0), int(a2 or 0), int(an or 0), *sums)
        dismissed = ClusterSums(clusters, int(d or 0), int(d2 or 0), int(dn or 0), *sums)
        found[str(arm)] = ArmFeedback(count, acted, dismissed, int(pending or 0))
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
