"""The looks at a step: where the gate's bound path comes from (docs/rollouts.md, Looks).

promptops cannot know how often someone ran the gate, and an always-valid bound does not need to. What the gate
reports as its looks is reproducible from the store instead: the step judged at the end of every UTC hour in
which responses arrived, then at ``now``. The same ``--now`` gives the same looks and the same bounds.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from promptops.rollout.gate import ARMS, ArmCounts, Look
from promptops.rollout.plan import Plan
from promptops.store.source import CountsSource, Window

LOOK_EVERY = timedelta(hours=1)


def read_looks(
    source: CountsSource, plan: Plan, since: datetime | None, until: datetime
) -> tuple[tuple[Look, ...], dict[str, ArmCounts]]:
    """The step's looks before ``until`` (naive UTC, the gate's now), each with the counts from ``since`` to the
    end of its hour, and the counts up to ``until`` (the window ``read_window`` reads): one grouped question
    (counts per hour and arm), summed up hour by hour, so the gate scans the step's responses once."""
    rows = source.series(Window(plan.contract, plan.rollout_id, since, until), "hour")
    totals: dict[str, ArmCounts] = {}
    looks: list[Look] = []
    for index, (hour, arm, counts) in enumerate(rows):
        if arm in ARMS:
            totals[arm] = _add(totals.get(arm), counts)
        end = datetime.combine(hour, datetime.min.time()) if not isinstance(hour, datetime) else hour
        end += LOOK_EVERY
        last_of_hour = index + 1 == len(rows) or rows[index + 1][0] != hour
        if last_of_hour and end < until:  # the hour that holds ``until`` is the gate's own look
            looks.append(Look(end.replace(tzinfo=UTC), dict(totals)))
    return tuple(looks), dict(totals)


def _add(total: ArmCounts | None, more: ArmCounts) -> ArmCounts:
    if total is None:
        return ArmCounts(more.n, dict(more.hits))
    hits = {name: total.hits.get(name, 0) + count for name, count in more.hits.items()}
    return ArmCounts(total.n + more.n, hits)
