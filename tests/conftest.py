"""Shared fixtures: a real project directory built from this repository's contracts and templates."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root holding copies of this repository's versions/ and templates/."""
    root = tmp_path / "project"
    root.mkdir()
    shutil.copytree(REPO / "versions", root / "versions")
    shutil.copytree(REPO / "templates", root / "templates")
    return root
