"""The WHERE clause a question puts over a rate view (``response_indicators``, ``diagnostic_facts``,
``run_indicators``): a contract, a time window, maybe a rollout and an arm, with its parameters.

A module of its own so that the gate's questions (``promptops.store.source``) need not import ``rates``'s
report classes (``promptops.store.metrics``) to build it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any


def window_clause(
    contract: str,
    since: datetime | None = None,
    until: datetime | None = None,
    rollout_id: str | None = None,
    arm: str | None = None,
) -> tuple[str, dict[str, Any]]:
    """``since`` and ``until`` are naive UTC, both inclusive (a replay as of ``until`` sees nothing later)."""
    terms = [
        ("contract = $contract", "contract", contract),
        ("ts >= $since", "since", since),
        ("ts <= $until", "until", until),
        ("rollout_id = $rollout", "rollout", rollout_id),
        ("arm = $arm", "arm", arm),
    ]
    given = [(clause, name, value) for clause, name, value in terms if value is not None]
    return " AND ".join(clause for clause, _, _ in given), {name: value for _, name, value in given}
