"""Usefulness metrics gate a rollout on real stores: feedback ingested with ``promptops feedback ingest``, the
plan's ``acted_on_rate`` judged on decided findings, and the gate, the report and the Prometheus export showing it
per arm with the findings still pending."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import Cli
from tests.feedback.events import event, write_lines
from tests.report.conftest import NOW, PLAN, STORE

FEEDBACK_AT = NOW - timedelta(minutes=20)  # after every simulated response, before the gate's now
USEFUL = "  acted_on_rate: {slo: 0.25, severity: critical}\n"


def _findings(root: Path) -> list[tuple[str, str, str]]:
    """(response_id, finding_id, arm) of every stored finding of the rollout, in a fixed order."""
    with duckdb.connect(str(root / STORE), read_only=True) as con:
        rows = con.execute(
            "SELECT f.response_id, f.finding_id, r.arm FROM findings f JOIN responses r USING (response_id) "
            "WHERE r.rollout_id = 'review-1.1' AND r.arm IS NOT NULL ORDER BY ALL"
        ).fetchall()
    return [(str(r), str(f), str(a)) for r, f, a in rows]


def _plan(root: Path, slos: str = USEFUL) -> Path:
    plan = root / PLAN
    plan.write_text(plan.read_text(encoding="utf-8").replace("slos:\n", "slos:\n" + slos), encoding="utf-8")
    return plan


def _feedback(cli: Cli, root: Path, acted_every: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Feedback on every finding: per arm, one in ``acted_every[arm]`` accepted, the others dismissed; ingested
    with the CLI. Returns per arm (decided, acted on)."""
    events: list[dict[str, Any]] = []
    totals: dict[str, tuple[int, int]] = {}
    for number, (response, finding, arm) in enumerate(_findings(root)):
        acted = number % acted_every[arm] == 0
        outcome = "accepted" if acted else "dismissed"
        events.append(event(number, finding, response, outcome=outcome, time=FEEDBACK_AT.isoformat()))
        decided, hits = totals.get(arm, (0, 0))
        totals[arm] = (decided + 1, hits + acted)
    path = write_lines(root / "feedback.jsonl", events)
    code, _, err = cli(root, "feedback", "ingest", str(path), "--store", str(root / STORE))
    assert code == 0, err
    return totals


def _gate(cli: Cli, root: Path, plan: Path, now: str = NOW.isoformat(), *more: str) -> tuple[int, dict[str, Any]]:
    code, out, err = cli(root, "rollout", "gate", str(plan), "--store", str(root / STORE), "--now", now,
                         "--format", "json", *more)  # fmt: skip
    assert code != 3, err
    gate = json.loads(out)
    metric = next(m for m in gate["metrics"] if m["metric"] == "acted_on_rate")
    return code, {**metric, "verdict": gate["verdict"], "gate_reason": gate["reason"]}


def test_a_candidate_whose_findings_are_mostly_dismissed_fails(cli: Cli, report_project: Path) -> None:
    plan = _plan(report_project)
    totals = _feedback(cli, report_project, {"candidate": 10, "baseline": 2})
    code, metric = _gate(cli, report_project, plan)
    assert code == 2 and metric["verdict"] == "Failed" and metric["gate_reason"] == "SLO_BREACH"
    assert metric["status"] == "fail" and metric["reason"] == "SLO_BREACH"
    assert {arm: (e["n"], e["x"]) for arm, e in metric["arms"].items()} == totals
    assert metric["arms"]["candidate"]["upper"] < 0.25
    assert metric["pending"] == {"baseline": 0, "candidate": 0}


def test_a_candidate_whose_findings_are_acted_on_passes_the_metric(cli: Cli, report_project: Path) -> None:
    plan = _plan(report_project)
    totals = _feedback(cli, report_project, {"candidate": 2, "baseline": 2})
    _, metric = _gate(cli, report_project, plan)
    assert metric["status"] == "pass" and metric["reason"] is None
    assert metric["arms"]["candidate"]["lower"] >= 0.25
    assert metric["arms"]["candidate"]["x"] == totals["candidate"][1]


