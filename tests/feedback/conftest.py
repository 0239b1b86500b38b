from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root with the repository's contracts and empty logs/ and feedback/ directories."""
    (tmp_path / "versions").symlink_to(REPO_ROOT / "versions", target_is_directory=True)
    (tmp_path / "logs").mkdir()
    (tmp_path / "feedback").mkdir()
    return tmp_path
