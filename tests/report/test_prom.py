"""``promptops report --format prom``: a node_exporter textfile, read back with prometheus_client's own parser."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from promptops.report.model import ContractReport, TrafficRow
from promptops.report.prom import render_prom
from tests.conftest import Cli
from tests.helpers import empty_store
from tests.report.conftest import NOW, PLAN, STORE, TRAFFIC

CONTRACT = "review-result"


def _families(text: str) -> dict[str, Any]:
    families = {f.name: f for f in text_string_to_metric_families(text)}
    series = [(s.name, tuple(sorted(s.labels.items()))) for f in families.values() for s in f.samples]
    assert len(series) == len(set(series)), "a series is repeated"
    return families


def _prom(cli: Cli, root: Path, *args: str) -> tuple[int, str, str]:
    return cli(
        root, "report", "--contract", CONTRACT, "--store", str(root / STORE), "--now", NOW.isoformat(),
        "--out", str(root / "textfiles"), "--format", "prom", *args,
    )  # fmt: skip


def test_counters_and_gate_gauges_parse_and_match_the_store_and_the_gate(cli: Cli, report_project: Path) -> None:
    code, out, err = _prom(cli, report_project)
    assert (code, err) == (0, "") and out.startswith(f"{CONTRACT}: wrote textfiles/{CONTRACT}.prom\n")
    directory = report_project / "textfiles"
    assert [p.name for p in directory.iterdir()] == [f"{CONTRACT}.prom"]  # no page, no temporary file left
    path = directory / f"{CONTRACT}.prom"
    assert path.stat().st_mode & 0o777 == 0o644  # node_exporter runs as another user
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    families = _families(text)
    for name, family in families.items():
        assert f"# HELP {family.samples[0].name} " in text and f"# TYPE {family.samples[0].name} {family.type}" in text
        assert name.startswith("promptops_")

    responses = families["promptops_responses"]
    assert responses.type == "counter"
    assert sum(s.value for s in responses.samples) == TRAFFIC + 1
    by_arm: dict[str, float] = {}
    for sample in responses.samples:
        assert set(sample.labels) == {"contract", "rollout", "arm", "prompt_version", "schema_version", "outcome"}
        by_arm[sample.labels["arm"]] = by_arm.get(sample.labels["arm"], 0) + sample.value
    code, rates, _ = cli(
        report_project, "rates", "--contract", CONTRACT, "--by", "arm", "--store", str(report_project / STORE),
        "--format", "json",
    )  # fmt: skip
    groups = {g["key"]["arm"]: g for g in json.loads(rates)["groups"]}
    assert by_arm == {arm: g["responses"] for arm, g in groups.items()}
    dropped = sum(s.value for s in families["promptops_findings"].samples if s.labels["outcome"] == "dropped")
    assert dropped == sum(g["per_finding"]["dropped"]["count"] for g in groups.values())
    rejected = sum(s.value for s in families["promptops_rejections"].samples)
    assert rejected == sum(s.value for s in responses.samples if s.labels["outcome"] == "rejected") > 0

    code, gate_out, _ = cli(
        report_project, "rollout", "gate", str(report_project / PLAN), "--store", str(report_project / STORE),
        "--now", NOW.isoformat(), "--format", "json",
    )  # fmt: skip
    gate = json.loads(gate_out)
    verdicts = {s.labels["verdict"]: s.value for s in families["promptops_gate_verdict"].samples}
    assert verdicts == {
        v: float(v == gate["verdict"]) for v in ("Passed", "PassedWithWarnings", "Failed", "Escalate", "Skipped")
    }
    assert [s.value for s in families["promptops_gate_exit_code"].samples] == [gate["exit_code"]]
    assert [s.value for s in families["promptops_rollout_step"].samples] == [1]
    assert [s.value for s in families["promptops_rollout_candidate_weight"].samples] == [0.05]
    for metric in gate["metrics"]:
        for arm, estimate in metric["arms"].items():
            for family, key in (("rate", "rate"), ("rate_lower", "lower"), ("rate_upper", "upper")):
                [value] = [
                    s.value
                    for s in families[f"promptops_gate_metric_{family}"].samples
                    if (s.labels["metric"], s.labels["arm"]) == (metric["metric"], arm)
                ]
                assert value == estimate[key]
        statuses = {
            s.labels["status"]: s.value
            for s in families["promptops_gate_metric_status"].samples
            if s.labels["metric"] == metric["metric"]
        }
        assert [k for k, v in statuses.items() if v == 1] == [metric["status"]]
    assert [s.value for s in families["promptops_report_timestamp_seconds"].samples] == [NOW.timestamp()]


def test_a_missing_store_writes_nothing_and_an_empty_one_only_gauges(cli: Cli, report_project: Path) -> None:
    (report_project / STORE).unlink()
    code, _, err = _prom(cli, report_project)
    assert code == 3 and "no diagnostics store here" in err  # never an all-clear textfile for a typo
    assert not (report_project / "textfiles" / f"{CONTRACT}.prom").exists()
    empty_store(report_project / STORE)
    assert _prom(cli, report_project)[0] == 0
    families = _families((report_project / "textfiles" / f"{CONTRACT}.prom").read_text(encoding="utf-8"))
    assert "promptops_responses" not in families
    verdicts = {s.labels["verdict"]: s.value for s in families["promptops_gate_verdict"].samples}
    assert verdicts["Skipped"] == 1 and sum(verdicts.values()) == 1


@pytest.mark.parametrize(
    "text",
    ['1.0"} 1\nevil_metric 1', "back\\slash", "two\nlines", "<script>x</script>", "ünïcode ✓", ""],
)
def test_label_values_round_trip_through_the_parser(text: str) -> None:
    row = TrafficRow(
        rollout="r1", arm="candidate", prompt_version=text, schema_version="1.0", responses=3, accepted=2,
        findings_seen=4, findings_dropped=1, findings_coerced=1, coercions=2, rejects={text or "x": 1},
    )  # fmt: skip
    report = ContractReport(
        contract=CONTRACT, now=datetime(2026, 1, 1, tzinfo=UTC), rollout_filter=None, has_store=True,
        rollouts=(), traffic=(row,), examples=(), releases=(), matrix=None,
    )  # fmt: skip
    families = _families(render_prom(report))
    assert "evil_metric" not in families
    samples = families["promptops_responses"].samples
    assert [(s.labels["prompt_version"], s.labels["outcome"], s.value) for s in samples] == [
        (text, "accepted", 2),
        (text, "rejected", 1),
    ]
    assert [s.labels["reason"] for s in families["promptops_rejections"].samples] == [text or "x"]


def test_slices_that_differ_only_by_null_and_empty_are_one_series() -> None:
    row = TrafficRow(
        rollout=None, arm=None, prompt_version=None, schema_version=None, responses=2, accepted=1,
        findings_seen=0, findings_dropped=0, findings_coerced=0, coercions=0, rejects={},
    )  # fmt: skip
    report = ContractReport(
        contract=CONTRACT, now=datetime(2026, 1, 1, tzinfo=UTC), rollout_filter=None, has_store=True, rollouts=(),
        traffic=(row, row._replace(rollout="", arm="", prompt_version="", schema_version="")), examples=(),
        releases=(), matrix=None,
    )  # fmt: skip
    samples = _families(render_prom(report))["promptops_responses"].samples
    assert [(s.labels["outcome"], s.value) for s in samples] == [("accepted", 2), ("rejected", 2)]
