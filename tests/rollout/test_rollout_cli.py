"""Rollouts driven end to end through the real CLI: simulated traffic, a real DuckDB store, the shipped plan.

Times are passed with ``--now``/``--start`` so a rollout of several days runs in seconds; everything else is
what a prompt engineer would run.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cli
from tests.helpers import REPO_ROOT, empty_store

PLAN = "rollout/review-result/review-1.1.yaml"
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def root(full_project: Path) -> Path:
    shutil.copytree(REPO_ROOT / "rollout", full_project / "rollout")
    return full_project


class Rollout:
    """One project's rollout commands, with the store and plan filled in."""

    def __init__(self, cli: Cli, root: Path) -> None:
        self.cli, self.root = cli, root
        self.store = empty_store(root / "diagnostics.duckdb")  # set up before any traffic, as a project does
        self.plan = str(root / PLAN)
        self.logs = 0

    def __call__(self, command: str, *args: str, at: datetime | None = None) -> tuple[int, Any, str]:
        when = ["--now", at.isoformat()] if at is not None else []
        code, out, err = self.cli(self.root, "rollout", command, self.plan, *args, *when, "--format", "json")
        return code, json.loads(out) if out.strip() else None, err

    def gate(self, at: datetime, *args: str) -> tuple[int, Any, str]:
        return self("gate", "--store", self.store, *args, at=at)

    def promote(self, at: datetime, *args: str) -> tuple[int, Any, str]:
        return self("promote", "--store", self.store, "--by", "tester", *args, at=at)

    def traffic(self, start: datetime, responses: int, *args: str, hours: float = 30) -> None:
        """Simulate ``responses`` records over ``hours`` from ``start`` and ingest them."""
        self.logs += 1
        log = self.root / "logs" / f"day-{self.logs}.jsonl"
        code, out, err = self.cli(
            self.root,
            "rollout",
            "simulate",
            self.plan,
            "--responses",
            str(responses),
            "--start",
            start.isoformat(),
            "--hours",
            str(hours),
            "--seed",
            str(self.logs),
            "--out",
            str(log),
            *args,
        )
        assert (code, err) == (0, ""), err
        code, out, err = self.cli(self.root, "ingest", str(log), "--store", self.store, "--format", "json")
        assert code == 0, err
        assert json.loads(out)["inserted"] == responses


@pytest.fixture
def rollout(cli: Cli, root: Path) -> Rollout:
    return Rollout(cli, root)


def _metric(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in result["metrics"] if m["metric"] == name)