@pytest.mark.parametrize("severity", ["critical", "warning"])
def test_pending_findings_only_are_no_data_never_a_pass(cli: Cli, report_project: Path, severity: str) -> None:
    plan = _plan(report_project, USEFUL.replace("critical", severity))
    code, metric = _gate(cli, report_project, plan)
    waiting = sum(1 for *_, arm in _findings(report_project) if arm == "candidate")
    assert waiting > 0 and metric["pending"]["candidate"] == waiting
    assert metric["reason"] == "NO_DATA" and metric["status"] == ("inconclusive" if severity == "critical" else "warn")
    assert metric["arms"] == {}
    assert metric["verdict"] == "PassedWithWarnings"  # never Passed: monitoring warns
    code, metric = _gate(cli, report_project, plan, NOW.isoformat(), "--purpose", "promote")
    if severity == "critical":  # a promotion holds on it
        assert code == 2 and metric["verdict"] == "Escalate"


def test_now_before_the_feedback_ignores_it(cli: Cli, report_project: Path) -> None:
    plan = _plan(report_project)
    _feedback(cli, report_project, {"candidate": 10, "baseline": 2})
    _, metric = _gate(cli, report_project, plan, (FEEDBACK_AT - timedelta(seconds=1)).isoformat())
    assert metric["reason"] == "NO_DATA" and metric["pending"]["candidate"] > 0
    _, metric = _gate(cli, report_project, plan, FEEDBACK_AT.isoformat())  # an event at now counts
    assert metric["reason"] == "SLO_BREACH"


def test_a_drop_against_the_baseline_beyond_the_margin_fails(cli: Cli, report_project: Path) -> None:
    plan = _plan(report_project, "  acted_on_rate: {slo: 0.05, margin: 0.1, severity: critical}\n")
    _feedback(cli, report_project, {"candidate": 5, "baseline": 1})  # 20% against 100%
    code, metric = _gate(cli, report_project, plan)
    assert code == 2 and metric["reason"] == "BASELINE_REGRESSION"
    assert metric["difference"]["upper"] < -0.1


def test_the_report_and_the_prometheus_export_show_the_metric_per_arm(cli: Cli, report_project: Path) -> None:
    _plan(report_project, USEFUL + "  dismissed_rate: {slo: 0.9, severity: warning}\n")
    totals = _feedback(cli, report_project, {"candidate": 10, "baseline": 2})
    store, reports = str(report_project / STORE), report_project / "reports"
    for kind in ("json", "prom", "text"):
        code, _, err = cli(report_project, "report", "--contract", "review-result", "--store", store,
                           "--now", NOW.isoformat(), "--out", str(reports), "--format", kind)  # fmt: skip
        assert code == 0, err
    rollout = json.loads((reports / "review-result.json").read_text(encoding="utf-8"))["rollouts"][0]
    judged = {m["metric"]: m for m in rollout["gate"]["metrics"]}
    assert {arm: (e["n"], e["x"]) for arm, e in judged["acted_on_rate"]["arms"].items()} == totals
    text = (reports / "review-result.prom").read_text(encoding="utf-8")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    rates = {
        (s.labels["metric"], s.labels["arm"]): s.value
        for s in families["promptops_gate_metric_rate"].samples
        if s.labels["metric"] in ("acted_on_rate", "dismissed_rate")
    }
    assert rates == {
        **{("acted_on_rate", arm): hits / n for arm, (n, hits) in totals.items()},
        **{("dismissed_rate", arm): (n - hits) / n for arm, (n, hits) in totals.items()},
    }
    pending = {s.labels["arm"]: s.value for s in families["promptops_gate_metric_findings_pending"].samples}
    assert pending == {"baseline": 0, "candidate": 0}
    page = (reports / "review-result.html").read_text(encoding="utf-8")
    shown = page[page.index("<h3>acted on rate") :]
    n, hits = totals["candidate"]
    assert "findings still pending" in shown and '<span class="status-fail">fail</span>' in shown[:400]
    row = f'<td>candidate</td><td class="n">{n:,}</td><td class="n">{hits:,}</td><td class="n">{hits / n:.2%}'
    assert row in shown


def test_the_text_gate_shows_the_floor_the_decided_findings_and_the_pending_ones(
    cli: Cli, report_project: Path
) -> None:
    plan = _plan(report_project)
    waiting = sum(1 for *_, arm in _findings(report_project) if arm == "candidate")
    code, out, err = cli(report_project, "rollout", "gate", str(plan), "--store", str(report_project / STORE),
                         "--now", NOW.isoformat())  # fmt: skip
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.strip().startswith("acted_on_rate"))
    assert line.startswith("  acted_on_rate (SLO >= 25.00%, critical, on decided findings): inconclusive; pending ")
    assert f"candidate {waiting:,}" in line
