"""``promptops demo``: the whole lifecycle in a workspace, through the real CLI, real releases and a real store."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from promptops.core.lock import load_lock
from promptops.rollout.plan import load_plan
from tests.conftest import Cli
from tests.helpers import REPO_ROOT

PLAN = "rollout/review-result/review-1.1.yaml"


@pytest.fixture
def source(full_project: Path) -> Path:
    shutil.copytree(REPO_ROOT / "rollout", full_project / "rollout")
    return full_project


def _digest(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _demo(cli: Cli, source: Path, workspace: Path, *flags: str) -> dict[str, Any]:
    before = _digest(source)
    code, out, err = cli(source, "demo", "--workspace", str(workspace), "--format", "json", *flags)
    assert (code, err) == (0, ""), err
    assert _digest(source) == before  # the project the demo started from is untouched
    result: dict[str, Any] = json.loads(out)
    return result


def _titles(result: dict[str, Any]) -> list[str]:
    return [stage["title"] for stage in result["stages"]]


@pytest.mark.slow  # the whole demo
def test_the_demo_releases_and_promotes_to_full_traffic(cli: Cli, source: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    result = _demo(cli, source, workspace)
    titles = _titles(result)
    # The last schema change (1.1.0) is shown being cut, then the patch after it (1.1.1), which rolls out.
    assert titles[:7] == [
        "Lint the templates",
        "Release history",
        "Diff the schema",
        "Cut 1.0.2 (a patch bump)",
        "Cut 1.1.0",
        "Cut 1.1.1",
        "Plan the rollout",
    ]
    stages = {stage["title"]: stage for stage in result["stages"]}
    assert stages["Lint the templates"]["errors"] == 0
    assert stages["Diff the schema"]["compat"]["change"] == "minor"
    refused = stages["Cut 1.0.2 (a patch bump)"]
    assert (
        not refused["ok"]
        and refused["lines"][0] == "refused: declared 1.0.2 (patch) but the change is minor: use 1.1.0"
    )
    assert stages["Plan the rollout"]["lines"][0] == "1.0.1 -> 1.1.1, unit pr"
    gates = [s for s in result["stages"] if s["title"].startswith("Gate step")]
    assert [(g["gate"]["step"], g["gate"]["verdict"]) for g in gates] == [
        (0, "Passed"),
        (1, "Passed"),
        (2, "Passed"),
        (3, "Passed"),
    ]
    assert titles.count("Promote") == 3 and "Hold and roll back" not in titles
    assert titles[-1] == "Dashboard"
    dashboard = stages["Dashboard"]
    assert dashboard["dashboard"] == "reports/review-result.html"
    assert dashboard["rollouts"] == {"review-1.1": "Passed"}
    summary = json.loads((workspace / "reports/review-result.json").read_text())
    [view] = summary["rollouts"]
    assert (view["step_name"], view["weights"]["candidate"], view["rolled_back"]) == ("full", 1.0, False)
    assert "review-1.1" in (workspace / dashboard["dashboard"]).read_text()

    # What the demo left is a real project: the replayed lock, the plan's history, the store.
    lock = load_lock(workspace, "review-result")
    original = load_lock(REPO_ROOT, "review-result")
    assert [(str(r.version), r.prompt_class, r.schema_class, r.artifacts) for r in lock.releases] == [
        (str(r.version), r.prompt_class, r.schema_class, r.artifacts) for r in original.releases
    ]
    plan = load_plan(workspace / PLAN, PLAN)
    assert (plan.step, plan.weight, [t.by for t in plan.history]) == (3, 1.0, ["promptops-demo"] * 3)
    with duckdb.connect(str(workspace / ".promptops/diagnostics.duckdb"), read_only=True) as con:
        rows = con.execute("SELECT arm, count(*) FROM responses GROUP BY arm ORDER BY arm").fetchall()
    assert sum(n for _, n in rows) == 39_000 and {arm for arm, _ in rows} == {"baseline", "candidate"}
    code, out, _ = cli(workspace, "release", "verify", "--contract", "review-result")
    assert code == 0, out


@pytest.mark.slow  # the whole demo
def test_with_a_regression_the_canary_fails_and_the_rollout_is_held(cli: Cli, source: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    result = _demo(cli, source, workspace, "--regression")
    gates = [s["gate"] for s in result["stages"] if s["title"].startswith("Gate step")]
    assert [(g["step"], g["verdict"], g["reason"]) for g in gates] == [
        (0, "Passed", None),
        (1, "Failed", "SLO_BREACH"),
    ]
    assert _titles(result)[-2:] == ["Hold and roll back", "Dashboard"]
    plan = load_plan(workspace / PLAN, PLAN)
    assert (plan.step, plan.rolled_back, plan.weight) == (1, True, 0.0)
    assert plan.history[-1].reason == "gate Failed at step 1: SLO_BREACH"
    # The dashboard shows the held rollout: rolled back at the canary, its gate failed and why.
    summary = json.loads((workspace / "reports/review-result.json").read_text())
    [view] = summary["rollouts"]
    assert (view["step_name"], view["rolled_back"], view["gate"]["verdict"]) == ("canary", True, "Failed")
    assert view["gate"]["reason"] == "SLO_BREACH"
    page = (workspace / "reports/review-result.html").read_text()
    assert "Failed" in page and "rolled back" in page.lower()


@pytest.mark.slow  # the whole demo
def test_a_useless_candidate_parses_perfectly_and_the_usefulness_gate_holds_it(
    cli: Cli, source: Path, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    result = _demo(cli, source, workspace, "--useless")
    assert result["useless"] is True
    stages = result["stages"]
    feedback = next(s for s in stages if s["title"] == "Feedback on the findings")
    written = feedback["feedback"]
    assert feedback["stored"] == sum(sum(outcomes.values()) for outcomes in written.values())
    [gate] = [s["gate"] for s in stages if s["title"] == "Gate step 1 (canary)"]
    assert (gate["verdict"], gate["reason"]) == ("Failed", "SLO_BREACH")
    metrics = {m["metric"]: m for m in gate["metrics"]}
    useful = metrics.pop("acted_on_rate")
    assert useful["status"] == "fail" and useful["pending"] == {"baseline": 0, "candidate": 0}
    acted = written["candidate"].get("fixed", 0) + written["candidate"].get("accepted", 0)
    assert (useful["arms"]["candidate"]["n"], useful["arms"]["candidate"]["x"]) == (
        sum(written["candidate"].values()),
        acted,
    )
    assert all(m["status"] == "pass" for m in metrics.values())  # it parses perfectly: only usefulness holds it
    assert _titles(result)[-2:] == ["Hold and roll back", "Dashboard"]
    plan = load_plan(workspace / PLAN, PLAN)
    assert (plan.step, plan.rolled_back) == (1, True)
    page = (workspace / "reports/review-result.html").read_text()
    shown = page[page.index("<h3>acted on rate") :]
    assert '<span class="status-fail">fail</span>' in shown[:300] and "SLO breach" in shown[:1000]


@pytest.mark.slow  # the whole demo
def test_the_text_narrative_names_each_step_and_the_workspace(cli: Cli, source: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    code, out, err = cli(source, "demo", "--workspace", str(workspace), "--regression")
    assert (code, err) == (0, "")
    assert "== Cut 1.1.0" in out and "== Cut 1.1.1" in out and "$ promptops release cut --contract review-result" in out
    assert "Failed [SLO_BREACH]: The candidate's dropped finding rate is at least" in out
    assert f"Workspace: {workspace}" in out
    assert f"Dashboard: {workspace / 'reports/review-result.html'}" in out
    assert "review-1.1: step 1 (canary), rolled back; latest gate Failed" in out


def test_a_used_workspace_is_refused_with_one_line(cli: Cli, source: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("mine")
    code, out, err = cli(source, "demo", "--workspace", str(workspace))
    assert (code, out) == (3, "")
    assert err == f"promptops: error: {workspace}: the demo workspace must be a new or empty directory\n"
    assert (workspace / "notes.txt").read_text() == "mine"


def test_outside_a_project_the_demo_says_where_to_run_it(cli: Cli, tmp_path: Path) -> None:
    empty = tmp_path / "elsewhere"
    (empty / "versions").mkdir(parents=True)
    code, _, err = cli(empty, "demo", "--workspace", str(tmp_path / "ws"))
    assert code == 3 and len(err.splitlines()) == 1
    assert "run the demo from a promptops project" in err


def test_examples_run_the_bundled_responses_through_the_parser(cli: Cli, source: Path) -> None:
    code, out, _ = cli(source, "demo", "--examples", "--format", "json")
    result = json.loads(out)
    assert code == 0 and result["contract"] == "review-result"
    assert result["accepted"] + result["rejected"] == len(result["responses"]) > 5
    assert {r["outcome"] for r in result["responses"]} == {"accepted", "rejected"}
