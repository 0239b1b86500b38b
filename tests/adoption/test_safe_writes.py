"""Regressions: ``init`` never truncates pyproject.toml and names the file it cannot write; a killed
``rollout promote``/``rollback`` leaves temporary files that the next run removes."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.adoption.test_crash_points import DATE, NOW, PLAN, STRACE, _env, _project

_RUN = "import sys; from promptops.cli import run; sys.exit(run(sys.argv[1:]))"


def test_init_under_a_file_size_limit_leaves_pyproject_whole_and_names_it(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    text = '[project]\nname = "demo"\n' + "".join(f'k{i} = "{"x" * 60}"\n' for i in range(10_000))
    (root / "pyproject.toml").write_text(text, encoding="utf-8")
    limit = len(text.encode()) // 2

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-c", _RUN, "--root", str(root), "init"],
        preexec_fn=limited,
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr == "promptops: error: pyproject.toml: cannot write: File too large\n"
    assert (root / "pyproject.toml").read_text(encoding="utf-8") == text
    assert [p.name for p in root.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
def test_a_killed_rollback_leaves_temp_files_the_next_run_removes(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "rollback")
    args = ["--root", str(root), "rollout", "rollback", PLAN, "--reason", "r", "--by", "t", "--now", NOW]
    killed = subprocess.run(
        [STRACE, "-qq", "-o", "/dev/null", "-e", "trace=rename", "-e", "inject=rename:signal=SIGKILL:when=1",
         "--", sys.executable, "-c", _RUN, *args],
        cwd=root, env=_env(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert killed.returncode in (-9, 137), killed.stderr
    plans = root / PLAN
    assert [p.name for p in plans.parent.iterdir() if p.name.endswith(".tmp")] != []  # what the kill left
    done = subprocess.run([sys.executable, "-c", _RUN, *args], cwd=root, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in plans.parent.iterdir() if p.name.endswith(".tmp")] == []
    shutil.rmtree(root)
    assert not os.path.exists(root)


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
def test_a_cut_killed_before_its_commit_is_rolled_back_by_the_next_cut_of_another_version(tmp_path: Path) -> None:
    root = _project(tmp_path / "p", "cut")  # 1.0.0 released, the head pinned to 1.0.1
    args = ["--root", str(root), "release", "cut", "--contract", "review", "--date", DATE]
    killed = subprocess.run(
        [STRACE, "-qq", "-o", "/dev/null", "-e", "trace=rename", "-e", "inject=rename:signal=SIGKILL:when=2",
         "--", sys.executable, "-c", _RUN, *args],
        cwd=root, env=_env(), capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert killed.returncode in (-9, 137), killed.stderr
    assert (root / "versions/review/prompts/1.0.1.j2").is_file()  # moved in; the lock does not name it
    verify = subprocess.run([sys.executable, "-c", _RUN, "--root", str(root), "release", "verify"], cwd=root,
                            env=_env(), capture_output=True, text=True)  # fmt: skip
    assert verify.returncode == 0, verify.stdout + verify.stderr

    head = root / "templates/review.j2"
    head.write_text(head.read_text(encoding="utf-8").replace('"1.0.1"', '"1.0.2"', 1), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", _RUN, *args], cwd=root, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (root / "versions/review/prompts/1.0.1.j2").exists()
    assert not (root / "versions/review/prompts/1.0.1").exists()
    assert [p.name for p in (root / "versions/review").iterdir() if p.name.startswith(".")] == []
