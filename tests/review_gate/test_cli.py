"""The command line around the library: tool failures (exit 3), text output, stderr, and stable references."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from promptops.cli import run
from promptops.review_gate import (
    EvidenceContext,
    ProviderReport,
    ReviewPolicy,
    ReviewRequest,
    ReviewSignal,
    Role,
    Stage,
    review,
)
from promptops.review_gate.signals import Origin, Severity, SignalKind
from tests.review_gate.cases import BY_NAME, FIXTURES, SPEC


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = run(args)
    out, err = capsys.readouterr()
    return code, out, err


# --- tool and infrastructure failures: exit 3, one line on stderr, no result ----------------------


@pytest.mark.parametrize(
    ("fixture", "extra", "message"),
    [
        ("bad_config_key", [], "tool.promptops.review-gate.consensus_directory: unknown key"),
        ("bad_config_path", [], "[tool.promptops.review-gate]: evidence_root: must be a repo-relative path"),
        (
            "consensus_not_dir",
            [],
            f"evidence/consensus/{SPEC}: cannot list consensus evidence: ",
        ),
        ("does_not_exist", [], "does_not_exist does not exist"),
        ("clean", ["--spec", "../clean"], "invalid SPEC-ID '../clean'"),
        ("clean", ["--stage", "Review"], "'Review' is not one of"),
    ],
)
def test_tool_failures_exit_3_with_one_line(
    fixture: str, extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "review-gate",
        "--spec",
        SPEC,
        "--stage",
        "Plan",
        "--repo",
        str(FIXTURES / fixture),
        "--format",
        "json",
    ]
    code, out, err = _run(args + extra, capsys)
    assert code == 3
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith("promptops: error: ")
    assert message in err


def test_malformed_pyproject_is_a_tool_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Written here, not committed: a broken pyproject.toml in the tree would break ruff for everyone.
    shutil.copytree(FIXTURES / "clean", tmp_path, dirs_exist_ok=True)
    (tmp_path / "pyproject.toml").write_text("[tool.promptops.review-gate\nevidence_root = 'x'\n")
    code, out, err = _run(["review-gate", "--spec", SPEC, "--stage", "Plan", "--repo", str(tmp_path)], capsys)
    assert (code, out) == (3, "")
    assert err == (
        f"promptops: error: {tmp_path.as_posix()}/pyproject.toml: invalid TOML: "
        "Expected ']' at the end of a table declaration (at line 1, column 28)\n"
    )


def test_a_repo_that_is_a_file_is_a_tool_failure(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["review-gate", "--spec", SPEC, "--stage", "Plan", "--repo", __file__], capsys)
    assert (code, out) == (3, "")
    assert "is a file" in err


# --- text output ----------------------------------------------------------------------------------


def test_text_failed_names_verdict_reason_and_each_signal(capsys: pytest.CaptureFixture[str]) -> None:
    case = BY_NAME["conflict_and_error"]
    code, out, err = _run(["review-gate", "--spec", SPEC, "--stage", "plan", "--repo", str(case.repo)], capsys)
    lines = out.splitlines()
    assert code == 2
    assert err == ""
    assert lines[0] == (
        f"Failed ({SPEC} Plan at AfterPlan): 1 blocking signal requires human review; 1 advisory signal also raised."
    )
    assert lines[1] == "signals:"
    assert lines[2].startswith("  BLOCK    Contradiction from Role:Implementer agent=code-implementer: plan.md and")
    assert lines[3].startswith("  ADVISORY Other from System agent=code-implementer: partial output: 2 of 3 sections")
    assert lines[-1] == "exit code: 2"


def test_text_unlock_shows_the_alias_message(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(["review-gate", "--spec", SPEC, "--stage", "Unlock", "--repo", str(FIXTURES / "audit")], capsys)
    assert out.splitlines()[:2] == [
        f"Passed ({SPEC} Unlock at BeforeUnlock): The review evidence raised no signals.",
        "note: Reviewing Audit output",
    ]


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_skipped_warns_on_stderr_in_both_formats(output_format: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = [
        "review-gate",
        "--spec",
        SPEC,
        "--stage",
        "Plan",
        "--repo",
        str(FIXTURES / "missing"),
        "--strict-artifacts",
        "--format",
        output_format,
    ]
    code, out, err = _run(args, capsys)
    assert code == 2
    assert err == (
        "promptops: warning: review skipped: No consensus artifacts match spec-plan_*.json in "
        f"docs/SPEC-OPS-004-integrated-coder-hooks/evidence/consensus/{SPEC} "
        "(the directory does not exist).\n"
    )
    assert err not in out  # stdout stays the result alone (JSON stays parseable)


def test_text_lists_telemetry_without_changing_the_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(["review-gate", "--spec", SPEC, "--stage", "Plan", "--repo", str(FIXTURES / "telemetry")], capsys)
    assert out.splitlines()[0].startswith("Passed ")
    assert (
        "telemetry: 2 file(s) in docs/SPEC-OPS-004-integrated-coder-hooks/evidence/commands/SPEC-KIT-100, "
        "1 unusable" in out
    )


def test_text_escapes_control_characters_from_evidence(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    evidence = tmp_path / "docs/SPEC-OPS-004-integrated-coder-hooks/evidence/consensus" / SPEC
    evidence.mkdir(parents=True)
    (evidence / "spec-plan_a.json").write_text(json.dumps({"consensus": {"conflicts": ["line1\nline2\x1b[31m"]}}))
    _, out, _ = _run(["review-gate", "--spec", SPEC, "--stage", "Plan", "--repo", str(tmp_path)], capsys)
    assert "line1\\nline2\\x1b[31m" in out
    assert "\x1b" not in out


# --- telemetry never changes the resolution -------------------------------------------------------


def _without_telemetry(result: dict[str, object]) -> dict[str, object]:
    trimmed = dict(result)
    trimmed.pop("telemetry")
    refs = dict(trimmed.pop("evidence_refs"))  # type: ignore[call-overload]
    refs.pop("telemetry_files")
    trimmed["evidence_refs"] = refs
    return trimmed


@pytest.mark.parametrize("flags", [(), ("--strict-warnings", "--strict-artifacts")])
def test_telemetry_good_or_malformed_leaves_the_result_alone(flags: tuple[str, ...]) -> None:
    policy = ReviewPolicy(strict_warnings=bool(flags), strict_artifacts=bool(flags))
    with_telemetry = review(ReviewRequest(FIXTURES / "telemetry", SPEC, Stage.PLAN, policy))
    without = review(ReviewRequest(FIXTURES / "clean", SPEC, Stage.PLAN, policy))
    assert {f.status for f in with_telemetry.telemetry.files} == {"ok", "malformed"}  # type: ignore[union-attr]
    assert _without_telemetry(with_telemetry.to_dict()) == _without_telemetry(without.to_dict())


def test_unreadable_telemetry_is_listed_not_fatal(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "clean", tmp_path, dirs_exist_ok=True)
    commands = tmp_path / "docs/SPEC-OPS-004-integrated-coder-hooks/evidence/commands" / SPEC
    (commands / "spec-plan_telemetry_dir.json").mkdir(parents=True)  # a directory: not a telemetry file
    (commands / "a_telemetry_b.json").write_bytes(b"\xff\xfe")
    (commands / "c_telemetry_d.json").write_text("[1, 2]")
    result = review(ReviewRequest(tmp_path, SPEC, Stage.PLAN))
    assert result.verdict.value == "Passed"
    assert result.telemetry is not None
    assert [(f.path.rsplit("/", 1)[1], f.status, f.detail) for f in result.telemetry.files] == [
        ("a_telemetry_b.json", "malformed", "invalid UTF-8 at byte 0"),
        ("c_telemetry_d.json", "malformed", "expected a JSON object at the top level"),
    ]


# --- repo-relative: the same bytes however the repo is named --------------------------------------


def test_json_is_the_same_for_relative_and_absolute_repo_paths(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    case = BY_NAME["conflict_and_error"]
    _, absolute, _ = _run(case.cli_args(repo=str(case.repo)), capsys)
    monkeypatch.chdir(case.repo.parent)
    _, relative, _ = _run(case.cli_args(repo=case.fixture), capsys)
    _, dotted, _ = _run(case.cli_args(repo=os.path.join(".", case.fixture, "")), capsys)
    assert absolute == relative == dotted
    assert absolute == case.golden.read_text(encoding="utf-8")


# --- the extension point for part 4 (reviewer outputs beside the consensus files) -----------------


class _ReviewerOutputs:
    """A real provider: every ``reviewer-*.json`` beside the consensus files with ``"severity": "critical"``
    is a blocking finding (a stand-in for the planned contract merge)."""

    def __call__(self, context: EvidenceContext) -> ProviderReport:
        directory = context.path(context.consensus_dir)
        signals: list[ReviewSignal] = []
        artifacts: list[str] = []
        for path in sorted(directory.glob("reviewer-*.json")):
            relative = f"{context.consensus_dir}/{path.name}"
            artifacts.append(relative)
            for finding in json.loads(path.read_text())["findings"]:
                blocking = finding["severity"] == "critical"
                signals.append(
                    ReviewSignal(
                        kind=SignalKind.CONTRADICTION if blocking else SignalKind.OTHER,
                        severity=Severity.BLOCK if blocking else Severity.ADVISORY,
                        origin=Origin.ROLE,
                        role=Role.VALIDATOR,
                        message=finding["title"],
                        evidence_path=relative,
                    )
                )
        return ProviderReport(tuple(signals), tuple(artifacts))


def _with_reviewer_output(tmp_path: Path, fixture: str, severity: str) -> Path:
    shutil.copytree(FIXTURES / fixture, tmp_path, dirs_exist_ok=True)
    directory = tmp_path / "docs/SPEC-OPS-004-integrated-coder-hooks/evidence/consensus" / SPEC
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "reviewer-1.json").write_text(json.dumps({"findings": [{"severity": severity, "title": "t"}]}))
    return tmp_path


def test_a_provider_blocking_signal_escalates_a_clean_consensus(tmp_path: Path) -> None:
    repo = _with_reviewer_output(tmp_path, "clean", "critical")
    result = review(ReviewRequest(repo, SPEC, Stage.PLAN, signal_providers=(_ReviewerOutputs(),)))
    assert (result.verdict.value, result.exit_code, result.artifacts_collected) == ("Failed", 2, 2)
    assert result.evidence_refs.provider_artifacts == (
        f"docs/SPEC-OPS-004-integrated-coder-hooks/evidence/consensus/{SPEC}/reviewer-1.json",
    )


def test_provider_artifacts_alone_are_reviewed_not_skipped(tmp_path: Path) -> None:
    repo = _with_reviewer_output(tmp_path, "missing", "minor")
    result = review(ReviewRequest(repo, SPEC, Stage.PLAN, signal_providers=(_ReviewerOutputs(),)))
    assert (result.verdict.value, result.exit_code, result.artifacts_collected) == (
        "PassedWithWarnings",
        0,
        1,
    )


def test_provider_artifacts_must_be_repo_relative() -> None:
    with pytest.raises(ValueError, match="repo-relative"):
        ProviderReport(artifacts=("/abs/reviewer-1.json",))