@pytest.mark.slow  # a whole rollout
def test_a_good_candidate_goes_from_parser_stage_to_full_traffic(rollout: Rollout) -> None:
    code, result, _ = rollout.gate(T0)  # an empty store: the parser stage needs no traffic
    assert (code, result["verdict"], result["parser"]) == (0, "Passed", {"ready": True, "problems": []})
    assert rollout.promote(T0)[0] == 0

    code, result, _ = rollout.gate(T0)  # monitoring a step with nothing in it yet: skipped
    assert (code, result["verdict"], result["reason"]) == (0, "Skipped", "NO_DATA")
    assert rollout.gate(T0, "--strict-artifacts")[0] == 2
    code, result, _ = rollout.gate(T0, "--purpose", "promote")  # deciding to move on with nothing: hold
    assert (code, result["verdict"], result["reason"]) == (2, "Escalate", "NO_DATA")
    refused = rollout.promote(T0)
    assert refused[0] == 2 and refused[1]["verdict"] == "Escalate"
    assert "promotion refused: Escalate: Hold: no responses of rollout review-1.1 in this step yet" in refused[2]

    rollout.traffic(T0, 24_000)
    early = T0 + timedelta(hours=12)  # before the canary's 24 hours
    code, result, _ = rollout.gate(early)
    assert (code, result["verdict"], result["reason"]) == (0, "PassedWithWarnings", "INSUFFICIENT_SAMPLE")
    assert rollout.gate(early, "--strict-warnings")[0] == 1
    code, result, _ = rollout.gate(early, "--purpose", "promote")
    assert (code, result["verdict"]) == (2, "Escalate")
    # A replay at 12h counts only the responses logged by then: the canary lacks both responses and time.
    assert result["sentence"].startswith("Hold: the candidate has 498 of the 500 responses step canary needs")
    assert 9_000 < sum(result["window"]["responses"].values()) < 10_500
    early_looks = _metric(result, "dropped_finding")["looks"]

    day2 = T0 + timedelta(hours=31)
    code, result, _ = rollout.gate(day2, "--purpose", "promote")
    assert (code, result["verdict"], result["reason"]) == (0, "Passed", None), result["sentence"]
    dropped = _metric(result, "dropped_finding")
    candidate = dropped["arms"]["candidate"]
    assert candidate["n"] >= 900 and candidate["x"] > 0
    assert candidate["lower"] < candidate["rate"] < candidate["upper"] <= 0.03
    assert dropped["difference"]["upper"] <= 0.02 and dropped["status"] == "pass"
    # Always-valid by default; one look per hour of the step with responses, then now: the replay at 12h saw
    # the same first looks with the same bounds.
    assert result["statistics"] == {"method": "always-valid", "valid_for": "every look", "alpha": 0.05, "looks": 31}
    assert len(dropped["looks"]) == 31 and dropped["looks"][-1]["at"] == day2.isoformat()
    assert early_looks[:-1] == dropped["looks"][: len(early_looks) - 1] and len(early_looks) == 12
    assert 0.04 < result["srm"]["observed_candidate_share"] < 0.06 and result["srm"]["p_value"] > 0.001
    code, moved, _ = rollout.promote(day2)
    assert (code, moved["step"], moved["weight"]) == (0, 2, 0.25)

    rollout.traffic(day2, 12_000)
    day4 = day2 + timedelta(hours=31)
    code, result, _ = rollout.gate(day4)
    assert (code, result["verdict"]) == (0, "Passed"), result["sentence"]
    # The window starts at the step's promotion: the canary's responses are not counted again.
    assert sum(result["window"]["responses"].values()) == 12_000
    assert rollout.promote(day4)[0] == 0

    code, status, _ = rollout("status", "--store", rollout.store, at=day4)
    assert (status["step"], status["step_name"], status["weights"]) == (3, "full", {"candidate": 1.0, "baseline": 0.0})
    assert [(t["action"], t["from_step"], t["to_step"], t["verdict"], t["by"]) for t in status["history"]] == [
        ("promote", 0, 1, "Passed", "tester"),
        ("promote", 1, 2, "Passed", "tester"),
        ("promote", 2, 3, "Passed", "tester"),
    ]
    assert status["legacy"] is None
    code, status, _ = rollout("status", "--store", rollout.store, at=day4 + timedelta(days=15))
    assert "the parser floor can be raised to schema 1.1 in the next major" in status["legacy"]
    assert rollout.promote(day4)[0] == 2  # nowhere further to go

    text = (rollout.root / PLAN).read_text(encoding="utf-8")
    assert text.startswith("# Staged rollout of prompt 1.1.1")  # comments survive the history appends
    assert "unit: pr          # a pull request keeps its arm" in text


@pytest.mark.slow  # simulated traffic through the CLI
def test_a_regressing_candidate_fails_the_gate_and_can_only_be_forced_on(rollout: Rollout) -> None:
    assert rollout.promote(T0)[0] == 0
    rollout.traffic(T0, 24_000, "--candidate-profile", "regression")
    day2 = T0 + timedelta(hours=31)
    code, result, _ = rollout.gate(day2)
    assert (code, result["verdict"], result["reason"]) == (2, "Failed", "SLO_BREACH")
    candidate = _metric(result, "dropped_finding")["arms"]["candidate"]
    assert candidate["lower"] > 0.03
    assert result["sentence"].startswith("The candidate's dropped finding rate is at least")

    code, text_out, _ = rollout.cli(
        rollout.root, "rollout", "gate", rollout.plan, "--store", rollout.store, "--now", day2.isoformat()
    )
    assert code == 2 and text_out.splitlines()[0].endswith("Failed [SLO_BREACH]")

    code, result, err = rollout.promote(day2)
    assert code == 2 and "promotion refused: Failed" in err
    assert rollout.cli(rollout.root, "rollout", "promote", rollout.plan, "--force")[0] == 3  # needs --reason
    code, moved, _ = rollout.promote(day2, "--force", "--reason", "drops are a logging bug, fixed in #812")
    assert (code, moved["step"]) == (0, 2)

    code, rolled, _ = rollout("rollback", "--reason", "drops are real after all", "--by", "oncall", at=day2)
    assert (code, rolled["weight"]) == (0, 0.0)
    code, status, _ = rollout("status", "--store", rollout.store, at=day2)
    assert status["rolled_back"] and status["weights"]["candidate"] == 0.0
    forced, back = status["history"][-2:]
    assert (forced["forced"], forced["verdict"], forced["reason"]) == (
        True,
        "Failed",
        "drops are a logging bug, fixed in #812",
    )
    assert (back["action"], back["by"], back["reason"]) == ("rollback", "oncall", "drops are real after all")
    code, routed, _ = rollout.cli(rollout.root, "rollout", "assign", rollout.plan, "acme/api#1", "--format", "json")
    assert json.loads(routed)["arm"] == "baseline"


