"""Under CI=true a skipped test fails the run, unless tests/conftest.py's CI_ALLOWED_SKIPS lists its file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import CI_ALLOWED_SKIPS
from tests.helpers import REPO_ROOT

_TESTS = """
import pytest

def test_runs():
    assert True

def test_skips():
    pytest.skip("no browser here")

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_failure():
    assert False
"""


def _pytest(directory: Path, ci: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = str(REPO_ROOT)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(directory), str(directory)],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_skip_fails_the_run_under_ci_only(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text("from tests.conftest import pytest_runtest_makereport  # noqa: F401\n")
    (tmp_path / "test_sample.py").write_text(_TESTS)
    local = _pytest(tmp_path, None)
    assert local.returncode == 0 and "1 passed, 1 skipped, 1 xfailed" in local.stdout, local.stdout
    ci = _pytest(tmp_path, "true")
    assert ci.returncode == 1, ci.stdout
    assert "1 failed, 1 passed, 1 xfailed" in ci.stdout
    assert "skipped under CI=true, which allows no skip outside" in ci.stdout and "no browser here" in ci.stdout


def test_the_allowed_skips_name_existing_files_with_a_reason() -> None:
    for path, reason in CI_ALLOWED_SKIPS.items():
        assert (REPO_ROOT / path).is_file(), path
        assert reason
    # the browser test and the C extensions' tests must run in CI: they are not allowed to skip
    assert not [path for path in CI_ALLOWED_SKIPS if "report" in path or "parsing" in path or "store" in path]
