"""``promptops report`` end to end: the real CLI on a real DuckDB store, checked against the commands whose
numbers the page shows (rollout gate, rates, compat matrix, release list)."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from promptops.rollout.stats import wilson, z_one_sided
from promptops.store.catalogue import METRICS
from tests.conftest import Cli
from tests.helpers import empty_store
from tests.report.conftest import ENUM, IMG, KEY, NOW, PLAN, SCRIPT, STORE, T0, TRAFFIC, run

CONTRACT = "review-result"


def _report(cli: Cli, root: Path, *args: str, store: str | None = STORE) -> tuple[int, str, str]:
    where = ["--store", str(root / store)] if store is not None else []
    return cli(
        root, "report", "--contract", CONTRACT, *where, "--now", NOW.isoformat(), "--out", str(root / "reports"), *args
    )


def _summary(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / "reports" / f"{CONTRACT}.json").read_text(encoding="utf-8"))
    return data


def test_writes_the_page_and_summary_and_prints_each_verdict(cli: Cli, report_project: Path) -> None:
    code, out, err = _report(cli, report_project)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"{CONTRACT}: wrote reports/{CONTRACT}.html, reports/{CONTRACT}.json"
    summary = _summary(report_project)
    gate = summary["rollouts"][0]["gate"]
    assert lines[1] == (
        f"  review-1.1 step 1 (canary, candidate 5%): {gate['verdict']}"
        + (f" [{gate['reason']}]" if gate["reason"] else "")
        + f": {gate['sentence']}"
    )
    page = (report_project / "reports" / f"{CONTRACT}.html").read_text(encoding="utf-8")
    assert gate["sentence"].replace("'", "&#39;") in page and f">{gate['verdict']}<" in page
    assert len(page.encode()) < 2_000_000

    code, out, _ = _report(cli, report_project, "--format", "json")
    printed = json.loads(out)
    assert printed["files"] == {"html": f"reports/{CONTRACT}.html", "json": f"reports/{CONTRACT}.json"}
    assert [(r["rollout"], r["verdict"], r["exit_code"]) for r in printed["rollouts"]] == [
        ("review-1.1", gate["verdict"], gate["exit_code"])
    ]


def test_the_gate_is_the_rollout_gate_commands_own(cli: Cli, report_project: Path) -> None:
    _report(cli, report_project)
    code, out, _ = cli(
        report_project, "rollout", "gate", str(report_project / PLAN), "--store", str(report_project / STORE),
        "--now", NOW.isoformat(), "--format", "json",
    )  # fmt: skip
    assert code in (0, 2)
    rollout = _summary(report_project)["rollouts"][0]
    assert rollout["gate"] == json.loads(out)
    assert (rollout["step"], rollout["step_name"], rollout["weights"]) == (
        1,
        "canary",
        {"candidate": 0.05, "baseline": 0.95},
    )
    assert rollout["plan"] == PLAN  # repo-relative
    assert [h["action"] for h in rollout["history"]] == ["promote"]


def test_series_add_up_to_the_store_and_carry_the_gates_wilson_bounds(cli: Cli, report_project: Path) -> None:
    _report(cli, report_project)
    rollout = _summary(report_project)["rollouts"][0]
    code, out, _ = cli(
        report_project, "rates", "--contract", CONTRACT, "--rollout", "review-1.1", "--by", "arm",
        "--store", str(report_project / STORE), "--format", "json",
    )  # fmt: skip
    assert code == 0
    groups = {g["key"]["arm"]: g for g in json.loads(out)["groups"]}
    assert sum(g["responses"] for g in groups.values()) == TRAFFIC + 1
    assert rollout["bucket"] == "hour"  # 30 hours of traffic
    z = z_one_sided(rollout["alpha"])
    assert [s["metric"] for s in rollout["series"]] == [
        "dropped_finding",
        "incompatible_version",
        "coercion",
        "rejected",
        "all_findings_dropped",
    ]
    for series in rollout["series"]:
        column = next(m.column for m in METRICS if m.name == series["metric"])
        for arm, points in series["arms"].items():
            assert sum(p["n"] for p in points) == groups[arm]["responses"]
            assert sum(p["x"] for p in points) == groups[arm]["per_response"][column]["count"]
            assert 25 <= len(points) <= 31
            for point in points:
                bounds = wilson(point["x"], point["n"], z)
                assert (point["lower"], point["upper"]) == (bounds.low, bounds.high)
                assert point["rate"] == point["x"] / point["n"]
        assert series["slo"] in (0.03, 0.01, 0.08, 0.02)
    for arm, summary in rollout["arms"].items():
        assert summary["top_drop_reasons"] == groups[arm]["top_drop_reasons"]
        assert summary["top_coerced_fields"] == groups[arm]["top_coerced_fields"]
        assert summary["responses"] == groups[arm]["responses"]


def test_a_longer_rollout_is_bucketed_by_day(cli: Cli, report_project: Path) -> None:
    log = report_project / "logs" / "later.jsonl"
    run(
        report_project, "rollout", "simulate", str(report_project / PLAN), "--responses", "400",
        "--start", (T0 + timedelta(days=2)).isoformat(), "--hours", "96", "--seed", "2", "--out", str(log),
    )  # fmt: skip
    run(report_project, "ingest", str(log), "--store", str(report_project / STORE))
    _report(cli, report_project)  # as of NOW, the later responses do not exist yet: hourly buckets
    assert _summary(report_project)["rollouts"][0]["bucket"] == "hour"
    _report(cli, report_project, "--now", (T0 + timedelta(days=7)).isoformat())
    rollout = _summary(report_project)["rollouts"][0]
    assert rollout["bucket"] == "day"
    starts = [p["start"] for p in rollout["series"][0]["arms"]["baseline"]]
    assert starts == [(T0 + timedelta(days=d)).replace(hour=0).isoformat() for d in range(7)]


def test_releases_and_matrix_are_the_locks(cli: Cli, report_project: Path) -> None:
    _report(cli, report_project)
    summary = _summary(report_project)
    matrix = json.loads(cli(report_project, "compat", "matrix", "--contract", CONTRACT, "--format", "json")[1])
    assert summary["compat_matrix"] == matrix
    listed = json.loads(cli(report_project, "release", "list", "--contract", CONTRACT, "--format", "json")[1])
    releases = [{k: v for k, v in r.items() if k != "artifacts"} for r in listed[0]["releases"]]
    assert summary["releases"] == releases and [r["version"] for r in releases] == ["1.0.0", "1.0.1", "1.1.0", "1.1.1"]


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text outside script blocks."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if not self._in_script:
            self.text.append(data)


def test_model_text_is_escaped_and_only_inert_markup_is_written(cli: Cli, report_project: Path) -> None:
    _report(cli, report_project)
    page = (report_project / "reports" / f"{CONTRACT}.html").read_text(encoding="utf-8")
    parsed = _Tags()
    parsed.feed(page)
    names = [tag for tag, _ in parsed.tags]
    assert "img" not in names
    assert [attrs for tag, attrs in parsed.tags if tag == "script"] == [
        {"type": "application/json", "id": "promptops-summary"}
    ]
    handlers = [(tag, name) for tag, attrs in parsed.tags for name in attrs if name.startswith("on")]
    assert handlers == []
    csp = [a["content"] for tag, a in parsed.tags if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp == ["default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"]
    assert names.index("meta") < names.index("style")  # the policy comes before any content
    text = "".join(parsed.text)
    for payload in (SCRIPT, IMG, ENUM, KEY):
        assert payload in text  # shown to the reader, as text
    examples = _summary(report_project)["recent_drops"]
    assert [e["response_id"] for e in examples[:4]] == ["xss-1"] * 4 and examples[4]["response_id"] != "xss-1"
    assert max(len(e["message"]) for e in examples) <= 300  # the 5,000-character file name was cut
    assert {e["finding_id"] for e in examples if e["response_id"] == "xss-1"} >= {SCRIPT, IMG}
    embedded = page.split('<script type="application/json" id="promptops-summary">', 1)[1].split("</script>", 1)[0]
    assert "<" not in embedded and json.loads(embedded) == _summary(report_project)


def test_the_same_store_and_time_give_the_same_bytes(cli: Cli, report_project: Path) -> None:
    _report(cli, report_project)
    first = [(report_project / "reports" / f"{CONTRACT}.{ext}").read_bytes() for ext in ("html", "json")]
    _report(cli, report_project)
    assert [(report_project / "reports" / f"{CONTRACT}.{ext}").read_bytes() for ext in ("html", "json")] == first
    assert sorted(p.name for p in (report_project / "reports").iterdir()) == [f"{CONTRACT}.html", f"{CONTRACT}.json"]
    assert all((p.stat().st_mode & 0o777) == 0o644 for p in (report_project / "reports").iterdir())


def test_a_parquet_export_gives_the_same_report(cli: Cli, report_project: Path) -> None:
    _report(cli, report_project)
    from_file = _summary(report_project)
    code, _, err = cli(
        report_project,
        "export",
        "--store",
        str(report_project / STORE),
        "--format",
        "parquet",
        str(report_project / "lake"),
    )
    assert code == 0, err
    assert _report(cli, report_project, store="lake")[0] == 0
    assert _summary(report_project) == from_file


def test_a_missing_store_is_an_error_and_an_empty_one_has_no_data(cli: Cli, report_project: Path) -> None:
    (report_project / STORE).unlink()
    code, out, err = _report(cli, report_project)  # a typo or a CI checkout without the store: never "no data"
    assert (code, out) == (3, "") and err == f"promptops: error: {STORE}: no diagnostics store here (check the path)\n"
    assert not (report_project / "reports").exists()
    code, out, err = _report(cli, report_project, store=None)  # the default store, missing
    assert code == 3 and "no diagnostics store here (create it with promptops ingest, or give --store)" in err

    empty_store(report_project / STORE)
    code, out, err = _report(cli, report_project)
    assert (code, err) == (0, "") and "review-1.1 step 1 (canary, candidate 5%): Skipped [NO_DATA]" in out
    summary = _summary(report_project)
    assert summary["store"] is True and summary["traffic"] == [] and summary["recent_drops"] == []
    rollout = summary["rollouts"][0]
    assert (rollout["gate"]["verdict"], rollout["gate"]["reason"]) == ("Skipped", "NO_DATA")
    assert all(s["arms"] == {} for s in rollout["series"])


def test_every_plan_of_the_contract_or_just_one(cli: Cli, report_project: Path) -> None:
    other = report_project / "rollout" / CONTRACT / "review-1.1-eu.yaml"
    text = (report_project / PLAN).read_text(encoding="utf-8").replace("rollout: review-1.1", "rollout: review-1.1-eu")
    other.write_text(text.split("history:")[0], encoding="utf-8")
    _report(cli, report_project)
    rollouts = _summary(report_project)["rollouts"]
    assert [(r["rollout"], r["step"], r["gate"]["verdict"]) for r in rollouts] == [
        ("review-1.1", 1, rollouts[0]["gate"]["verdict"]),
        ("review-1.1-eu", 0, "Passed"),  # the parser stage: the released parser reads both arms
    ]
    code, out, _ = _report(cli, report_project, "--rollout", "review-1.1-eu", "--format", "json")
    assert code == 0 and [r["rollout"] for r in json.loads(out)["rollouts"]] == ["review-1.1-eu"]
    assert _summary(report_project)["rollout"] == "review-1.1-eu"
    assert _summary(report_project)["traffic"] == []  # no responses carry that rollout id


def _break_plan(root: Path) -> None:
    plan = root / PLAN
    plan.write_text(plan.read_text(encoding="utf-8").replace("alpha: 0.05", "alpha: 5"), encoding="utf-8")


def _misplace_plan(root: Path) -> None:
    plan = root / PLAN
    plan.write_text(
        plan.read_text(encoding="utf-8").replace("contract: review-result", "contract: agent-output"), encoding="utf-8"
    )


def _corrupt_store(root: Path) -> None:
    (root / STORE).write_bytes(b"this is not a duckdb file" * 100)


def _break_lock(root: Path) -> None:
    lock = root / "versions" / CONTRACT / "releases.yaml"
    lock.write_text(lock.read_text(encoding="utf-8").replace("lock_version: 1", "lock_version: [1"), encoding="utf-8")


def _file_as_out(root: Path) -> None:
    (root / "reports").write_text("not a directory", encoding="utf-8")


def _remove_released_schema(root: Path) -> None:
    (root / "versions" / CONTRACT / "schemas" / "1.1.json").unlink()
    shutil.rmtree(root / "rollout")  # else the plan's own checks name the missing schema first


@pytest.mark.parametrize(
    ("damage", "args", "message"),
    [
        (
            _break_plan,
            (),
            "rollout/review-result/review-1.1.yaml: line 10: alpha: must be a number from 1e-06 up to, not",
        ),
        (_misplace_plan, (), "review-1.1.yaml: contract: is 'agent-output' but the plan is under rollout/"),
        (_corrupt_store, (), "diagnostics.duckdb"),
        (_break_lock, (), "versions/review-result/releases.yaml"),
        (_file_as_out, (), "reports"),
        (_remove_released_schema, (), "versions/review-result/releases.yaml: released schema 1.1 has no schema file"),
        (None, ("--rollout", "review-9"), "rollout/review-result/review-9.yaml: no such rollout plan"),
        (None, ("--rollout", "../../etc/passwd"), "--rollout '../../etc/passwd': a rollout id is letters"),
        (None, ("--now", "yesterday"), "'yesterday' is not an ISO 8601 time"),
        (None, ("--contract", "no-such-contract"), "no-such-contract"),
    ],
)  # fmt: skip
def test_broken_input_exits_3_with_one_line(
    cli: Cli, report_project: Path, damage: Any, args: tuple[str, ...], message: str
) -> None:
    if damage is not None:
        damage(report_project)
    code, out, err = _report(cli, report_project, *args)
    assert code == 3 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("promptops: error: ") and message in err, err
    assert "Traceback" not in err


def test_a_damaged_parquet_export_exits_3_with_one_line(cli: Cli, report_project: Path) -> None:
    assert (
        cli(
            report_project,
            "export",
            "--store",
            str(report_project / STORE),
            "--format",
            "parquet",
            str(report_project / "lake"),
        )[0]
        == 0
    )
    victim = next((report_project / "lake" / "diagnostics").rglob("*.parquet"))
    victim.write_bytes(b"PAR1 not really parquet")
    code, out, err = _report(cli, report_project, store="lake")
    assert code == 3 and out == "" and len(err.splitlines()) == 1 and err.startswith("promptops: error: lake"), err


def test_the_bars_need_what_the_plan_says_each_arm_needs(cli: Cli, report_project: Path) -> None:
    _report(cli, report_project)
    rollout = _summary(report_project)["rollouts"][0]
    step = rollout["steps"][rollout["step"]]
    page = (report_project / "reports" / f"{CONTRACT}.html").read_text(encoding="utf-8")
    for metric in rollout["gate"]["metrics"]:
        candidate = max(step["candidate_needed"], metric["n_needed"])
        assert f"candidate responses in this step: {_needed(rollout, 'candidate', candidate)}" in page
    assert f"baseline responses in this step: {_needed(rollout, 'baseline', step['baseline_needed'])}" in page
    assert step["baseline_needed"] > max(m["n_needed"] for m in rollout["gate"]["metrics"])  # the plan's, not 99


def _needed(rollout: dict[str, Any], arm: str, needed: int) -> str:
    n = rollout["gate"]["window"]["responses"][arm]
    return f"{n:,} of {needed:,} needed" if n < needed else f"{n:,} (needed {needed:,})"


def test_a_rolled_back_rollout_shows_the_reason_recorded_at_the_rollback(cli: Cli, report_project: Path) -> None:
    reason = "findings read like nits <b>"
    code, _, err = cli(
        report_project, "rollout", "rollback", str(report_project / PLAN), "--reason", reason,
        "--now", (NOW - timedelta(hours=1)).isoformat(), "--by", "alice",
    )  # fmt: skip
    assert code == 0, err
    _report(cli, report_project)
    page = (report_project / "reports" / f"{CONTRACT}.html").read_text(encoding="utf-8")
    assert "rolled back: findings read like nits &lt;b&gt;</td>" in page  # the overview's reason column
    assert "<strong>Rolled back</strong>" in page and "by alice: findings read like nits &lt;b&gt;" in page
