"""Crash points, in the spirit of SQLite's crash tests: every command that writes project files is killed at
each of its write, fsync, rename, link and mkdir system calls on project paths in turn (strace's fault
injection delivers SIGKILL as the call is entered, so the call never happens), and the project must then read
exactly as before the command or as after it, with ``release verify`` and ``rollout status`` passing.

Three commands write several files that no single rename can commit, and say so in their docs: ``init``
(each file is old or new, and running init again completes the project), ``contract new`` (a head template
linked but not yet committed stays on disk until the next run removes it, and lint, like every reader, passes
over it) and ``release cut`` (the lock is the
commit point: files of the new version moved in before it are released by no entry, ``release verify``
knows them from the pending lock in the cut's staging directory, and the next cut removes them). Running the
command again after each kill must leave no stray temporary file or staging directory, and reach the state
after the command when the kill left the state before it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.helpers import REPO_ROOT, empty_store

pytestmark = pytest.mark.slow  # every command killed at each of its writes

STRACE = shutil.which("strace") or "/usr/bin/strace"
SYSCALLS = ("write", "fsync", "rename", "link", "mkdir")
_RUN = "import sys; from promptops.cli import run; sys.exit(run(sys.argv[1:]))"
_STRAY = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$|^\.release-staging|^\.contract-new-")
NOW = "2026-01-01T00:00:00Z"
DATE = "2026-01-01T00:00:00Z"
PLAN = "rollout/review/review-1.0.1.yaml"
Tree = dict[str, str]


def _tree(root: Path) -> tuple[Tree, list[str]]:
    """(every file and directory outside .git as path -> digest, the strays a killed run may leave)."""
    tree: Tree = {}
    strays: list[str] = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in (".git", ".promptops"):
            continue
        if any(_STRAY.match(part) for part in rel.parts):
            if _STRAY.match(rel.parts[-1]):
                strays.append(rel.as_posix())
            continue
        digest = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
        tree[rel.as_posix()] = digest
    return tree, strays


def _command(root: Path, args: tuple[str, ...], trace: str, inject: tuple[str, int] | None) -> list[str]:
    rules = ["-e", f"trace={','.join(SYSCALLS)}"]
    if inject is not None:
        rules += ["-e", f"inject={inject[0]}:signal=SIGKILL:when={inject[1]}"]
    return [STRACE, "-qq", "-y", "-o", trace, *rules, "--", sys.executable, "-c", _RUN, "--root", str(root), *args]


def _env() -> dict[str, str]:
    return {**os.environ, "PROMPTOPS_NO_TEMPLATE_CACHE": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def _points(root: Path, args: tuple[str, ...], trace: Path) -> list[tuple[str, int]]:
    """The (syscall, n-th call of that syscall) of one clean run that touch a path under ``root``."""
    done = subprocess.run(_command(root, args, str(trace), None), cwd=root, env=_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    seen: dict[str, int] = {}
    points = []
    for line in trace.read_text(encoding="utf-8", errors="replace").splitlines():
        name = line.split("(", 1)[0]
        if name not in SYSCALLS:
            continue
        seen[name] = seen.get(name, 0) + 1
        if str(root) in line and not line.rstrip().endswith("EEXIST (File exists)"):  # a mkdir that found it
            points.append((name, seen[name]))
    return points


def _schema(tmp: Path) -> Path:
    path = tmp / "schema.json"
    shutil.copy(REPO_ROOT / "versions/review-result/schemas/1.0.json", path)
    return path


def _run(cli_args: list[str], cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _RUN, *cli_args], cwd=cwd, env=_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, (cli_args, done.stdout, done.stderr)


def _project(base: Path, stage: str) -> Path:
    """A git repository at the state before ``stage``'s command."""
    root = base / "before"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    big = "".join(f'key_{i} = "{"x" * 60}"\n' for i in range(3000))  # ~200 KB: written in one go or not
    (root / "pyproject.toml").write_text(f'[project]\nname = "demo"\n\n[tool.other]\n{big}', encoding="utf-8")
    (root / ".gitignore").write_text("node_modules/\n", encoding="utf-8")
    empty_store(root / ".promptops" / "diagnostics.duckdb")  # promote's gate and status read it
    order = ["init", "contract", "first", "cut", "rollout", "promote", "rollback"]
    at = ["--root", str(root)]
    schema = str(_schema(base))
    steps: dict[str, Callable[[], None]] = {
        "init": lambda: _run([*at, "init"], root),
        "contract": lambda: _run([*at, "contract", "new", "review", "--schema", schema, "--id", "id"], root),
        "first": lambda: _first_release(root, at),
        "cut": lambda: _run([*at, "release", "cut", "--contract", "review", "--date", DATE], root),
        "rollout": lambda: _run([*at, "rollout", "new", "review"], root),
        "promote": lambda: _run([*at, "rollout", "promote", PLAN, *_TRANSITION], root),
    }
    for name in order[: order.index(stage)]:
        steps[name]()
    return root


