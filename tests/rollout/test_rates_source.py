"""The gate reaches the store only through its interface: a source other than DuckDB, here rows in a Python
list with the catalogue's indicators written again in Python, drives it to the very result the DuckDB store does."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from promptops.core.contract import load_contract
from promptops.rollout.gate import Purpose
from promptops.rollout.plan import load_plan
from promptops.rollout.session import run_gate, store_time
from promptops.store import Store, catalogue
from promptops.store.source import ArmCounts, ArmFeedback, Window
from tests.conftest import Cli
from tests.helpers import REPO_ROOT
from tests.rollout.test_rollout_cli import PLAN, T0, Rollout

Row = dict[str, Any]

# Each catalogue metric again, over one stored response: a metric added to the catalogue must be added here.
INDICATORS: dict[str, Callable[[Row], bool]] = {
    "dropped_finding": lambda r: r["findings_dropped"] > 0,
    "coercion": lambda r: r["coercions"] > 0,
    "incompatible_version": lambda r: r["reason"] == "incompatible_version",
    "rejected": lambda r: not r["accepted"],
    "all_findings_dropped": lambda r: r["accepted"] and r["findings_seen"] > 0 and r["findings_kept"] == 0,
}


class ListSource:
    """A CountsSource over rows held in memory: counts in a window, whole or per hour."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows
        self.asked: list[Window] = []

    def counts(self, window: Window) -> dict[str | None, ArmCounts]:
        return {arm: counts for _, arm, counts in self._grouped(window, None)}

    def hits(self, window: Window, metric: str) -> int:
        return sum(counts.hits[metric] for _, _, counts in self._grouped(window, None))

    def series(self, window: Window, bucket: str) -> list[tuple[Any, str | None, ArmCounts]]:
        assert bucket == "hour"  # the gate's looks
        return self._grouped(window, lambda ts: ts.replace(minute=0, second=0, microsecond=0))

    def feedback(self, window: Window, now: Any) -> dict[str, ArmFeedback]:
        raise AssertionError("the plans here gate no usefulness metric")

    def _grouped(self, window: Window, bucket: Callable[[Any], Any] | None) -> list[tuple[Any, str | None, ArmCounts]]:
        self.asked.append(window)
        chosen = [
            r
            for r in self.rows
            if r["contract"] == window.contract
            and window.rollout_id in (None, r["rollout_id"])
            and window.arm in (None, r["arm"])
            and (window.since is None or r["ts"] >= window.since)
            and (window.until is None or r["ts"] <= window.until)
        ]
        keys = {(None if bucket is None else bucket(r["ts"]), r["arm"]) for r in chosen}
        found = []
        for start, arm in sorted(keys, key=lambda key: (key[0] or 0, key[1] or "")):
            mine = [r for r in chosen if r["arm"] == arm and (bucket is None or bucket(r["ts"]) == start)]
            hits = {name: sum(1 for r in mine if test(r)) for name, test in INDICATORS.items()}
            times = [r["ts"] for r in mine]
            found.append((start, arm, ArmCounts(len(mine), hits, min(times), max(times))))
        return found


@pytest.fixture
def root(full_project: Path) -> Path:
    shutil.copytree(REPO_ROOT / "rollout", full_project / "rollout")
    return full_project


def test_the_list_source_knows_every_metric_of_the_catalogue() -> None:
    assert set(INDICATORS) == {metric.name for metric in catalogue.per_response()}


@pytest.mark.slow  # simulated traffic through the CLI
def test_a_source_other_than_duckdb_drives_the_gate_to_the_same_result(cli: Cli, root: Path) -> None:
    rollout = Rollout(cli, root)
    assert rollout.promote(T0)[0] == 0
    rollout.traffic(T0, 6_000, "--candidate-profile", "regression")
    plan, contract = load_plan(root / PLAN, PLAN), load_contract(root, "review-result")
    with Store.open(Path(rollout.store), read_only=True) as store:
        cursor = store.connection.execute("SELECT * FROM responses")
        names = [column[0] for column in cursor.description]
        listed = ListSource([dict(zip(names, row, strict=True)) for row in cursor.fetchall()])
        verdicts = set()
        for hours in (0.5, 4, 31):
            for purpose in Purpose:
                now = T0 + timedelta(hours=hours)
                expected = run_gate(root, plan, contract, store.source, now, purpose).to_dict()
                assert run_gate(root, plan, contract, listed, now, purpose).to_dict() == expected, (hours, purpose)
                verdicts.add(expected["verdict"])
        # One metric's count (the readiness check's question) agrees with the grouped counts, per arm and in all.
        window = Window("review-result", "review-1.1", None, store_time(T0 + timedelta(hours=31)))
        grouped = store.source.counts(window)
        for metric in catalogue.per_response():
            total = sum(counts.hits[metric.name] for counts in grouped.values())
            assert store.source.hits(window, metric.name) == listed.hits(window, metric.name) == total, metric.name
            candidate = window._replace(arm="candidate")
            assert store.source.hits(candidate, metric.name) == grouped["candidate"].hits[metric.name], metric.name
        with pytest.raises(ValueError, match="not a per-response metric"):
            store.source.hits(window, "acted_on_rate")
    assert {"Failed", "Escalate"} <= verdicts  # the same holds, fails and passes, not only "no data"
    assert Window("review-result", "review-1.1", store_time(T0), store_time(T0 + timedelta(hours=31))) in listed.asked
