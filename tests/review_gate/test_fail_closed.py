"""The review gate fails closed on reviewer outputs: what the contract could not keep is a signal, never silence.

Each case writes a reviewed repository with real reviewer-output files and runs the real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from promptops.cli import run
from tests.helpers import REPO_ROOT

SPEC = "SPEC-SEC-1"
CONSENSUS = f"docs/SPEC-OPS-004-integrated-coder-hooks/evidence/consensus/{SPEC}"
OUTPUT = "reviewer-plan_review-result_security.json"


def _finding(severity: Any, file: str = "app/db.py", **extra: Any) -> dict[str, Any]:
    return {
        "id": "F1",
        "severity": severity,
        "file": file,
        "line": 3,
        "title": "SQL injection",
        "message": "string-built query",
        "category": "security",
        **extra,
    }


def _response(*findings: dict[str, Any], prompt: str = "1.0.0") -> str:
    return json.dumps({"schema_version": "1.0", "prompt_version": prompt, "findings": list(findings)})


def _repo(tmp_path: Path, text: str, name: str = OUTPUT) -> Path:
    repo = tmp_path / "reviewed"
    (repo / CONSENSUS).mkdir(parents=True)
    (repo / CONSENSUS / name).write_text(text)
    return repo


def _gate(repo: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    args = ["--root", str(REPO_ROOT), "review-gate", "--spec", SPEC, "--stage", "plan", "--repo", str(repo)]
    code = run([*args, "--format", "json", *extra])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


def test_a_dropped_critical_finding_blocks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: the only critical finding says "Critical", the parser drops it, the gate must fail."""
    repo = _repo(tmp_path, _response(_finding("Critical")))
    code, result = _gate(repo, capsys, "--changed-file", "app/db.py")
    assert (code, result["verdict"], result["resolution"]) == (2, "Failed", "Escalate")
    (signal,) = result["signals"]
    assert signal["severity"] == "Block" and signal["evidence_path"] == f"{CONSENSUS}/{OUTPUT}"
    assert signal["detail"] == {
        "loss": "dropped_finding",
        "finding_index": 0,
        "finding_id": "F1",
        "severity_as_written": "Critical",
        "reason": "invalid_enum",
        "file": "app/db.py",
    }
    assert result["signal_counts"] == {"blocking": 1, "advisory": 0}


@pytest.mark.parametrize("written", ["CRITICAL", " critical", "cRiTiCaL"])
def test_any_case_of_the_blocking_level_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], written: str
) -> None:
    # a valid critical finding on another file is dropped (file not in the change) whatever its spelling
    repo = _repo(tmp_path, _response(_finding(written, file="elsewhere.py")))
    code, result = _gate(repo, capsys, "--changed-file", "app/db.py")
    assert code == 2
    assert [s["detail"]["severity_as_written"] for s in result["signals"]] == [written]


def test_a_dropped_lower_finding_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path, _response(_finding("High")))
    code, result = _gate(repo, capsys, "--changed-file", "app/db.py")
    assert (code, result["verdict"]) == (0, "PassedWithWarnings")
    (signal,) = result["signals"]
    assert (signal["severity"], signal["detail"]["severity_as_written"]) == ("Advisory", "High")
    assert _gate(repo, capsys, "--changed-file", "app/db.py", "--strict-warnings")[0] == 1


def test_a_rejected_output_with_a_critical_finding_blocks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path, _response(_finding("critical"), prompt="2.0.0"))
    code, result = _gate(repo, capsys, "--changed-file", "app/db.py")
    (signal,) = result["signals"]
    assert (code, signal["severity"], signal["origin"]) == (2, "Block", "System")
    assert signal["detail"]["reason"] == "incompatible_version"
    assert signal["detail"]["blocking_findings"] == 1


def test_a_rejected_output_without_blocking_findings_warns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = _repo(tmp_path, "Here is my review, but I forgot the JSON.")
    code, result = _gate(repo, capsys, "--changed-file", "app/db.py")
    (signal,) = result["signals"]
    assert (code, signal["severity"]) == (0, "Advisory")
    assert "its findings cannot be read" in signal["message"]


def test_outputs_without_changed_files_fail_under_strict_artifacts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = _repo(tmp_path, _response(_finding("critical")))
    code, result = _gate(repo, capsys)
    assert (code, result["verdict"]) == (0, "PassedWithWarnings")
    assert result["signals"][0]["message"].startswith("1 reviewer output not evaluated")
    code, result = _gate(repo, capsys, "--strict-artifacts")
    assert (code, result["verdict"], result["signals"][0]["severity"]) == (2, "Failed", "Block")


@pytest.mark.parametrize("target", ["/dev/zero", "directory"])
def test_an_output_that_is_not_a_regular_file_is_a_tool_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    repo = _repo(tmp_path, "{}", name="notes.txt")
    output = repo / CONSENSUS / OUTPUT
    if target == "directory":
        output.mkdir()
    else:
        output.symlink_to(target)
    args = ["--root", str(REPO_ROOT), "review-gate", "--spec", SPEC, "--stage", "plan", "--repo", str(repo)]
    code = run([*args, "--changed-file", "app/db.py"])
    _, err = capsys.readouterr()
    assert code == 3 and err == f"promptops: error: {CONSENSUS}/{OUTPUT}: not a regular file\n"
