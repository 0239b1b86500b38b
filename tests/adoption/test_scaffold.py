"""``init``, ``contract new`` and ``rollout new`` through the real CLI, in real git repositories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Cli

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["issues"],
    "properties": {
        "issues": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["issueId", "filename", "lineNumber", "severity", "explanation"],
                "properties": {
                    "issueId": {"type": "string"},
                    "filename": {"type": "string"},
                    "lineNumber": {"type": "integer", "minimum": 1},
                    "endLine": {"type": "integer", "minimum": 1},
                    "severity": {"type": "string", "enum": ["P0", "P1", "P2", "P3"]},
                    "explanation": {"type": "string"},
                },
            },
        }
    },
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def _schema(repo: Path, schema: Any, name: str = "schema.json") -> str:
    (repo / name).write_text(json.dumps(schema) if not isinstance(schema, str) else schema, encoding="utf-8")
    return str(repo / name)


def test_init_keeps_what_is_there(repo: Path, cli: Cli) -> None:
    pyproject = '# our project\n[project]\nname = "svc"  # keep me\n\n[tool.ruff]\nline-length = 100\n'
    (repo / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    (repo / ".gitignore").write_text("*.pyc", encoding="utf-8")  # no final newline
    (repo / "templates").mkdir()

    code, out, err = cli(repo, "init", "--format", "json")
    assert (code, err) == (0, "")
    actions = {w["path"]: w["action"] for w in json.loads(out)["writes"]}
    assert actions == {
        "versions": "mkdir",
        "templates": "skip",
        "rollout": "mkdir",
        "pyproject.toml": "update",
        ".gitattributes": "create",
        ".gitignore": "append",
    }
    text = (repo / "pyproject.toml").read_text(encoding="utf-8")
    assert text.startswith(pyproject) and "[tool.promptops]" in text and "[tool.promptops.lint]" in text
    assert (repo / ".gitignore").read_text(
        encoding="utf-8"
    ) == "*.pyc\n# promptops: the local diagnostics store\n.promptops/\n"
    code, out, _ = cli(repo, "lint")  # the table it wrote is a valid lint configuration
    assert code == 0, out


def test_init_needs_a_git_repository(tmp_path: Path, cli: Cli) -> None:
    code, out, err = cli(tmp_path, "init")
    assert (code, out) == (3, "")
    assert err == f"promptops: error: {tmp_path}: not inside a git repository: run `git init` first\n"
    assert list(tmp_path.iterdir()) == []


def test_contract_new_infers_camel_case_roles_and_priorities(repo: Path, cli: Cli) -> None:
    code, _, err = cli(repo, "contract", "new", "bugs", "--schema", _schema(repo, SCHEMA))
    assert code == 0, err
    config = (repo / "versions/bugs/contract.yaml").read_text(encoding="utf-8")
    for line in ("items: issues", "id: issueId", "path: filename", "line: lineNumber", "end_line: endLine"):
        assert line in config
    assert "P0: critical" in config and "- explanation" in config
    assert cli(repo, "lint")[0] == 0
    assert cli(repo, "render", "--contract", "bugs")[0] == 0


@pytest.mark.parametrize(
    ("change", "extra", "message"),
    [
        (lambda s: s["properties"].update(more=s["properties"]["issues"]), (), "--items: name the array that holds"),
        (
            lambda s: s["properties"]["issues"]["items"]["properties"].update(path={"type": "string"}),
            (),
            "--path: several fields could be the finding's path (filename, path): name one",
        ),
        (lambda s: None, ("--line", "nope"), "--line: 'nope' is not a property of each issues item"),
        (lambda s: None, ("--items", "nope"), "--items: 'nope' is not a top-level array of objects"),
        (
            lambda s: s["properties"]["issues"]["items"]["properties"]["lineNumber"].update(minimum="one"),
            (),
            "versions/bugs/schemas/1.0.json: not a valid JSON Schema at properties/issues/items/properties/lineNumber",
        ),
        (lambda s: None, ("--from", "nope"), "--from: no built-in contract 'nope'"),
        (lambda s: None, ("--schema-version", "1"), "1"),
    ],
)
def test_contract_new_refuses_in_one_line_and_writes_nothing(
    repo: Path, cli: Cli, change: Any, extra: tuple[str, ...], message: str
) -> None:
    schema = json.loads(json.dumps(SCHEMA))
    change(schema)
    code, out, err = cli(repo, "contract", "new", "bugs", "--schema", _schema(repo, schema), *extra)
    assert (code, out) == (3, "")
    assert err.startswith("promptops: error: ") and message in err and err.count("\n") == 1
    assert not (repo / "versions").exists() and not (repo / "templates").exists()


def test_contract_new_never_overwrites(repo: Path, cli: Cli) -> None:
    path = _schema(repo, SCHEMA)
    assert cli(repo, "contract", "new", "bugs", "--schema", path)[0] == 0
    code, _, err = cli(repo, "contract", "new", "bugs", "--schema", path)
    assert (code, err) == (
        3,
        "promptops: error: versions/bugs/ exists already: pick another name (nothing is ever overwritten)\n",
    )
    code, _, err = cli(repo, "contract", "new", "x", "--schema", _schema(repo, "{\n  nope", "bad.json"))
    assert (code, err) == (
        3,
        f"promptops: error: {repo}/bad.json: line 2 column 3: invalid JSON: "
        "Expecting property name enclosed in double quotes\n",
    )


def test_contract_new_from_a_builtin(repo: Path, cli: Cli) -> None:
    code, out, err = cli(repo, "contract", "new", "my-review", "--from", "review-result", "--dry-run")
    assert code == 0, err
    assert "would create    versions/my-review/schemas/1.1.json\n" in out and not (repo / "versions").exists()
    assert cli(repo, "contract", "new", "my-review", "--from", "review-result")[0] == 0
    head = (repo / "templates/my-review.j2").read_text(encoding="utf-8")
    assert '{% set prompt_version = "1.0.0" %}' in head and '{% set schema_version = "1.1" %}' in head
    assert cli(repo, "lint")[0] == 0


def test_rollout_new_says_what_to_cut_first(repo: Path, cli: Cli) -> None:
    assert cli(repo, "contract", "new", "bugs", "--schema", _schema(repo, SCHEMA))[0] == 0
    code, _, err = cli(repo, "rollout", "new", "bugs")
    assert code == 3 and "no release yet: cut the first one (`promptops release cut --contract bugs`)" in err
    assert cli(repo, "release", "cut", "--contract", "bugs", "--date", "2026-11-20T00:00:00Z")[0] == 0
    code, _, err = cli(repo, "rollout", "new", "bugs")
    assert code == 3 and "prompt 1.0.0 is the first release" in err
    head = repo / "templates/bugs.j2"
    head.write_text(head.read_text(encoding="utf-8").replace('"1.0.0"', '"1.0.1"'), encoding="utf-8")
    code, _, err = cli(repo, "rollout", "new", "bugs")
    assert code == 3 and "the head's prompt 1.0.1 is not released: cut it first" in err
    assert not (repo / "rollout").exists()


def _with_item(**properties: Any) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(json.dumps(SCHEMA))
    item = schema["properties"]["issues"]["items"]
    item["properties"].update(properties)
    return schema


_WHAT = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "issueId": {"type": "string"},
            "filename": {"type": "string"},
            "lineNumber": {"type": "integer"},
            "severity": {"type": "string", "enum": ["high", "low"]},
            "what": {"type": "string"},
        },
    },
}


@pytest.mark.parametrize(
    ("schema", "expected", "finding"),
    [
        # a message field of the team's own name: the first plain text field that plays no role
        (
            {**SCHEMA, "properties": {"issues": _WHAT}},
            {"severity": {"field": "severity", "map": {"high": "high", "low": "low"}}, "message": ["what"]},
            {"severity": "high", "what": "x"},
        ),
        # confidence in words is placed on the 0-1 scale
        (
            _with_item(confidence={"type": "string", "enum": ["high", "medium", "low"]}),
            {
                "severity": {"field": "severity", "map": {"P0": "critical", "P1": "high", "P2": "medium", "P3": "low"}},
                "message": ["explanation"],
                "confidence": {"field": "confidence", "map": {"high": 0.8, "medium": 0.6, "low": 0.4}},
            },
            {"severity": "P1", "explanation": "x", "confidence": "low"},
        ),
    ],
)
def test_contract_new_writes_the_merge_section_it_can_infer(
    repo: Path, cli: Cli, schema: dict[str, Any], expected: dict[str, Any], finding: dict[str, Any]
) -> None:
    code, _, err = cli(repo, "contract", "new", "bugs", "--schema", _schema(repo, schema))
    assert code == 0, err
    config = yaml.safe_load((repo / "versions/bugs/contract.yaml").read_text(encoding="utf-8"))
    assert config["merge"] == expected
    answer = {"issues": [{"issueId": "1", "filename": "a.py", "lineNumber": 3, **finding}]}
    (repo / "answer.json").write_text(json.dumps(answer), encoding="utf-8")
    code, out, err = cli(repo, "merge", "--changed-file", "a.py", "--format", "json", f"bugs={repo / 'answer.json'}")
    assert code == 0, err
    assert len(json.loads(out)["findings"]) == 1


def test_without_an_inferable_severity_the_merge_error_shows_the_section_to_add(repo: Path, cli: Cli) -> None:
    schema = _with_item()
    item = schema["properties"]["issues"]["items"]
    item["properties"]["kind"] = {"type": "string", "enum": ["blocker", "nit"]}
    del item["properties"]["severity"]
    item["required"] = [r for r in item["required"] if r != "severity"]
    assert cli(repo, "contract", "new", "bugs", "--schema", _schema(repo, schema))[0] == 0
    assert "merge:" not in (repo / "versions/bugs/contract.yaml").read_text(encoding="utf-8")
    (repo / "answer.json").write_text(json.dumps({"issues": []}), encoding="utf-8")
    code, _, err = cli(repo, "merge", "--changed-file", "a.py", f"bugs={repo / 'answer.json'}")
    assert code == 3
    assert err == (
        "promptops: error: versions/bugs/contract.yaml: no merge section: promptops merge cannot put its findings on"
        ' a common scale; add to it merge: {severity: {field: kind, map: {blocker: "<critical|high|medium|low|info>",'
        ' nit: "<critical|high|medium|low|info>"}}, message: [explanation]}\n'
    )
