"""Issue 9 part 4: promptops reviewer outputs beside the consensus files are validated, merged and gated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from promptops import list_contracts, load_contract
from promptops.cli import run
from promptops.parsing import ChangedFiles
from promptops.review_gate import ReviewPolicy, ReviewRequest, Stage, review
from promptops.review_gate.reviewers import ReviewerOutputs
from tests.helpers import REPO_ROOT
from tests.review_gate.cases import SPEC

CONSENSUS = f"docs/SPEC-OPS-004-integrated-coder-hooks/evidence/consensus/{SPEC}"
CHANGED = ["src/auth/login.py", "src/api/users.py"]


def _crf(severity: str, confidence: int, line: int = 12, title: str = "Token compared with ==") -> dict[str, Any]:
    return {
        "title": title,
        "severity": severity,
        "file": "src/auth/login.py",
        "line": line,
        "why_it_matters": "A timing side channel leaks the token.",
        "autofix_class": "safe_auto",
        "owner": "review-fixer",
        "requires_verification": True,
        "confidence": confidence,
        "evidence": ["if token == expected:"],
        "pre_existing": False,
    }


def _crf_output(reviewer: str, findings: list[dict[str, Any]]) -> str:
    return json.dumps({"reviewer": reviewer, "findings": findings, "residual_risks": [], "testing_gaps": []})


def _repo(tmp_path: Path, files: dict[str, str], consensus: dict[str, Any] | None = None) -> Path:
    repo = tmp_path / "reviewed"
    directory = repo / CONSENSUS
    directory.mkdir(parents=True)
    if consensus is not None:
        (directory / "spec-plan_claude_20251120.json").write_text(json.dumps(consensus))
    for name, text in files.items():
        (directory / name).write_text(text)
    return repo


def _gate(repo: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any], str]:
    args = ["--root", str(REPO_ROOT), "review-gate", "--spec", SPEC, "--stage", "Plan", "--repo", str(repo)]
    code = run([*args, "--format", "json", *extra])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


CLEAN_CONSENSUS = {"agent": "claude", "consensus": {"conflicts": [], "synthesis_status": "ok"}}
CHANGED_ARGS = [arg for path in CHANGED for arg in ("--changed-file", path)]


def test_a_critical_high_confidence_finding_blocks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(
        tmp_path,
        {"reviewer-plan_code-review-findings_security.json": _crf_output("security", [_crf("P0", 100)])},
        CLEAN_CONSENSUS,
    )
    code, result, _ = _gate(repo, capsys, *CHANGED_ARGS)
    assert (code, result["verdict"]) == (2, "Failed")
    (signal,) = [s for s in result["signals"] if s["evidence_path"].endswith("security.json")]
    assert (signal["severity"], signal["origin"], signal["agent"]) == ("Block", "Role", "security")
    assert signal["message"].startswith("critical (confidence 1.00) at src/auth/login.py:12: Token compared with ==")
    assert f"{CONSENSUS}/reviewer-plan_code-review-findings_security.json" in json.dumps(result["evidence_refs"])


@pytest.mark.parametrize(
    ("severity", "confidence"), [("P0", 50), ("P1", 100), ("P2", 75)], ids=["critical-but-unsure", "high", "medium"]
)
def test_other_findings_are_advisory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], severity: str, confidence: int
) -> None:
    repo = _repo(
        tmp_path,
        {"reviewer-plan_code-review-findings_perf.json": _crf_output("perf", [_crf(severity, confidence)])},
        CLEAN_CONSENSUS,
    )
    code, result, _ = _gate(repo, capsys, *CHANGED_ARGS)
    assert (code, result["verdict"]) == (0, "PassedWithWarnings")
    assert [s["severity"] for s in result["signals"]] == ["Advisory"]
    assert _gate(repo, capsys, *CHANGED_ARGS, "--strict-warnings")[0] == 1


def test_duplicates_across_contracts_merge_into_one_signal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    finding_004 = {
        "id": "h1",
        "reviewer": "security-reviewer",
        "severity": "critical",
        "file": "src/auth/login.py",
        "line": 12,
        "description": "Token compared with == leaks timing",
        "confidence": 0.9,
    }
    repo = _repo(
        tmp_path,
        {
            "reviewer-plan_code-review-findings_security.json": _crf_output("security", [_crf("P0", 100)]),
            "reviewer-plan_reviewer-finding_sec2.json": json.dumps({"findings": [finding_004]}),
            "reviewer-tasks_reviewer-finding_other-stage.json": json.dumps({"findings": [finding_004]}),
        },
        CLEAN_CONSENSUS,
    )
    code, result, _ = _gate(repo, capsys, *CHANGED_ARGS)
    blocking = [s for s in result["signals"] if s["severity"] == "Block"]
    assert code == 2 and len(blocking) == 1
    assert "security" in blocking[0]["message"] and "security-reviewer" in blocking[0]["message"]
    assert result["artifacts_collected"] == 3  # consensus + two plan outputs; the tasks output is another stage


def test_outputs_alone_are_reviewed_not_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path, {"reviewer-plan_code-review-findings_a.json": _crf_output("a", [])})
    code, result, _ = _gate(repo, capsys, *CHANGED_ARGS)
    assert (code, result["verdict"], result["artifacts_collected"]) == (0, "Passed", 1)


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            {"reviewer-plan_code-review-findings_a.json": "not json"},
            "rejected by contract code-review-findings (invalid_json)",
        ),
        ({"reviewer-plan_no-such-contract_a.json": "{}"}, "unknown contract 'no-such-contract'"),
        ({"reviewer-plan_code-review-findings.nope_a.json": "{}"}, "has no tier 'nope'"),
    ],
)
def test_unusable_outputs_are_advisory_system_signals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str], message: str
) -> None:
    code, result, _ = _gate(_repo(tmp_path, files, CLEAN_CONSENSUS), capsys, *CHANGED_ARGS)
    (signal,) = result["signals"]
    assert (code, signal["severity"], signal["origin"]) == (0, "Advisory", "System")
    assert message in signal["message"]


def test_without_changed_files_outputs_are_reported_not_guessed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(
        tmp_path, {"reviewer-plan_code-review-findings_s.json": _crf_output("s", [_crf("P0", 100)])}, CLEAN_CONSENSUS
    )
    code, result, _ = _gate(repo, capsys)
    (signal,) = result["signals"]
    assert code == 0 and signal["severity"] == "Advisory" and "not evaluated: no changed files" in signal["message"]


def test_merge_tier_outputs_and_block_threshold(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    compact = {k: v for k, v in _crf("P0", 75).items() if k not in ("why_it_matters", "evidence")}
    repo = _repo(
        tmp_path, {"reviewer-plan_code-review-findings.merge_s.json": _crf_output("s", [compact])}, CLEAN_CONSENSUS
    )
    assert _gate(repo, capsys, *CHANGED_ARGS)[0] == 2
    assert _gate(repo, capsys, *CHANGED_ARGS, "--block-confidence", "0.8")[0] == 0


def test_library_and_cli_give_identical_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(
        tmp_path,
        {"reviewer-plan_code-review-findings_security.json": _crf_output("security", [_crf("P0", 100)])},
        CLEAN_CONSENSUS,
    )
    code = run(
        [
            "--root",
            str(REPO_ROOT),
            "review-gate",
            "--spec",
            SPEC,
            "--stage",
            "Plan",
            "--repo",
            str(repo),
            "--format",
            "json",
            *CHANGED_ARGS,
        ]
    )
    cli_json, _ = capsys.readouterr()
    contracts = {name: load_contract(REPO_ROOT, name) for name in list_contracts(REPO_ROOT)}
    provider = ReviewerOutputs(contracts, ChangedFiles(CHANGED))
    library = review(ReviewRequest(repo, SPEC, Stage.parse("Plan"), ReviewPolicy(), signal_providers=(provider,)))
    assert code == library.exit_code == 2
    assert cli_json == library.dumps() + "\n"


@pytest.mark.parametrize("tier", ["", ".merge"], ids=["full", "merge-tier"])
def test_a_contract_named_with_a_dot_reads_its_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tier: str
) -> None:
    """`acme.crf` is a contract of its own (names may hold '.'); `acme.crf.merge` is its merge tier."""
    project = tmp_path / "project"
    assert run(["--root", str(project), "contract", "new", "acme.crf", "--from", "code-review-findings"]) == 0
    capsys.readouterr()
    finding = _crf("P0", 100)
    if tier:
        finding = {k: v for k, v in finding.items() if k not in ("why_it_matters", "evidence")}
    name = f"reviewer-plan_acme.crf{tier}_security.json"
    repo = _repo(tmp_path, {name: _crf_output("security", [finding])}, CLEAN_CONSENSUS)
    args = ["--root", str(project), "review-gate", "--spec", SPEC, "--stage", "Plan", "--repo", str(repo)]
    code = run([*args, "--format", "json", *CHANGED_ARGS])
    result = json.loads(capsys.readouterr().out)
    assert (code, result["verdict"]) == (2, "Failed")
    (signal,) = [s for s in result["signals"] if s["evidence_path"].endswith(name)]
    assert (signal["severity"], signal["origin"]) == ("Block", "Role"), signal
