"""Release fixtures: temporary copies of this repository's versions/ and templates/, used through --root."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.helpers import REPO_ROOT

HEAD = "templates/review-result.j2"
LOCK = "versions/review-result/releases.yaml"
PROMPTS = "versions/review-result/prompts"
DATE = "2025-06-02T09:30:00Z"


def unreleased_copy(target: Path) -> Path:
    """The repository's versions/ and templates/ as they were before review-result's first release: no
    lock, no snapshots, schema 1.0 only, and the head and partials of release 1.0.0 (taken from its
    snapshot when the repository has one, else from templates/)."""
    target.mkdir(parents=True)
    shutil.copytree(REPO_ROOT / "versions", target / "versions")
    shutil.copytree(REPO_ROOT / "templates", target / "templates")
    contract = target / "versions" / "review-result"
    snapshot = REPO_ROOT / PROMPTS / "1.0.0.j2"
    if snapshot.is_file():
        shutil.copy(snapshot, target / HEAD)
        frozen = REPO_ROOT / PROMPTS / "1.0.0" / "_partials"
        for partial in frozen.iterdir():
            shutil.copy(partial, target / "templates" / "_partials" / partial.name)
    shutil.rmtree(contract / "prompts", ignore_errors=True)
    (contract / "releases.yaml").unlink(missing_ok=True)
    for schema in (contract / "schemas").glob("*.json"):
        if schema.name != "1.0.json":
            schema.unlink()
    return target


@pytest.fixture
def unreleased(tmp_path: Path) -> Path:
    return unreleased_copy(tmp_path / "project")


def set_pins(root: Path, prompt: str, schema: str | None = None) -> None:
    head = root / HEAD
    text = head.read_text(encoding="utf-8")
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("{% set prompt_version = "):
            lines[i] = f'{{% set prompt_version = "{prompt}" %}}'
        elif line.startswith("{% set schema_version = ") and schema is not None:
            lines[i] = f'{{% set schema_version = "{schema}" %}}'
    head.write_text("\n".join(lines), encoding="utf-8")


def reword(root: Path, old: str, new: str, path: str = HEAD) -> None:
    file = root / path
    text = file.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    file.write_text(text.replace(old, new, 1), encoding="utf-8")


def write_schema(root: Path, version: str, *, finding_field: str | None = "cwe", severity: str | None = None) -> Path:
    """A review-result schema derived from 1.0: with an optional finding field, and/or one more severity."""
    schema = json.loads((root / "versions/review-result/schemas/1.0.json").read_text(encoding="utf-8"))
    item = schema["properties"]["findings"]["items"]
    if finding_field is not None:
        item["properties"][finding_field] = {"type": "string", "description": "CWE id, e.g. CWE-89"}
    if severity is not None:
        item["properties"]["severity"]["enum"].append(severity)
    path = root / f"versions/review-result/schemas/{version}.json"
    path.write_text(json.dumps(schema, indent=2) + "\n", encoding="utf-8")
    return path


def cut(cli: Cli, root: Path, *args: str) -> tuple[int, str, str]:
    return cli(root, "release", "cut", "--contract", "review-result", "--date", DATE, *args)


def history(cli: Cli, root: Path) -> None:
    """Cut 1.0.0 (schema 1.0), 1.0.1 (wording) and 1.1.0 (schema 1.1 with `cwe`) through the CLI."""
    assert cut(cli, root, "--note", "first")[0] == 0
    reword(root, "You are a senior software engineer", "You are an experienced software engineer")
    set_pins(root, "1.0.1")
    assert cut(cli, root, "--note", "wording")[0] == 0
    write_schema(root, "1.1")
    set_pins(root, "1.1.0", "1.1")
    assert cut(cli, root, "--note", "cwe")[0] == 0


@pytest.fixture
def released(unreleased: Path, cli: Cli) -> Path:
    history(cli, unreleased)
    return unreleased
