"""promptops in a team's own repository, end to end, from a wheel built from this checkout.

The wheel is installed with its dependencies (and the store extra) into a fresh virtualenv; every command
runs from that virtualenv with its working directory in a new git repository outside the checkout, which
starts empty: ``init``, ``contract new`` with a schema of its own (its own items array and field names),
``lint``, ``render``, ``release cut``, ``release check``, ``validate``, ``ingest``, ``rollout new``,
``rollout gate``, ``report``, ``merge`` with the built-in agent-output contract, and the re-ask loop against a
scripted model. No output may name the checkout: everything the commands need ships in the wheel. Then the
real pre-commit runs this repository's two hooks on that repository.

The steps depend on each other, so they are one test per stage over one module-scoped repository, in order.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO_ROOT

pytestmark = pytest.mark.slow  # a wheel and a fresh venv

GIT_ENV = {
    "GIT_AUTHOR_NAME": "promptops tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "promptops tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}
CONTRACT = "security-audit"
# A schema of the team's own: the findings are "vulnerabilities", the roles are vuln_id / file_path /
# start_line, the severity is "risk", the summary is "overview".
SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["vulnerabilities", "overview"],
    "additionalProperties": False,
    "properties": {
        "overview": {"type": "string", "description": "The audit in a few sentences."},
        "vulnerabilities": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["vuln_id", "file_path", "start_line", "risk", "detail"],
                "additionalProperties": False,
                "properties": {
                    "vuln_id": {"type": "string", "minLength": 1},
                    "file_path": {"type": "string", "minLength": 1},
                    "start_line": {"type": "integer", "minimum": 1},
                    "risk": {"type": "string", "enum": ["critical", "high", "medium", "low"]},
                    "detail": {"type": "string", "minLength": 1},
                    "cwe": {"type": "string", "pattern": "^CWE-[0-9]+$"},
                },
            },
        },
    },
}
GOOD: dict[str, Any] = {
    "vulnerabilities": [
        {"vuln_id": "V1", "file_path": "app/db.py", "start_line": 3, "risk": "high", "detail": "SQL injection"}
    ],
    "overview": "One injection in the query builder.",
}


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def _copy_tree(target: Path) -> Path:
    """This working tree (tracked and untracked files, minus ignored ones) committed in a fresh repository."""
    files = _git(REPO_ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, files):
        source = REPO_ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    _git(target, "init", "-q")
    _git(target, "add", "-A")
    _git(target, "commit", "-q", "-m", "promptops under test")
    return target


class Env:
    """The fresh virtualenv with the wheel installed, and the team's repository."""

    def __init__(self, bin_dir: Path, repo: Path, hook_repo: Path, home: Path) -> None:
        self.bin = bin_dir
        self.repo = repo
        self.hook_repo = hook_repo
        self.home = home

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        return {**keep, **GIT_ENV, "PATH": f"{self.bin}{os.pathsep}{keep.get('PATH', '')}"}

    def run(self, *args: str, code: int = 0, stdin: str | None = None) -> str:
        """``promptops ARGS`` in the team's repository; asserts the exit code and that no output names the
        checkout. Returns stdout."""
        done = subprocess.run(
            [str(self.bin / "promptops"), *args],
            cwd=self.repo,
            env=self.env(),
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )
        shown = f"promptops {' '.join(args)} -> {done.returncode}\n{done.stdout}\n{done.stderr}"
        assert done.returncode == code, shown
        assert str(REPO_ROOT) not in done.stdout + done.stderr, shown
        return done.stdout

    def python(self, script: str) -> str:
        done = subprocess.run(
            [str(self.bin / "python"), "-c", script],
            cwd=self.repo,
            env=self.env(),
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert str(REPO_ROOT) not in done.stdout + done.stderr
        return done.stdout

    def write(self, rel: str, text: str) -> None:
        path = self.repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")

    def edit(self, rel: str, old: str, new: str) -> None:
        path = self.repo / rel
        text = path.read_text(encoding="utf-8")
        assert old in text, f"{old!r} not in {rel}"
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    def commit(self, message: str) -> None:
        _git(self.repo, "add", "-A")
        _git(self.repo, "commit", "-q", "-m", message)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Env:
    base = tmp_path_factory.mktemp("adoption")
    hook_repo = _copy_tree(base / "promptops")
    # Build from the committed copy: an in-tree build would leave build/ and *.egg-info in the checkout.
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"), str(hook_repo)],
        check=True,
        capture_output=True,
    )
    (wheel,) = (base / "dist").glob("*.whl")
    venv.create(base / "venv", with_pip=True)
    bin_dir = base / "venv" / "bin"
    subprocess.run([str(bin_dir / "pip"), "install", "-q", f"{wheel}[store]"], check=True, capture_output=True)
    repo = base / "team"
    repo.mkdir()
    _git(repo, "init", "-q")
    return Env(bin_dir, repo, hook_repo, base / "pre-commit-home")


