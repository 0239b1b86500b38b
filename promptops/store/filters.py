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
    clauses = ["contract = $contract"]
    params: dict[str, Any] = {"contract": contract}
    if since is not None:
        clauses.append("ts >= $since")
        params["since"] = since
    if until is not None:
        clauses.append("ts <= $until")
        params["until"] = until
    if rollout_id is not None:
        clauses.append("rollout_id = $rollout")
        params["rollout"] = rollout_id
    if arm is not None:
        clauses.append("arm = $arm")
        params["arm"] = arm
    return " AND ".join(clauses), params
