"""The looks at a step: where the gate's bound path comes from (docs/rollouts.md, Looks).

promptops cannot know how often someone ran the gate, and an always-valid bound does not need to. What the gate
reports as its looks is reproducible from the store instead: the step judged at the end of every UTC hour in
which responses arrived, then at ``now``. The same ``--now`` gives the same looks and the same bounds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from promptops.rollout.gate import ARMS, ArmCounts, Look
from promptops.rollout.plan import Plan
from promptops.store import catalogue

LOOK_EVERY = timedelta(hours=1)


def read_looks(
    con: Any, plan: Plan, since: datetime | None, until: datetime
) -> tuple[tuple[Look, ...], dict[str, ArmCounts]]:
    """The step's looks before ``until`` (naive UTC, the gate's now), each with the counts from ``since`` to the
    end of its hour, and the counts up to ``until`` (the window ``read_window`` reads): one grouped query, summed
    up hour by hour, so the gate scans the step's responses once."""
    columns = ", ".join(f"count(*) FILTER (WHERE {m.column}) AS {m.name}" for m in catalogue.METRICS)
    rows = con.execute(
        f"SELECT date_trunc('hour', ts) AS hour, arm, count(*) AS n, {columns} FROM response_indicators "
        "WHERE contract = $contract AND rollout_id = $rollout AND ($since IS NULL OR ts >= $since) "
        "AND ts <= $until GROUP BY hour, arm ORDER BY hour",
        {"contract": plan.contract, "rollout": plan.rollout_id, "since": since, "until": until},
    ).fetchall()
    totals = {arm: [0] * (1 + len(catalogue.METRICS)) for arm in ARMS}
    looks: list[Look] = []
    for index, (hour, arm, *values) in enumerate(rows):
        if arm in totals:
            totals[arm] = [total + int(value) for total, value in zip(totals[arm], values, strict=True)]
        end = hour + LOOK_EVERY
        last_of_hour = index + 1 == len(rows) or rows[index + 1][0] != hour
        if last_of_hour and end < until:  # the hour that holds ``until`` is the gate's own look
            looks.append(Look(end.replace(tzinfo=UTC), _counts(totals)))
    return tuple(looks), _counts(totals)


def _counts(totals: dict[str, list[int]]) -> dict[str, ArmCounts]:
    return {
        arm: ArmCounts(values[0], {m.name: x for m, x in zip(catalogue.METRICS, values[1:], strict=True)})
        for arm, values in totals.items()
        if values[0]
    }
