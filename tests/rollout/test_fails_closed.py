"""The gate never passes what it cannot judge, through the real CLI and real DuckDB stores.

- A candidate whose every answer is rejected keeps no finding, so it trips no drop or coercion indicator: every
  shipped and generated plan gates on ``rejected`` and ``all_findings_dropped``, and a plan without them is
  refused by every command that judges it.
- A store path where nothing exists, or that is not a store, is exit 3 naming the path in every store command,
  never "no data".
- Promoting with no data in the step holds (Escalate, exit 2).
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from promptops.rollout.plan import load_plan
from tests.conftest import Cli
from tests.helpers import REPO_ROOT, empty_store

PLAN = "rollout/review-result/review-1.1.yaml"
DEFAULT_STORE = ".promptops/diagnostics.duckdb"
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
RAMP = T0 + timedelta(hours=31)  # the ramp step began here
NOW = RAMP + timedelta(hours=31)  # past the ramp's 24 hours
SORRY = "I am sorry, but I cannot review this change."


@pytest.fixture
def root(full_project: Path) -> Path:
    shutil.copytree(REPO_ROOT / "rollout", full_project / "rollout")
    return full_project


def _at_ramp(root: Path) -> None:
    """The shipped plan as it stands after two promotions: step 2 (ramp), candidate weight 25%."""
    plan = root / PLAN
    history = "".join(
        f"- {{at: '{at.isoformat()}', by: t, action: promote, from_step: {i}, to_step: {i + 1}, verdict: Passed,"
        " reason: ok}\n"
        for i, at in enumerate((T0, RAMP))
    )
    plan.write_text(plan.read_text(encoding="utf-8").split("history:")[0] + "history:\n" + history, encoding="utf-8")


def _ramp_traffic(cli: Cli, root: Path, store: str, *, sorry: bool) -> None:
    """12,000 simulated responses over the ramp's 30 hours, ingested; with ``sorry``, every candidate answer is
    a refusal the parser rejects."""
    log = root / "ramp.jsonl"
    code, _, err = cli(
        root, "rollout", "simulate", str(root / PLAN), "--responses", "12000", "--start", RAMP.isoformat(),
        "--hours", "30", "--seed", "7", "--out", str(log),
    )  # fmt: skip
    assert code == 0, err
    if sorry:
        records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        for record in records:
            if record["arm"] == "candidate":
                record["raw"] = SORRY
        log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    code, _, err = cli(root, "ingest", str(log), "--store", store)
    assert code == 0, err


def _gate(cli: Cli, root: Path, store: str, *args: str) -> tuple[int, dict[str, object], str]:
    code, out, err = cli(
        root, "rollout", "gate", str(root / PLAN), "--store", store, "--now", NOW.isoformat(), "--format", "json", *args
    )
    return code, json.loads(out) if out.strip() else {}, err


@pytest.mark.slow  # a rollout to its ramp
def test_a_candidate_whose_every_answer_is_rejected_fails_and_is_not_promoted(cli: Cli, root: Path) -> None:
    _at_ramp(root)
    store = str(root / "sorry.duckdb")
    _ramp_traffic(cli, root, store, sorry=True)
    for purpose in ("monitor", "promote"):
        code, result, _ = _gate(cli, root, store, "--purpose", purpose)
        assert (code, result["verdict"], result["reason"]) == (2, "Failed", "SLO_BREACH"), result
        assert str(result["sentence"]).startswith("The candidate's rejected rate is at least 99.")
    metrics = {m["metric"]: m for m in result["metrics"]}  # type: ignore[attr-defined]
    assert metrics["rejected"]["status"] == "fail" and metrics["rejected"]["severity"] == "critical"
    assert metrics["rejected"]["arms"]["candidate"]["x"] == metrics["rejected"]["arms"]["candidate"]["n"] > 2000
    # what let it through before: a rejected answer drops and coerces nothing
    assert metrics["dropped_finding"]["status"] == metrics["coercion"]["status"] == "pass"

    before = (root / PLAN).read_bytes()
    code, out, err = cli(
        root, "rollout", "promote", str(root / PLAN), "--store", store, "--by", "t", "--now", NOW.isoformat()
    )
    assert code == 2 and "promotion refused: Failed" in err, out + err
    assert (root / PLAN).read_bytes() == before
    assert load_plan(root / PLAN, PLAN).weight == 0.25


@pytest.mark.slow  # a rollout to its ramp
def test_the_same_ramp_with_real_answers_passes(cli: Cli, root: Path) -> None:
    """The control: the rejected and all-findings-dropped SLOs let a healthy candidate through."""
    _at_ramp(root)
    store = str(root / "good.duckdb")
    _ramp_traffic(cli, root, store, sorry=False)
    code, result, _ = _gate(cli, root, store, "--purpose", "promote")
    assert (code, result["verdict"]) == (0, "Passed"), result["sentence"]


UNGUARDED = {
    "no rejected": ("  rejected: {slo: 0.02, severity: critical}", "", "slos.rejected: missing: add `rejected: "),
    "no all_findings_dropped": (
        "  all_findings_dropped: {slo: 0.02, severity: critical}",
        "",
        "slos.all_findings_dropped: missing: add `all_findings_dropped: ",
    ),
    "rejected only warns": (
        "rejected: {slo: 0.02, severity: critical}",
        "rejected: {slo: 0.02, severity: warning}",
        "slos.rejected.severity: must be critical",
    ),
}


@pytest.mark.parametrize("case", sorted(UNGUARDED))
def test_a_plan_that_could_pass_a_rejecting_candidate_is_refused(cli: Cli, root: Path, case: str) -> None:
    old, new, message = UNGUARDED[case]
    plan = root / PLAN
    text = plan.read_text(encoding="utf-8")
    lines = [line for line in text.splitlines(keepends=True) if not line.startswith(old)] if not new else None
    plan.write_text("".join(lines) if lines is not None else text.replace(old, new), encoding="utf-8")
    assert plan.read_text(encoding="utf-8") != text
    store = empty_store(root / DEFAULT_STORE)
    judging = {
        "plan": ["rollout", "plan", str(plan)],
        "gate": ["rollout", "gate", str(plan), "--store", store],
        "promote": ["rollout", "promote", str(plan), "--store", store, "--by", "t"],
        "status": ["rollout", "status", str(plan), "--store", store],
        "report": ["report", "--contract", "review-result", "--store", store, "--out", str(root / "reports")],
    }
    for name, args in judging.items():
        code, out, err = cli(root, *args)
        assert code == 3 and len(err.splitlines()) == 1, (name, out, err)
        assert err.startswith(f"promptops: error: {PLAN}: ") and message in err, (name, err)
    assert load_plan(plan, PLAN).step == 0  # nothing was promoted
    # Routing and a rollback never depend on the SLOs: services and on-call keep working.
    for args in (["rollout", "assign", str(plan), "acme/api#1"], ["rollout", "routes", str(plan)]):
        assert cli(root, *args)[0] == 0
    assert cli(root, "rollout", "rollback", str(plan), "--reason", "incident", "--by", "oncall")[0] == 0


def test_rollout_new_writes_a_plan_that_gates_on_rejected_answers(cli: Cli, root: Path) -> None:
    code, _, err = cli(root, "rollout", "new", "review-result", "--id", "next")
    assert code == 0, err
    path = root / "rollout" / "review-result" / "next.yaml"
    slos = {s.metric: s for s in load_plan(path, "next.yaml").slos}
    assert slos["rejected"].severity == slos["all_findings_dropped"].severity == "critical"
    assert cli(root, "rollout", "plan", str(path))[0] == 0


def _store_commands(root: Path, store: list[str]) -> dict[str, list[str]]:
    plan = str(root / PLAN)
    out = str(root / "out")
    return {
        "gate": ["rollout", "gate", plan, *store],
        "gate --purpose promote": ["rollout", "gate", plan, "--purpose", "promote", *store],
        "status": ["rollout", "status", plan, *store],
        "promote": ["rollout", "promote", plan, "--by", "t", *store],
        "rates": ["rates", "--contract", "review-result", *store],
        "report": ["report", "--contract", "review-result", "--out", out, *store],
        "report --format prom": ["report", "--contract", "review-result", "--format", "prom", "--out", out, *store],
        "export": ["export", str(root / "lake"), *store],
    }


def _typo(root: Path) -> tuple[list[str], str]:
    return ["--store", "/nonexistent/typo.duckdb"], "/nonexistent/typo.duckdb: no diagnostics store here"


def _default(root: Path) -> tuple[list[str], str]:
    return [], f"{DEFAULT_STORE}: no diagnostics store here"


def _empty_directory(root: Path) -> tuple[list[str], str]:
    (root / "not-a-lake").mkdir()
    return ["--store", str(root / "not-a-lake")], "not-a-lake: not a promptops Parquet export"


def _not_a_store(root: Path) -> tuple[list[str], str]:
    (root / "log.duckdb").write_text('{"response_id": "r1"}\n', encoding="utf-8")
    return ["--store", str(root / "log.duckdb")], "log.duckdb: not a diagnostics store"


def _zero_bytes(root: Path) -> tuple[list[str], str]:
    (root / "zero.duckdb").write_bytes(b"")
    return ["--store", str(root / "zero.duckdb")], "zero.duckdb: "


STORES = {
    "a typo": _typo,
    "the default, missing": _default,
    "a directory that is no export": _empty_directory,
    "a file that is no store": _not_a_store,
    "an empty file": _zero_bytes,
}


@pytest.mark.parametrize("where", sorted(STORES))
def test_every_store_command_refuses_a_store_that_is_not_there(cli: Cli, root: Path, where: str) -> None:
    flags, message = STORES[where](root)
    before = (root / PLAN).read_bytes()
    for name, args in _store_commands(root, flags).items():
        if name == "export" and where == "a directory that is no export":
            continue  # export reads a DuckDB file only: a directory is refused as "not a regular file" below
        code, out, err = cli(root, *args)
        assert (code, out) == (3, ""), (name, out, err)
        assert len(err.splitlines()) == 1 and err.startswith("promptops: error: ") and message in err, (name, err)
        assert "internal error" not in err and "Traceback" not in err, (name, err)
    assert (root / PLAN).read_bytes() == before  # no promotion on a store that is not there
    assert not (root / "out").exists() and not (root / "lake").exists()


def test_export_refuses_a_directory_as_its_store(cli: Cli, root: Path) -> None:
    (root / "not-a-store").mkdir()
    code, out, err = cli(root, "export", str(root / "lake"), "--store", str(root / "not-a-store"))
    assert (code, out) == (3, "") and len(err.splitlines()) == 1 and "not-a-store: " in err, err
