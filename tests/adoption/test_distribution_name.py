"""The distribution name: our own, not one that installs another project from the public package index, and
the only install name wherever a user reads one: the README, the docs, the CI templates, the action, the docs
build scripts, the pre-commit hooks and the package's own messages. The import package and the command stay
``promptops``."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import promptops
from tests.helpers import REPO_ROOT

# Names on the public package index that belong to other projects: "promptops" is a shell-command assistant.
TAKEN = {"promptops"}
TREES = ("docs", ".ci", "scripts", "promptops")
FILES = ("README.md", "action.yml", ".pre-commit-hooks.yaml", "mkdocs.yml")
BINARY_SUFFIXES = {".so", ".pyc", ".png", ".duckdb", ".parquet", ".gz"}
NAME = r"promptops[A-Za-z0-9._-]*"


def _project() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project


def _install_names() -> re.Pattern[str]:
    """Where a text names a distribution to install: with extras, after ``pip install``, with a version
    specifier or a direct reference, or as a wheel's file name."""
    extras = "|".join(map(re.escape, _project()["optional-dependencies"]))
    return re.compile(
        rf"(?<![\w./-])(?P<extras>{NAME})\[(?:{extras})(?:,\s*(?:{extras}))*\]"
        rf"|pip install\s+(?:-\S+\s+)*['\"]?(?P<pip>{NAME})(?![\w.\[-])"
        rf"|(?<![\w./-])(?P<pinned>{NAME})\s*(?:===?|>=|<=|~=|!=)\s*\d"
        rf"|(?<![\w./-])(?P<direct>{NAME})\s*@\s*(?:file|git|https?)[:+]"
        rf"|dist/(?P<wheel>promptops[A-Za-z0-9._]*)-"
    )


def _text_files() -> Iterator[Path]:
    for tree in TREES:
        for path in sorted((REPO_ROOT / tree).rglob("*")):
            if path.is_file() and path.suffix not in BINARY_SUFFIXES and "__pycache__" not in path.parts:
                yield path
    for name in FILES:
        yield REPO_ROOT / name


def test_the_distribution_is_ours() -> None:
    name = _project()["name"]
    assert canonicalize_name(name) not in TAKEN, f"{name!r} installs another project from the package index"
    assert name == promptops.DISTRIBUTION  # what the install hints and --version name
    assert _project()["scripts"] == {"promptops": "promptops.cli:main"}  # the command keeps its name


def test_the_extras_name_the_distribution_itself() -> None:
    project = _project()
    own = [
        Requirement(text)
        for requirements in project["optional-dependencies"].values()
        for text in requirements
        if text.startswith("promptops")
    ]
    assert own and all(canonicalize_name(r.name) == canonicalize_name(project["name"]) for r in own)


def test_every_install_name_is_the_distribution() -> None:
    name = canonicalize_name(_project()["name"])
    pattern = _install_names()
    found = []
    for path in _text_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in pattern.finditer(line):
                named = next(group for group in match.groups() if group is not None)
                if canonicalize_name(named) != name:
                    found.append(f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()[:120]}")
    assert found == []


def test_the_install_instructions_use_the_distribution() -> None:
    name = _project()["name"]
    for page in ("README.md", "docs/getting-started.md"):
        text = (REPO_ROOT / page).read_text(encoding="utf-8")
        assert f"pip install {name} " in text and f"pip install '{name}[store]'" in text, page
    job = yaml.safe_load((REPO_ROOT / ".ci" / "promptops.gitlab-ci.yml").read_text(encoding="utf-8"))["promptops"]
    assert job["variables"]["PROMPTOPS_REQUIREMENT"] == f"{name}[store]"
