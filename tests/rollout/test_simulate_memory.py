"""``rollout simulate`` streams its log: the process's peak memory does not grow with --responses."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

PLAN = "rollout/review-result/review-1.1.yaml"
_PEAK = (
    "import resource, sys; from promptops.cli import run; code = run(sys.argv[1:]); "
    "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(code)"
)


def _peak_kib(root: Path, responses: int) -> int:
    """ru_maxrss (KiB) of a fresh process that simulates ``responses`` records into a log."""
    out = root / f"log-{responses}.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, "--root", str(root), "rollout", "simulate", str(root / PLAN),
         "--responses", str(responses), "--start", "2026-11-02T00:00:00", "--out", str(out)],
        capture_output=True, text=True, check=False, env={**os.environ, "PROMPTOPS_NO_TEMPLATE_CACHE": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.stat().st_size > responses * 500  # the whole log was written
    out.unlink()
    return int(done.stderr.strip().splitlines()[-1])


@pytest.mark.slow  # 220,000 simulated records
def test_peak_memory_does_not_grow_with_the_number_of_responses(full_project: Path) -> None:
    shutil.copytree(REPO_ROOT / "rollout", full_project / "rollout")
    small = _peak_kib(full_project, 20_000)
    large = _peak_kib(full_project, 200_000)
    # Held whole, 180,000 more records (about 2 KB each as JSON, more as dicts) would add hundreds of MiB.
    assert large < small + 32 * 1024, (small, large)
