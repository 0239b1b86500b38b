"""The metric catalogue is the one declaration of a metric: one added to a copy of it reaches the plan
validator, the views, the gate, the report and the Prometheus export with no other edit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
from prometheus_client.parser import text_string_to_metric_families

from promptops.store import catalogue
from tests.conftest import Cli
from tests.helpers import REPO_ROOT
from tests.report.conftest import NOW, PLAN, STORE

CONTRACT = "review-result"
# A fresh interpreter whose catalogue holds one more metric, set before any module that reads it is imported.
PATCHED = """
import sys
from promptops.store import catalogue
extra = catalogue.Metric("long_review", "many_findings", "findings_seen >= 3", "three findings or more")
catalogue.METRICS = (*catalogue.METRICS, extra)
from promptops.cli import run
sys.exit(run(sys.argv[1:]))
"""


def _patched(root: Path, *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-c", PATCHED, "--root", str(root), *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PROMPTOPS_NO_TEMPLATE_CACHE": "1"},
    )
    assert done.stderr == "", done.stderr
    return done.returncode, done.stdout


def test_a_metric_added_to_the_catalogue_is_validated_gated_reported_and_exported(
    cli: Cli, report_project: Path
) -> None:
    plan = report_project / PLAN
    plan.write_text(
        plan.read_text(encoding="utf-8").replace("slos:\n", "slos:\n  long_review: {slo: 0.9, severity: warning}\n"),
        encoding="utf-8",
    )
    code, _, err = cli(report_project, "rollout", "plan", str(plan))  # the shipped catalogue does not know it
    assert code == 3 and "slos.long_review: unknown metric (known: dropped_finding, " in err
    code, out = _patched(report_project, "rollout", "plan", str(plan))
    assert code == 0 and out

    with duckdb.connect(str(report_project / STORE), read_only=True) as con:  # the table, not the views
        rows = con.execute(
            "SELECT arm, count(*), count(*) FILTER (WHERE findings_seen >= 3) FROM responses "
            "WHERE rollout_id = 'review-1.1' AND ts <= $now GROUP BY arm",
            {"now": NOW.replace(tzinfo=None)},
        ).fetchall()
    expected = {arm: (int(n), int(x)) for arm, n, x in rows}
    assert 0 < expected["candidate"][1] < expected["candidate"][0]  # the data can tell the metric apart

    store = str(report_project / STORE)
    code, out = _patched(report_project, "rollout", "gate", str(plan), "--store", store, "--now", NOW.isoformat(),
                         "--format", "json")  # fmt: skip
    assert code in (0, 2)
    judged = {m["metric"]: m for m in json.loads(out)["metrics"]}
    assert {arm: (e["n"], e["x"]) for arm, e in judged["long_review"]["arms"].items()} == expected

    reports = report_project / "reports"
    code, _ = _patched(report_project, "report", "--contract", CONTRACT, "--store", store, "--now", NOW.isoformat(),
                       "--out", str(reports), "--format", "json")  # fmt: skip
    assert code == 0
    rollout = json.loads((reports / f"{CONTRACT}.json").read_text(encoding="utf-8"))["rollouts"][0]
    series = next(s for s in rollout["series"] if s["metric"] == "long_review")
    assert {arm: (sum(p["n"] for p in ps), sum(p["x"] for p in ps)) for arm, ps in series["arms"].items()} == expected

    code, _ = _patched(report_project, "report", "--contract", CONTRACT, "--store", store, "--now", NOW.isoformat(),
                       "--out", str(reports), "--format", "prom")  # fmt: skip
    assert code == 0
    text = (reports / f"{CONTRACT}.prom").read_text(encoding="utf-8")
    families = {f.name: f for f in text_string_to_metric_families(text)}
    rates = {
        s.labels["arm"]: s.value
        for s in families["promptops_gate_metric_rate"].samples
        if s.labels["metric"] == "long_review"
    }
    assert rates == {arm: x / n for arm, (n, x) in expected.items()}


def test_a_pull_request_metric_is_no_response_column_and_every_metric_is_known_to_plans(
    cli: Cli, report_project: Path
) -> None:
    useful = [m for m in catalogue.METRICS if m.unit == "pull_request"]
    assert {m.name for m in useful} == {"acted_on_rate", "dismissed_rate", "acted_on_per_pr"}
    with duckdb.connect(str(report_project / STORE), read_only=True) as con:
        columns = {row[0] for row in con.execute("DESCRIBE response_indicators").fetchall()}
    assert {m.column for m in catalogue.per_response()} <= columns
    assert not {m.column for m in useful} & columns  # judged on feedback, never a per-response indicator
    plan = report_project / PLAN
    slos = "".join(f"  {m.name}: {{slo: 0.2, severity: warning}}\n" for m in useful)
    plan.write_text(plan.read_text(encoding="utf-8").replace("slos:\n", "slos:\n" + slos), encoding="utf-8")
    code, _, err = cli(report_project, "rollout", "plan", str(plan), "--format", "json")
    assert code == 0, err