def test_the_installed_package_is_the_wheel_not_the_checkout(installed: Env) -> None:
    where = installed.python("import promptops, promptops.defaults as d; print(promptops.__file__, d.location())")
    assert str(installed.bin.parent) in where and str(REPO_ROOT) not in where
    assert not (installed.repo / "versions").exists()  # the team's repository starts empty


def test_init_then_a_contract_of_its_own_lints_and_renders(installed: Env) -> None:
    dry = json.loads(installed.run("init", "--dry-run", "--format", "json"))
    assert [w["path"] for w in dry["writes"]] == [
        "versions",
        "templates",
        "rollout",
        "pyproject.toml",
        ".gitattributes",
        ".gitignore",
    ]
    assert not (installed.repo / "versions").exists()  # --dry-run wrote nothing
    out = installed.run("init")
    assert "promptops-release-check" in out and "Next: promptops contract new" in out
    assert "versions/** -text" in (installed.repo / ".gitattributes").read_text(encoding="utf-8")
    assert ".promptops/" in (installed.repo / ".gitignore").read_text(encoding="utf-8")
    assert "[tool.promptops.lint]" in (installed.repo / "pyproject.toml").read_text(encoding="utf-8")
    again = json.loads(installed.run("init", "--format", "json"))
    assert all(w["action"] == "skip" for w in again["writes"])  # never overwrites

    installed.write("schemas/audit.json", json.dumps(SCHEMA, indent=2))
    # Two arrays of objects: the findings array is not obvious, and a non-interactive run names the flag.
    two = {**SCHEMA, "properties": {**SCHEMA["properties"], "notes": SCHEMA["properties"]["vulnerabilities"]}}
    installed.write("schemas/two.json", json.dumps(two))
    err = subprocess.run(
        [str(installed.bin / "promptops"), "contract", "new", "x", "--schema", "schemas/two.json"],
        cwd=installed.repo,
        env=installed.env(),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert err.returncode == 3 and err.stderr.startswith("promptops: error: --items: ") and err.stderr.count("\n") == 1
    assert not (installed.repo / "versions" / "x").exists()

    installed.run("contract", "new", CONTRACT, "--schema", "schemas/audit.json")
    config = (installed.repo / "versions" / CONTRACT / "contract.yaml").read_text(encoding="utf-8")
    for line in ("items: vulnerabilities", "id: vuln_id", "path: file_path", "line: start_line", "field: risk"):
        assert line in config
    assert "All checks passed" in installed.run("lint")
    report = json.loads(installed.run("lint", "--format", "json"))
    used = report["sources"][f"templates/{CONTRACT}.j2"]
    assert used["contract"] == f"versions/{CONTRACT}"
    assert {t["name"]: t["origin"] for t in used["templates"]} == {
        f"{CONTRACT}.j2": "project",
        "_partials/fields.j2": "package",
        "_partials/instructions.j2": "package",
        "_partials/values.j2": "package",
    }
    prompt = json.loads(
        installed.run("render", "--contract", CONTRACT, "--changed-file", "app/db.py", "--format", "json")
    )
    assert prompt["prompt_version"] == "1.0.0" and '"app/db.py"' in prompt["text"]
    assert "`risk` (string): one of `critical`, `high`, `medium`, `low`" in prompt["text"]
    installed.commit("promptops project with the security-audit contract")


def test_release_cut(installed: Env) -> None:
    installed.run("release", "cut", "--contract", CONTRACT, "--note", "first", "--date", "2026-11-20T09:00:00Z")
    installed.run("release", "verify")
    installed.commit("release 1.0.0")
    # A wording change pinned as a patch, cut as 1.0.1.
    head = f"templates/{CONTRACT}.j2"
    installed.edit(head, "You review a code change", "You audit a code change for security problems")
    installed.edit(head, '"1.0.0"', '"1.0.1"')
    out = installed.run("release", "cut", "--contract", CONTRACT, "--note", "wording", "--date", "2026-11-21T09:00:00Z")
    assert "released prompt 1.0.1 (patch) with schema 1.0 (unchanged)" in out
    installed.commit("release 1.0.1")


def test_release_check(installed: Env) -> None:
    installed.run("release", "check", "--contract", CONTRACT)  # the head is the latest release
    head = f"templates/{CONTRACT}.j2"
    # An enum value added (a major change) pinned as a minor: understated, and the version that passes named.
    schema = json.loads((installed.repo / "versions" / CONTRACT / "schemas" / "1.0.json").read_text(encoding="utf-8"))
    schema["properties"]["vulnerabilities"]["items"]["properties"]["risk"]["enum"].append("info")
    installed.write(f"versions/{CONTRACT}/schemas/1.1.json", json.dumps(schema, indent=2))
    installed.edit(head, '"1.0.1"', '"1.1.0"')
    installed.edit(head, 'schema_version = "1.0"', 'schema_version = "1.1"')
    try:
        assert "All checks passed" in installed.run("lint")  # lint alone accepts it: the wording follows the schema
        out = installed.run("release", "check", "--contract", CONTRACT, code=2)
        assert "2.0.0" in out
    finally:  # the later stages start from the released head
        (installed.repo / "versions" / CONTRACT / "schemas" / "1.1.json").unlink()
        _git(installed.repo, "checkout", "--", head)
    installed.run("release", "check", "--contract", CONTRACT)


def test_validate_ingest_rollout_and_report(installed: Env) -> None:
    installed.write("out/good.json", json.dumps(GOOD))
    out = installed.run("validate", "--contract", CONTRACT, "--changed-file", "app/db.py", "out/good.json")
    assert out.startswith("accepted: 1 of 1 findings kept")
    bad = {**GOOD, "vulnerabilities": [{**GOOD["vulnerabilities"][0], "risk": "severe"}]}
    installed.write("out/bad.json", json.dumps(bad))
    out = installed.run("validate", "--contract", CONTRACT, "--changed-file", "app/db.py", "out/bad.json")
    assert "invalid_enum: vulnerabilities[0].risk: string 'severe' is not one of" in out  # dropped, not fatal

    plan_out = installed.run("rollout", "new", CONTRACT)
    plan = f"rollout/{CONTRACT}/{CONTRACT}-1.0.1.yaml"
    assert plan_out.startswith(f"created {plan}")
    text = (installed.repo / plan).read_text(encoding="utf-8")
    assert 'baseline: {prompt_version: "1.0.0", schema_version: "1.0"}' in text
    assert 'candidate: {prompt_version: "1.0.1", schema_version: "1.0"}' in text
    installed.run("rollout", "new", CONTRACT, code=3)  # the plan exists: never overwritten

    # Traffic as the plan assigns it (the real assignment), one response per pull request.
    installed.python(
        f"""
import json
from pathlib import Path
from promptops.rollout.assign import assign
from promptops.rollout.plan import load_plan
plan = load_plan(Path({plan!r}), {plan!r})
good = json.dumps({GOOD!r})
with open("logs.jsonl", "w") as out:
    for i in range(600):
        unit = f"acme/api#{{i}}"
        arm = assign(plan, unit).arm
        record = {{"response_id": f"r{{i}}", "ts": "2026-11-22T10:00:00Z", "contract": {CONTRACT!r},
                  "rollout_id": plan.rollout_id, "arm": arm, "unit": unit, "changed_files": ["app/db.py"],
                  "raw": good if i % 50 else "Sure, here is my review."}}
        out.write(json.dumps(record) + "\\n")
"""
    )
    stored = installed.run("ingest", "logs.jsonl")
    assert "600 responses stored" in stored and "0 bad records" in stored
    gate = json.loads(installed.run("rollout", "gate", plan, "--format", "json"))
    # About 5% of the pull requests got the candidate: far from the 500 the canary step needs.
    assert (gate["verdict"], gate["reason"]) == ("PassedWithWarnings", "INSUFFICIENT_SAMPLE"), gate
    arms = gate["window"]["responses"]
    assert arms["baseline"] + arms["candidate"] == 600 and 10 < arms["candidate"] < 60
    dashboard = json.loads(installed.run("report", "--contract", CONTRACT, "--out", "dash", "--format", "json"))
    assert (installed.repo / "dash").is_dir() and dashboard


def test_merge_with_the_builtin_agent_output(installed: Env) -> None:
    agent = {
        "findings": [
            {
                "id": "A1",
                "severity": "medium",
                "category": "reliability",
                "title": "Unbounded loop",
                "message": "The retry loop never gives up.",
                "file": "app/retry.py",
                "line": 9,
            }
        ],
        "summary": "One problem.",
    }
    installed.write("out/agent.json", json.dumps(agent))
    merged = json.loads(
        installed.run(
            "merge",
            f"{CONTRACT}=out/good.json",
            "agent-output=out/agent.json",
            "--changed-file",
            "app/db.py",
            "--changed-file",
            "app/retry.py",
            "--format",
            "json",
        )
    )
    assert sorted(f["file"] for f in merged["findings"]) == ["app/db.py", "app/retry.py"]
    assert {s["contract"] for s in merged["sources"]} == {CONTRACT, "agent-output"}


def test_reask_loop_with_a_scripted_model(installed: Env) -> None:
    out = installed.python(
        f"""
import json
from pathlib import Path
from promptops import load_contract
from promptops.reask import Asker, ModelReply
from promptops.render.renderer import Renderer
answers = iter([ModelReply("Sure! One injection.", tokens_used=10), ModelReply({json.dumps(GOOD)!r}, tokens_used=20)])
sent = []
def model(messages):
    sent.append(messages)
    return next(answers)
root = Path.cwd()
result = Asker(Renderer(root), load_contract(root, {CONTRACT!r})).ask(model, changed_files=["app/db.py"])
print(json.dumps({{"accepted": result.accepted, "attempts": result.attempts, "reask": sent[-1][-1].content}}))
"""
    )
    result = json.loads(out)
    assert result["accepted"] and result["attempts"] == 2
    assert "previous response" in result["reask"].lower()  # the packaged _reask.j2 wrote it


def _try_repo(installed: Env, hook: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(installed.hook_repo), hook, "--all-files"],
        cwd=installed.repo,
        env={**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(installed.home)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_precommit_runs_both_hooks_on_the_new_repository(installed: Env) -> None:
    installed.commit("traffic and outputs")
    for hook in ("promptops-lint", "promptops-release-check"):
        clean = _try_repo(installed, hook)
        assert clean.returncode == 0, clean.stdout + clean.stderr
        assert "Passed" in clean.stdout

    # An enum value removed from the released schema without a version bump.
    released = installed.repo / "versions" / CONTRACT / "schemas" / "1.0.json"
    schema = json.loads(released.read_text(encoding="utf-8"))
    schema["properties"]["vulnerabilities"]["items"]["properties"]["risk"]["enum"].remove("low")
    released.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
    _git(installed.repo, "add", "-A")
    failed = _try_repo(installed, "promptops-release-check")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "Failed" in failed.stdout and f"versions/{CONTRACT}/schemas/1.0.json" in failed.stdout