@pytest.mark.slow  # simulated traffic through the CLI
def test_a_skewed_split_escalates_as_sample_ratio_mismatch(rollout: Rollout) -> None:
    assert rollout.promote(T0)[0] == 0
    rollout.traffic(T0, 20_000, "--weight", "0.08")  # the service routes 8%, the plan says 5%
    code, result, _ = rollout.gate(T0 + timedelta(hours=31))
    assert (code, result["verdict"], result["reason"]) == (2, "Escalate", "SRM")
    assert result["srm"]["p_value"] < 0.001 and result["srm"]["weight"] == 0.05


def test_the_parser_stage_fails_until_the_candidate_is_released(rollout: Rollout) -> None:
    plan = rollout.root / PLAN
    plan.write_text(
        plan.read_text(encoding="utf-8").replace('"1.1.1", schema_version: "1.1"', '"1.2.0", schema_version: "1.2"'),
        encoding="utf-8",
    )
    code, result, _ = rollout.gate(T0)
    assert (code, result["verdict"], result["reason"]) == (2, "Failed", "PARSER_NOT_READY")
    assert result["parser"]["problems"] == ["the candidate prompt 1.2.0 is not released"]
    assert rollout.promote(T0)[0] == 2


def test_candidate_responses_rejected_for_their_version_mean_the_parser_is_not_ready(rollout: Rollout) -> None:
    assert rollout.promote(T0)[0] == 0
    # Responses claiming a schema from another major line are rejected as incompatible versions.
    log = rollout.root / "logs" / "bad.jsonl"
    log.parent.mkdir()
    records = []
    for i in range(3):
        raw = json.dumps({"schema_version": "2.0", "prompt_version": "1.1.1", "findings": []})
        records.append(
            json.dumps(
                {
                    "response_id": f"r{i}",
                    "ts": T0.isoformat(),
                    "contract": "review-result",
                    "rollout_id": "review-1.1",
                    "arm": "candidate",
                    "unit": "acme/api#1",
                    "changed_files": [],
                    "raw": raw,
                }
            )
        )
    log.write_text("\n".join(records) + "\n", encoding="utf-8")
    assert rollout.cli(rollout.root, "ingest", str(log), "--store", rollout.store)[0] == 0
    code, result, _ = rollout.gate(T0 + timedelta(hours=1), "--step", "0")
    assert (code, result["verdict"], result["reason"], result["step"]) == (2, "Failed", "PARSER_NOT_READY", 0)
    assert result["parser"]["problems"] == ["3 candidate responses were rejected as incompatible versions"]


def test_broken_plans_and_stores_exit_3_with_one_line(rollout: Rollout) -> None:
    store = Path(rollout.store)
    store.write_bytes(b"this is not a duckdb file" * 100)
    code, _, err = rollout.gate(T0)
    assert code == 3 and len(err.splitlines()) == 1 and "diagnostics.duckdb" in err
    store.unlink()
    plan = rollout.root / PLAN
    plan.write_text(plan.read_text(encoding="utf-8").replace("alpha: 0.05", "alpha: 5"), encoding="utf-8")
    code, _, err = rollout.gate(T0)
    assert code == 3
    assert err == (
        "promptops: error: rollout/review-result/review-1.1.yaml: line 10: alpha: must be a number from 1e-06 up to, "
        "not including, 0.5\n"
    )
    assert rollout.gate(T0, "--step", "7")[0] == 3
