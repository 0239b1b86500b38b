"""The ``promptops-lint`` pre-commit hook, run by the real ``pre-commit try-repo`` in a real git repository.

``try-repo`` installs the hook repository the way a team's pre-commit would (a fresh virtualenv with this
package pip-installed), so the hook repository must be committed: the test copies this working tree (tracked
and untracked files, minus ignored ones) to a temporary repository and commits it there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow  # pre-commit builds its hook environments

GIT_ENV = {
    "GIT_AUTHOR_NAME": "promptops tests",
    "GIT_AUTHOR_EMAIL": "tests@example.invalid",
    "GIT_COMMITTER_NAME": "promptops tests",
    "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(cwd: Path, *args: str) -> str:
    completed = subprocess.run(
        ["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return completed.stdout


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This working tree, committed in a temporary git repository."""
    target = tmp_path_factory.mktemp("hook") / "promptops"
    files = _git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard").split("\0")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    _git(target, "init", "-q")
    _git(target, "add", "-A")
    _git(target, "commit", "-q", "-m", "promptops under test")
    return target


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def _team_repo(tmp_path: Path) -> Path:
    """A team's repository: contracts and prompt templates, staged."""
    repo = tmp_path / "team"
    repo.mkdir()
    shutil.copytree(REPO / "versions", repo / "versions")
    shutil.copytree(REPO / "templates", repo / "templates")
    (repo / "README.md").write_text("not a template {{ unclosed\n", encoding="utf-8")  # fails lint if linted
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    return repo


def _try_repo(repo: Path, hook_repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "promptops-lint", "--verbose"],
        cwd=repo,
        env={**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(home)},
        capture_output=True,
        text=True,
        check=False,
    )


def test_hook_passes_a_good_template_and_fails_a_bad_one(
    tmp_path: Path, hook_repo: Path, pre_commit_home: Path
) -> None:
    repo = _team_repo(tmp_path)

    good = _try_repo(repo, hook_repo, pre_commit_home)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "promptops lint" in good.stdout
    assert "Passed" in good.stdout
    # Only the staged Jinja files reach the hook (in batches): README.md would fail PO000.
    assert "All checks passed:" in good.stdout and "README.md" not in good.stdout

    head = repo / "templates" / "review-result.j2"
    head.write_text(
        head.read_text(encoding="utf-8").replace(
            "## Changed files",
            "`severity` is one of `critcal`, `high`, `medium`, `low`, `info`.\n\n## Changed files",
        ),
        encoding="utf-8",
    )
    _git(repo, "add", "templates/review-result.j2")

    bad = _try_repo(repo, hook_repo, pre_commit_home)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout
    assert "- exit code: 2" in bad.stdout
    assert "templates/review-result.j2:" in bad.stdout
    assert "PO004 [error] enum set of finding field `severity` differs from the schema" in bad.stdout


def test_hook_checks_the_head_when_only_a_partial_changes(
    tmp_path: Path, hook_repo: Path, pre_commit_home: Path
) -> None:
    repo = _team_repo(tmp_path)
    _git(repo, "commit", "-q", "-m", "baseline")
    partial = repo / "templates" / "_partials" / "instructions.j2"
    partial.write_text(
        partial.read_text(encoding="utf-8").replace(
            "no prose, no explanation, no markdown code fences, no text before or after it", "please"
        ),
        encoding="utf-8",
    )
    _git(repo, "add", "templates/_partials/instructions.j2")

    result = _try_repo(repo, hook_repo, pre_commit_home)  # without --all-files: only the staged partial
    assert result.returncode == 1, result.stdout + result.stderr
    assert "templates/review-result.j2:10:1: PO007 [error] no instruction forbidding prose" in result.stdout
