"""Retry and recovered-after-retry rates match counts computed in Python from the loop's own steps, and
adding runs to a store leaves its response rates untouched."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from promptops.reask import MemorySink
from promptops.store import ParserCache, RatesQuery, Recorder, Store, ingest_logs, rates
from tests.store.conftest import relative_to
from tests.store.runs import drive


def _expected(
    memory: MemorySink, by: tuple[str, ...], rollout: str | None, since: datetime | None
) -> dict[tuple[Any, ...], Counter[str]]:
    """Per --by key, from the TraceStep objects the loop handed its sink: no SQL."""
    groups: dict[tuple[Any, ...], Counter[str]] = defaultdict(Counter)
    for steps in memory.traces:
        first = steps[0]
        started = datetime.fromisoformat(first.started_at).astimezone(UTC).replace(tzinfo=None)
        if rollout is not None or (since is not None and started < since):
            continue  # runs belong to no rollout
        values = {
            "prompt_version": first.prompt_version,
            "schema_version": first.schema_version,
            "day": started.date().isoformat(),
        }
        group = groups[tuple(values.get(name) for name in by)]  # arm, rollout, model...: None
        group["runs"] += 1
        group["attempts"] += len(steps)
        group["retried"] += len(steps) > 1
        group["recovered"] += first.status == "failed" and any(step.status == "ok" for step in steps[1:])
    return groups


@pytest.mark.parametrize(
    ("by", "rollout", "since"),
    [
        ((), None, None),
        (("prompt_version", "schema_version"), None, None),
        (("prompt_version", "day"), None, datetime(2025, 5, 3, 12)),
        (("arm", "schema_version"), None, None),
        (("model",), None, None),
        (("arm",), "review-v7", None),
    ],
)
def test_run_rates_match_counts_computed_in_python(
    store: Store, by: tuple[str, ...], rollout: str | None, since: datetime | None
) -> None:
    with Recorder(store) as recorder:
        memory = drive(recorder, 300)
    report = rates(store.connection, RatesQuery("review-result", by=by, rollout_id=rollout, since=since))
    expected = _expected(memory, by, rollout, since)

    assert [tuple(g.key.values()) for g in report.groups] == sorted(
        expected, key=lambda key: [(value is not None, value) for value in key]
    )
    for group in report.groups:
        want = expected[tuple(group.key.values())]
        assert (group.runs, group.attempts) == (want["runs"], want["attempts"])
        assert {name: (rate.count, rate.total) for name, rate in group.per_run.items()} == {
            "retried": (want["retried"], want["runs"]),
            "recovered": (want["recovered"], want["runs"]),
        }
        assert group.per_run["recovered"].rate == pytest.approx(want["recovered"] / want["runs"])
        assert group.responses == 0 and all(rate.total == 0 for rate in group.per_response.values())
    if rollout is None:  # the data exercise every case: retried or not, recovered or given up
        whole = _expected(memory, (), None, None)[()]
        assert 0 < whole["recovered"] < whole["retried"] < whole["runs"] == 300
        assert sum(g.runs for g in report.groups) > 0


def test_runs_and_responses_meet_in_one_group_and_leave_response_rates_alone(
    project: Path, store: Store, parsers: ParserCache, write_log: Callable[..., Path]
) -> None:
    log = write_log(project / "logs" / "a.jsonl", 400, days=3)
    ingest_logs([log], store, parsers, relative=relative_to(project))
    queries = [
        RatesQuery("review-result", by=by, rollout_id=rollout)
        for by, rollout in [
            ((), None),
            (("arm",), None),
            (("prompt_version", "schema_version", "day"), None),
            (("arm", "day"), "review-v7"),
        ]
    ]
    before = [rates(store.connection, q) for q in queries]
    with Recorder(store) as recorder:
        memory = drive(recorder, 150)
    after = [rates(store.connection, q) for q in queries]

    response_fields = ("responses", "accepted", "per_response", "per_finding", "top_drop_reasons")
    for query, old, new in zip(queries, before, after, strict=True):
        old_groups = {tuple(g.key.values()): g for g in old.groups}
        for group in new.groups:
            key = tuple(group.key.values())
            if key in old_groups:
                assert all(getattr(group, f) == getattr(old_groups[key], f) for f in response_fields)
            else:
                assert group.responses == 0 and group.runs > 0
        assert {tuple(g.key.values()) for g in new.groups} >= set(old_groups)
        want = _expected(memory, query.by, query.rollout_id, None)
        assert {tuple(g.key.values()): g.runs for g in new.groups if g.runs} == {k: v["runs"] for k, v in want.items()}
    assert after[-1].to_dict() == before[-1].to_dict()  # a rollout's groups hold responses only
    (whole,) = after[0].groups
    assert (whole.responses, whole.runs) == (400, 150)
    # Runs carry no arm: with --by arm they all sit in the null group, beside the responses outside a rollout.
    null_arm = next(g for g in after[1].groups if g.key == {"arm": None})
    assert null_arm.runs == 150 and null_arm.responses == before[1].groups[0].responses > 0
