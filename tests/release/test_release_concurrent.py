"""Two ``release cut`` runs at once: exactly one wins, the other stops with one line, nothing is lost.

Each pair is two real processes started back to back on the same head. Before the contract lock, both
removed and refilled one shared staging directory, and 2 pairs in 25 left a release in the lock with its
frozen partials deleted while one cut exited 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.release.conftest import DATE, LOCK, cut, set_pins

pytestmark = pytest.mark.slow  # 25 pairs of concurrent cuts

_RUN = "import sys; from promptops.cli import run; sys.exit(run(sys.argv[1:]))"
PAIRS = 25


def _start(root: Path) -> subprocess.Popen[str]:
    args = ["--root", str(root), "release", "cut", "--contract", "review-result", "--date", DATE]
    env = {**os.environ, "PROMPTOPS_NO_TEMPLATE_CACHE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.Popen(
        [sys.executable, "-c", _RUN, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_concurrent_cuts_have_one_winner_and_lose_nothing(unreleased: Path, cli: Cli) -> None:
    assert cut(cli, unreleased, "--note", "first")[0] == 0
    outcomes: list[tuple[int, ...]] = []
    for patch in range(1, PAIRS + 1):
        version = f"1.0.{patch}"
        set_pins(unreleased, version)
        runs = [_start(unreleased), _start(unreleased)]
        results = [(run.wait(timeout=300), *run.communicate()) for run in runs]
        codes = sorted(code for code, _, _ in results)
        outcomes.append(tuple(codes))
        assert codes[0] == 0 and codes[1] in (2, 3), (version, results)
        loser = next(r for r in results if r[0] != 0)
        if loser[0] == 3:  # stopped by the lock: one line on stderr naming the contract
            assert loser[2].count("\n") == 1, loser[2]
            assert "versions/review-result/: another promptops run is writing here" in loser[2]
        else:  # started after the winner committed: refused, the version is released
            assert f"prompt {version} is already released" in loser[1]
        verify = cli(unreleased, "release", "verify")
        assert verify[0] == 0, (version, verify)
        assert version in (unreleased / LOCK).read_text(encoding="utf-8")
        assert cli(unreleased, "render", "--contract", "review-result", "--version", version)[0] == 0
        leftovers = [p.name for p in (unreleased / "versions/review-result").iterdir() if p.name.startswith(".")]
        assert leftovers == [], leftovers
    assert len(outcomes) == PAIRS
