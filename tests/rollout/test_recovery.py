"""Replays, recovery after a rollback and concurrent writers, through the real CLI and a real DuckDB store."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Cli
from tests.helpers import REPO_ROOT, empty_store
from tests.rollout.test_rollout_cli import PLAN, T0, Rollout


@pytest.fixture
def root(full_project: Path) -> Path:
    shutil.copytree(REPO_ROOT / "rollout", full_project / "rollout")
    return full_project


@pytest.fixture
def rollout(cli: Cli, root: Path) -> Rollout:
    return Rollout(cli, root)


def _stored(store: str, until: str, since: str | None = None) -> dict[str, int]:
    """Responses per arm with ``since <= ts <= until``, counted straight from the store."""
    with duckdb.connect(store, read_only=True) as con:
        rows = con.execute(
            "SELECT arm, count(*) FROM responses WHERE rollout_id = 'review-1.1' AND ts <= CAST($until AS TIMESTAMPTZ)"
            " AND ($since IS NULL OR ts >= CAST($since AS TIMESTAMPTZ)) GROUP BY arm",
            {"until": until, "since": since},
        ).fetchall()
    return {str(arm): int(n) for arm, n in rows}


def test_a_replay_counts_only_responses_logged_by_now(rollout: Rollout, cli: Cli) -> None:
    assert rollout.promote(T0)[0] == 0
    rollout.traffic(T0, 6_000, hours=30)
    now = T0 + timedelta(hours=9)
    expected = _stored(rollout.store, now.isoformat(), T0.isoformat())
    assert 0 < sum(expected.values()) < 6_000 / 2
    code, result, _ = rollout.gate(now)
    assert result["window"]["responses"] == {"baseline": expected["baseline"], "candidate": expected["candidate"]}
    code, status, _ = rollout("status", "--store", rollout.store, at=now)
    needed = rollout("plan")[1]["steps"][1]["candidate_needed"]
    assert status["still_needed"]["responses"]["candidate"] == needed - expected["candidate"] > 0
    code, _, err = cli(
        rollout.root, "report", "--contract", "review-result", "--store", rollout.store, "--now", now.isoformat(),
        "--out", str(rollout.root / "reports"), "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads((rollout.root / "reports" / "review-result.json").read_text(encoding="utf-8"))
    (view,) = summary["rollouts"]
    assert view["gate"]["window"]["responses"] == result["window"]["responses"]
    assert sum(view["arms"][arm]["responses"] for arm in view["arms"]) == sum(expected.values())
    points = [p for s in view["series"] for points in s["arms"].values() for p in points]
    assert max(p["start"] for p in points) <= now.isoformat()


@pytest.mark.slow  # a whole rollout
def test_a_rolled_back_candidate_resumes_to_full_traffic_without_force(rollout: Rollout, cli: Cli) -> None:
    assert rollout.promote(T0)[0] == 0
    rollout.traffic(T0, 24_000, "--candidate-profile", "regression")
    day2 = T0 + timedelta(hours=31)
    assert rollout.gate(day2)[1]["verdict"] == "Failed"
    code, _, _ = rollout("rollback", "--reason", "drops over the SLO", "--by", "oncall", at=day2)
    assert code == 0

    # status and the dashboard agree on a rolled-back rollout: the gate that held it
    code, status, _ = rollout("status", "--store", rollout.store, at=day2 + timedelta(hours=1))
    assert (status["verdict"], status["rolled_back"], status["still_needed"]["responses"]) == (
        "Failed",
        True,
        {"candidate": 0, "baseline": 0},
    )
    code, _, err = cli(
        rollout.root, "report", "--contract", "review-result", "--store", rollout.store,
        "--now", (day2 + timedelta(hours=1)).isoformat(), "--out", str(rollout.root / "reports"),
    )  # fmt: skip
    assert code == 0, err
    summary = json.loads((rollout.root / "reports" / "review-result.json").read_text(encoding="utf-8"))
    assert summary["rollouts"][0]["gate"]["verdict"] == status["verdict"]

    # promote alone is refused and says what to do instead
    code, _, err = rollout.promote(day2 + timedelta(hours=2))
    assert code == 2 and "rollout resume" in err and "rollout retarget" in err
    assert rollout("resume", "--reason", "", at=day2)[0] == 3  # a reason is required

    resumed_at = day2 + timedelta(hours=2)
    code, moved, _ = rollout("resume", "--reason", "parser fix #815 deployed", "--by", "dana", at=resumed_at)
    assert (code, moved["step"], moved["weight"], moved["transition"]["action"]) == (0, 1, 0.05, "resume")
    assert rollout("resume", "--reason", "again", at=resumed_at)[0] == 2  # not rolled back any more

    rollout.traffic(resumed_at, 24_000)
    day3 = resumed_at + timedelta(hours=31)
    code, result, _ = rollout.gate(day3, "--purpose", "promote")
    assert (code, result["verdict"]) == (0, "Passed"), result["sentence"]
    assert sum(result["window"]["responses"].values()) == 24_000  # the regression's responses are not counted
    assert rollout.promote(day3)[0] == 0
    rollout.traffic(day3, 12_000)
    day5 = day3 + timedelta(hours=31)
    assert rollout.promote(day5)[0] == 0
    code, status, _ = rollout("status", "--store", rollout.store, at=day5)
    assert (status["step_name"], status["weights"]["candidate"]) == ("full", 1.0)
    assert [t["action"] for t in status["history"]] == ["promote", "rollback", "resume", "promote", "promote"]
    assert not any(t["forced"] for t in status["history"])


def test_a_rolled_back_rollout_is_retargeted_to_a_new_release(rollout: Rollout) -> None:
    lock = rollout.root / "versions" / "review-result" / "releases.yaml"
    text = lock.read_text(encoding="utf-8")
    entry = text[text.index("- version: 1.1.1") :]
    lock.write_text(text + entry.replace("1.1.1", "1.1.2"), encoding="utf-8")
    assert rollout.promote(T0)[0] == 0
    assert rollout("retarget", "--candidate", "1.1.2", "--reason", "r", at=T0)[0] == 2  # not rolled back
    assert rollout("rollback", "--reason", "bad wording", at=T0 + timedelta(hours=1))[0] == 0
    assert rollout("retarget", "--candidate", "1.1.1", "--reason", "r", at=T0)[0] == 2  # same: resume instead
    assert rollout("retarget", "--candidate", "9.9.9", "--reason", "r", at=T0)[0] == 3  # not in the lock

    at = T0 + timedelta(hours=2)
    code, moved, _ = rollout("retarget", "--candidate", "1.1.2", "--reason", "wording fixed in 1.1.2", at=at)
    assert (code, moved["step"], moved["weight"]) == (0, 0, 0.0)
    assert moved["candidate"] == {"prompt_version": "1.1.2", "schema_version": "1.1"}
    assert moved["transition"]["previous_candidate"]["prompt_version"] == "1.1.1"
    plan_text = (rollout.root / PLAN).read_text(encoding="utf-8")
    assert 'prompt_version: "1.1.2"' in plan_text or "prompt_version: 1.1.2" in plan_text
    code, result, _ = rollout.gate(at)
    assert (code, result["verdict"]) == (0, "Passed")  # the parser stage: 1.1.2 is released and readable
    assert rollout.promote(at)[0] == 0
    code, routed, _ = rollout.cli(rollout.root, "rollout", "routes", rollout.plan)
    assert "1.1.2" in routed
    code, _, err = rollout.cli(
        rollout.root, "report", "--contract", "review-result", "--store", rollout.store, "--now", at.isoformat(),
        "--out", str(rollout.root / "reports"),
    )  # fmt: skip
    assert code == 0, err
    page = (rollout.root / "reports" / "review-result.html").read_text(encoding="utf-8")
    assert "retarget (prompt 1.1.1 → 1.1.2)" in page


def test_every_gate_metric_family_is_exported_without_data(rollout: Rollout, cli: Cli) -> None:
    assert rollout.promote(T0)[0] == 0  # canary, no responses stored at all
    code, _, err = cli(
        rollout.root, "report", "--contract", "review-result", "--store", rollout.store, "--now", T0.isoformat(),
        "--out", str(rollout.root / "prom"), "--format", "prom",
    )  # fmt: skip
    assert code == 0, err
    text = (rollout.root / "prom" / "review-result.prom").read_text(encoding="utf-8")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    metrics = {"dropped_finding", "incompatible_version", "coercion", "rejected", "all_findings_dropped"}
    for name in ("rate", "rate_lower", "rate_upper", "responses"):
        samples = families[f"promptops_gate_metric_{name}"].samples
        assert {(s.labels["metric"], s.labels["arm"]) for s in samples} == {
            (m, arm) for m in metrics for arm in ("baseline", "candidate")
        }
        assert all(s.labels["has_data"] == "false" for s in samples)
        values = [s.value for s in samples]
        assert all(v == 0 for v in values) if name == "responses" else all(math.isnan(v) for v in values)
    for name in ("slo", "responses_needed", "status"):
        assert {s.labels["metric"] for s in families[f"promptops_gate_metric_{name}"].samples} == metrics


def test_concurrent_rollbacks_all_keep_their_history(root: Path) -> None:
    plan = root / PLAN
    empty_store(root / ".promptops" / "diagnostics.duckdb")  # status reads the default store
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, "-m", "promptops", "--root", str(root), "rollout", "rollback", str(plan)]
    runs = [
        subprocess.Popen([*command, "--reason", f"run {i}", "--by", f"oncall-{i}"], env=env, stderr=subprocess.PIPE)
        for i in range(8)
    ]
    errors = [run.communicate()[1] for run in runs]
    assert [run.returncode for run in runs] == [0] * 8, errors
    history: Any = json.loads(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "promptops",
                "--root",
                str(root),
                "rollout",
                "status",
                str(plan),
                "--format",
                "json",
            ],
            env=env,
            capture_output=True,
            check=True,
        ).stdout
    )["history"]
    assert sorted(t["reason"] for t in history) == sorted(f"run {i}" for i in range(8))