_TRANSITION = ("--force", "--reason", "test", "--by", "tester", "--now", NOW)


def _first_release(root: Path, at: list[str]) -> None:
    """Release 1.0.0, then pin the head to 1.0.1 (the release the cut under test makes)."""
    _run([*at, "release", "cut", "--contract", "review", "--date", DATE], root)
    head = root / "templates/review.j2"
    head.write_text(head.read_text(encoding="utf-8").replace('"1.0.0"', '"1.0.1"', 1), encoding="utf-8")


COMMANDS: dict[str, tuple[str, ...]] = {
    "init": ("init",),
    "contract": ("contract", "new", "review", "--schema", "SCHEMA", "--id", "id"),
    "cut": ("release", "cut", "--contract", "review", "--date", DATE),
    "rollout": ("rollout", "new", "review"),
    "promote": ("rollout", "promote", PLAN, *_TRANSITION),
    "rollback": ("rollout", "rollback", PLAN, "--reason", "test", "--by", "tester", "--now", NOW),
}


def _allowed(stage: str, tree: Tree, before: Tree, after: Tree) -> bool:
    if tree in (before, after):
        return True
    if stage == "init":  # each file and directory old or new
        return tree.keys() <= before.keys() | after.keys() and all(
            tree[k] in (before.get(k), after.get(k)) for k in tree
        )
    if stage == "contract":  # the head linked, the contract directory not yet renamed in
        return tree == {**before, "templates/review.j2": after["templates/review.j2"]}
    if stage == "rollout":  # the contract's plan directory made, empty: no plan yet
        return tree == {**before, "rollout/review": "dir"}
    if stage == "cut":  # the new version's files renamed in, the lock (the commit point) not yet replaced
        return before.items() <= tree.items() and all(
            k.startswith("versions/review/prompts") and after.get(k) == v for k, v in tree.items() - before.items()
        )
    return False


@pytest.mark.parametrize("stage", list(COMMANDS))
def test_a_command_killed_at_any_write_leaves_the_project_before_or_after(stage: str, tmp_path: Path, cli: Cli) -> None:
    assert Path(STRACE).is_file(), "strace is needed (apt-get install strace)"
    template = _project(tmp_path / "template", stage)
    args = tuple(str(_schema(tmp_path)) if a == "SCHEMA" else a for a in COMMANDS[stage])
    before, strays = _tree(template)
    assert strays == []

    reference = tmp_path / "reference"
    shutil.copytree(template, reference, symlinks=True)
    points = _points(reference, args, tmp_path / "trace")
    after, strays = _tree(_rebased(reference, template))
    assert strays == [] and after != before
    assert len(points) >= 3, points

    linted_before = cli(template, "lint")[:2]
    for number, point in enumerate(points):
        root = tmp_path / f"kill-{number}"
        shutil.copytree(template, root, symlinks=True)
        killed = subprocess.run(
            _command(root, args, "/dev/null", point), cwd=root, env=_env(), capture_output=True, text=True
        )
        assert killed.returncode in (-9, 137), (point, killed.returncode, killed.stderr)
        tree, _ = _tree(root)
        assert _allowed(stage, tree, before, after), (point, _diff(tree, before, after))
        if tree not in (before, after):  # an in-between state must read as before: lint sees what it saw
            assert stage not in ("contract", "rollout") or cli(root, "lint")[:2] == linted_before, point
        if (root / "versions/review").is_dir():
            assert cli(root, "release", "verify")[0] == 0, point
        if (root / PLAN).is_file():
            status = cli(root, "rollout", "status", str(root / PLAN))
            assert status[0] == 0, (point, status)

        again = subprocess.run(
            [sys.executable, "-c", _RUN, "--root", str(root), *args],
            cwd=root,
            env=_env(),
            capture_output=True,
            text=True,
        )
        rerun, strays = _tree(root)
        assert strays == [], (point, strays)
        if tree != after:  # the run that was killed is done by the next one
            assert again.returncode == 0 and rerun == after, (point, again.stderr, _diff(rerun, before, after))
        elif stage not in ("promote", "rollback"):  # done already: refused or skipped, nothing changes
            assert rerun == after, (point, again.stderr)
        shutil.rmtree(root)


def _rebased(reference: Path, template: Path) -> Path:
    """The reference run's result, checked for paths that would name the directory it ran in."""
    for path in reference.rglob("*"):
        if path.is_file() and ".git" not in path.parts:
            assert str(reference) not in path.read_text(encoding="utf-8", errors="replace"), path
    return reference


def _diff(tree: Tree, before: Tree, after: Tree) -> str:
    return json.dumps(
        {
            "not before": sorted(k for k in tree.keys() | before.keys() if tree.get(k) != before.get(k)),
            "not after": sorted(k for k in tree.keys() | after.keys() if tree.get(k) != after.get(k)),
        }
    )
