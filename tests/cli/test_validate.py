"""``promptops validate`` end to end: the real CLI in a subprocess, real files, a real git repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import CHANGED, REPO_ROOT, finding, response


def run(*args: str, stdin: str | None = None, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "promptops", *args], input=stdin, capture_output=True, text=True, cwd=cwd, check=False
    )


def validate_json(*args: str, stdin: str | None = None) -> tuple[int, dict[str, Any]]:
    done = run("validate", "--contract", "review-result", "--format", "json", *args, stdin=stdin)
    assert done.stderr == "", done.stderr
    return done.returncode, json.loads(done.stdout)


CHANGED_ARGS = [arg for path in CHANGED for arg in ("--changed-file", path)]


def test_accepted_response_prints_the_design_interface(tmp_path: Path) -> None:
    path = tmp_path / "response.json"
    path.write_text(json.dumps(response([finding(1, line="7"), finding(2, file="elsewhere.py")])))
    code, out = validate_json(*CHANGED_ARGS, str(path))
    assert code == 0
    assert list(out) == ["outcome", "reason", "result", "diagnostics"]
    assert (out["outcome"], out["reason"]) == ("accepted", None)
    assert [f["line"] for f in out["result"]["findings"]] == [7]
    assert [list(d) for d in out["diagnostics"]] == [
        ["code", "level", "path", "finding_index", "finding_id", "message"]
    ] * 2
    assert [d["code"] for d in out["diagnostics"]] == ["converted_numeric_string", "file_not_in_changed_files"]


def test_stdin_and_rejection_exit_two() -> None:
    code, out = validate_json(*CHANGED_ARGS, "-", stdin=json.dumps(response(schema_version="2.0")))
    assert code == 2
    assert (out["outcome"], out["reason"], out["result"]) == ("rejected", "incompatible_version", None)


def test_strict_warnings_exit_one_only_with_warnings() -> None:
    with_drop = json.dumps(response([finding(1), finding(2, severity="x")]))
    assert validate_json(*CHANGED_ARGS, "--strict-warnings", stdin=with_drop)[0] == 1
    coerced_only = json.dumps(response([finding(1, line="9")]))
    assert validate_json(*CHANGED_ARGS, "--strict-warnings", stdin=coerced_only)[0] == 0  # coercions are info
    assert validate_json(*CHANGED_ARGS, stdin=with_drop)[0] == 0


def test_every_finding_dropped_is_said_on_the_verdict_line_and_exits_one_under_strict_warnings(tmp_path: Path) -> None:
    all_dropped = json.dumps(response([finding(1, severity="x"), finding(2, file="elsewhere.py")]))
    done = run("validate", "--contract", "review-result", *CHANGED_ARGS, "-", stdin=all_dropped)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("accepted, but every finding was dropped: 0 of 2 findings kept")
    assert "all_findings_dropped" in done.stdout
    strict = run("validate", "--contract", "review-result", "--strict-warnings", *CHANGED_ARGS, "-", stdin=all_dropped)
    assert strict.returncode == 1
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps({"raw": all_dropped, "changed_files": list(CHANGED)}) + "\n")
    listed = run("validate", "--contract", "review-result", "--batch", str(batch))
    assert listed.stdout.splitlines()[0].startswith(
        "line 1: accepted, but every finding was dropped"
    )  # no id: its line


def test_policy_flags() -> None:
    drifted = json.dumps(response(prompt_version="1.0.2"))
    assert validate_json(*CHANGED_ARGS, stdin=drifted)[0] == 2
    assert validate_json(*CHANGED_ARGS, "--allow-prompt-patch-drift", stdin=drifted)[0] == 0
    assert validate_json(*CHANGED_ARGS, "--prompt-version", "1.0.2", stdin=drifted)[0] == 0
    no_schema = run(
        "validate", "--contract", "review-result", *CHANGED_ARGS, "--schema-version", "1.3", "-", stdin="{}"
    )
    assert no_schema.returncode == 3
    assert no_schema.stderr == (
        "promptops: error: contract review-result: schema floor 1.3 has no schema (known: 1.0, 1.1)\n"
    )


def test_changed_files_from_a_file(tmp_path: Path) -> None:
    listing = tmp_path / "changed.txt"
    listing.write_text("src/api/users.py\n\n  src/auth/login.py  \n")
    code, out = validate_json("--changed-files-from", str(listing), stdin=json.dumps(response()))
    assert code == 0 and len(out["result"]["findings"]) == 2


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_changed_files_from_a_real_git_diff(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "README").write_text("x\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    _git(repo, "checkout", "-qb", "feature")
    (repo / "src" / "api").mkdir(parents=True)
    (repo / "src" / "api" / "users.py").write_text("print(1)\n")
    (repo / "odd name.py").write_text("x\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "change")
    body = json.dumps(response([finding(1), finding(2, file="odd name.py"), finding(3, file="src/auth/login.py")]))
    done = run(
        "validate",
        "--contract",
        "review-result",
        "--format",
        "json",
        "--git-diff",
        "main...feature",
        "--repo",
        str(repo),
        "-",
        stdin=body,
    )
    out = json.loads(done.stdout)
    assert done.returncode == 0
    assert [f["file"] for f in out["result"]["findings"]] == ["src/api/users.py", "odd name.py"]
    bad = run(
        "validate", "--contract", "review-result", "--git-diff", "main...nope", "--repo", str(repo), "-", stdin=body
    )
    assert bad.returncode == 3 and bad.stdout == ""
    assert bad.stderr.startswith("promptops: error: git diff main...nope failed") and bad.stderr.count("\n") == 1


def test_text_output_says_what_was_dropped_and_coerced() -> None:
    body = json.dumps(response([finding(1, line=" 7"), finding(2, severity="High")]))
    done = run("validate", "--contract", "review-result", *CHANGED_ARGS, "-", stdin=body)
    lines = done.stdout.splitlines()
    assert done.returncode == 0
    assert lines[0] == "accepted: 1 of 2 findings kept (schema 1.0, prompt 1.0.0)"
    assert any(line.startswith("  coerced findings[0].line (F1): converted_numeric_string") for line in lines)
    assert any(line.startswith("  dropped findings[1].severity (F2): invalid_enum") for line in lines)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["validate", "--contract", "review-result", "-"], "no changed files"),
        (["validate", "--contract", "nope", "--changed-file", "a", "-"], "no such contract 'nope'"),
        (["validate", "--changed-file", "a", "-"], "Missing option '--contract'"),
        (["validate", "--contract", "review-result", "--changed-file", "a", "/no/such/file.json"], "No such file"),
        (
            ["validate", "--contract", "review-result", "--changed-file", "a", "--schema-version", "one", "-"],
            "not MAJOR.MINOR",
        ),
        (["nosuchcommand"], "No such command"),
    ],
)
def test_tool_failures_exit_three_with_one_line(args: list[str], message: str) -> None:
    done = run(*args, stdin="{}")
    assert done.returncode == 3
    assert done.stdout == ""
    assert message in done.stderr and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_broken_contract_exits_three_naming_the_file(tmp_path: Path) -> None:
    contract_dir = tmp_path / "versions" / "review-result"
    (contract_dir / "schemas").mkdir(parents=True)
    (contract_dir / "contract.yaml").write_text((REPO_ROOT / "versions/review-result/contract.yaml").read_text())
    (contract_dir / "schemas" / "1.0.json").write_text('{"type": "object", ')
    done = run("validate", "--contract", "review-result", "--changed-file", "a", "-", stdin="{}", cwd=tmp_path)
    assert done.returncode == 3
    assert done.stderr.startswith("promptops: error: versions/review-result/schemas/1.0.json: line 1")


def test_batch_streams_one_line_per_record(tmp_path: Path) -> None:
    records = [
        {"response_id": "r1", "raw": json.dumps(response()), "changed_files": CHANGED},
        {"response_id": "r2", "raw": json.dumps(response(schema_version="9.0")), "changed_files": CHANGED},
        {"response_id": "r3", "raw": "not json at all", "changed_files": CHANGED},
    ]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in records) + "this line is broken\n" + '{"raw": 5}\n')
    done = run("validate", "--contract", "review-result", "--format", "json", "--batch", str(batch))
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(o["response_id"], o["outcome"], o["reason"]) for o in lines] == [
        ("r1", "accepted", None),
        ("r2", "rejected", "incompatible_version"),
        ("r3", "rejected", "invalid_json"),
    ]
    assert done.returncode == 3  # unreadable records are a tool failure, after every good record was handled
    assert f"{batch}:4: not valid JSON" in done.stderr and f"{batch}:5: field 'raw'" in done.stderr


def test_batch_without_bad_records_exits_on_the_worst_outcome(tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps({"response_id": "a", "raw": json.dumps(response())}) + "\n")
    done = run("validate", "--contract", "review-result", *CHANGED_ARGS, "--batch", str(batch))
    assert done.returncode == 0
    assert done.stdout.splitlines()[-2:] == ["1 response: 1 accepted, 0 rejected", "findings: 2 of 2 kept"]


def test_batch_skips_blank_lines_and_exits_on_the_worst_outcome_in_any_order(tmp_path: Path) -> None:
    clean = json.dumps({"raw": json.dumps(response())})
    warned = json.dumps({"raw": json.dumps(response([finding(1), finding(2, severity="x")]))})
    rejected = json.dumps({"raw": json.dumps(response(schema_version="9.0"))})
    batch = tmp_path / "batch.jsonl"

    def validate_batch(*lines: str, output: str = "json") -> subprocess.CompletedProcess[str]:
        batch.write_text("".join(line + "\n" for line in lines))
        args = ["--contract", "review-result", "--strict-warnings", *CHANGED_ARGS, "--format", output]
        return run("validate", *args, "--batch", str(batch))

    assert validate_batch(clean, "", "  \t", warned, clean).returncode == 1  # blank lines are no records
    assert validate_batch(warned, rejected, warned).returncode == 2
    assert validate_batch(rejected, clean, warned).returncode == 2
    after_blank = validate_batch(rejected, "", "{", warned)  # a bad record after a rejection still exits 3
    assert after_blank.returncode == 3 and f"{batch}:3: not valid JSON" in after_blank.stderr
    summary = validate_batch(warned, "", rejected, clean, warned, output="text")
    assert summary.returncode == 2
    assert summary.stdout.splitlines()[-4:] == [
        "4 responses: 3 accepted, 1 rejected",
        "findings: 4 of 6 kept",
        "rejections: incompatible_version 1",
        "drops and warnings: invalid_enum 2",
    ]


def test_batch_output_is_streamed_before_input_ends() -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "promptops",
            "validate",
            "--contract",
            "review-result",
            "--format",
            "json",
            *CHANGED_ARGS,
            "--batch",
            "-",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        bufsize=1,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(json.dumps({"response_id": "first", "raw": json.dumps(response())}) + "\n")
    process.stdin.flush()
    first = json.loads(process.stdout.readline())  # arrives while stdin is still open
    assert first["response_id"] == "first"
    process.stdin.close()
    assert process.wait(timeout=30) == 0


def test_python_dash_m_and_console_script_agree() -> None:
    body = json.dumps(response())
    via_module = run("validate", "--contract", "review-result", *CHANGED_ARGS, "--format", "json", "-", stdin=body)
    script = Path(sys.executable).parent / "promptops"
    via_script = subprocess.run(
        [str(script), "validate", "--contract", "review-result", *CHANGED_ARGS, "--format", "json", "-"],
        input=body,
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert via_module.stdout == via_script.stdout and via_module.returncode == via_script.returncode == 0
