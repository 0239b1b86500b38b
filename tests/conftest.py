"""Shared fixtures: a real project directory built from this repository's contracts and templates."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Protocol

import pytest

import promptops.cli

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root holding copies of this repository's versions/ and templates/."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copytree(REPO / "versions", root / "versions")
    shutil.copytree(REPO / "templates", root / "templates")
    return root


class Cli(Protocol):
    def __call__(self, root: Path, *args: str) -> tuple[int, str, str]: ...


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Run the real ``promptops`` command line in-process: (exit code, stdout, stderr).

    The template bytecode cache is off here so tests leave nothing in the system's temporary directory;
    test_lint_cli covers the cache with a directory of its own.
    """
    monkeypatch.setenv("PROMPTOPS_NO_TEMPLATE_CACHE", "1")

    def run(root: Path, *args: str) -> tuple[int, str, str]:
        code = promptops.cli.run(["--root", str(root), *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run
