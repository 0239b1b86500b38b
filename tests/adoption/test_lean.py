"""The lean install: linting, rendering, compat, release checks and scaffolding never import the store's
dependencies (duckdb, pyarrow: the ``store`` extra), and a store command run without them says in one line
how to install them.

Each command runs in a fresh interpreter whose import system refuses duckdb and pyarrow and records every
attempt, so a new import anywhere on these commands' paths (even one whose failure is caught) fails here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

BLOCKED = ("duckdb", "pyarrow")
RUNNER = """
import importlib.abc, json, sys
attempts = []
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            attempts.append(name)
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Refuse())
from promptops.cli import run
code = run(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {blocked!r})
print(json.dumps({{"code": code, "attempts": attempts, "loaded": loaded}}), file=sys.stderr)
"""


def _run(root: Path, *args: str) -> tuple[int, list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", RUNNER.format(blocked=BLOCKED), *args],
        cwd=root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    *messages, last = done.stderr.strip().split("\n")
    result = json.loads(last)
    return result["code"], result["attempts"] + result["loaded"], "\n".join(messages)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for name in ("versions", "templates"):
        shutil.copytree(REPO_ROOT / name, tmp_path / name)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    return tmp_path


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("lint",), 0),
        (("lint", "--format", "json"), 0),
        (("render", "--contract", "review-result", "--changed-file", "a.py"), 0),
        (("compat", "matrix", "--contract", "review-result"), 0),
        (("compat", "diff", "versions/review-result/schemas/1.0.json", "versions/review-result/schemas/1.1.json"), 0),
        (("release", "verify"), 0),
        (("release", "list"), 0),
        (("release", "cut", "--contract", "review-result", "--dry-run"), 2),  # 1.1.1 is released already
        (("release", "check"), 0),
        (("validate", "--contract", "agent-output", "--changed-file", "a.py", "-"), 2),  # empty stdin: rejected
        (("init", "--dry-run"), 0),
        (("contract", "new", "mine", "--from", "agent-output", "--dry-run"), 0),
    ],
)
def test_checks_never_import_the_store(root: Path, args: tuple[str, ...], code: int) -> None:
    got, imported, messages = _run(root, *args)
    assert got == code, messages
    assert imported == [], f"promptops {' '.join(args)} imported {imported}"


@pytest.mark.parametrize("args", [("rates", "--contract", "review-result"), ("ingest", "logs")])
def test_store_commands_say_how_to_install_the_store(root: Path, args: tuple[str, ...]) -> None:
    got, _, messages = _run(root, *args)
    assert got == 3
    assert (
        messages
        == "promptops: error: this command needs the diagnostics store (duckdb): pip install 'promptops[store]'"
    )
