"""An interrupted ``release cut`` leaves the previous state intact.

The cut runs as a real subprocess under a real file-size limit (RLIMIT_FSIZE, enforced by the kernel, for
root too): the first write past the limit either fails with EFBIG (CPython ignores SIGXFSZ, so the cut sees
an OSError) or, with SIGXFSZ restored to its default action, kills the process on the spot, with no chance to
clean up. The limit is placed so the failure hits a chosen step: the first staged artifact, or the new lock
(made larger than the limit by a long note) after every artifact was staged.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.release.conftest import DATE, LOCK, PROMPTS, cut, reword, set_pins, write_schema

_RUN = "import sys; from promptops.cli import run; sys.exit(run(sys.argv[1:]))"
_KILLABLE = "import signal; signal.signal(signal.SIGXFSZ, signal.SIG_DFL); " + _RUN


def _cut_limited(root: Path, limit: int, note: str, *, killable: bool) -> subprocess.CompletedProcess[str]:
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    args = ["--root", str(root), "release", "cut", "--contract", "review-result", "--date", DATE, "--note", note]
    env = {**os.environ, "PROMPTOPS_NO_TEMPLATE_CACHE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-c", _KILLABLE if killable else _RUN, *args],
        preexec_fn=limited,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _state(root: Path) -> dict[str, bytes]:
    """Every file under versions/ outside the staging directory."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted((root / "versions").rglob("*"))
        if p.is_file() and not any(part.startswith(".release-staging") for part in p.parts)
    }


@pytest.mark.parametrize(
    ("step", "killable"),
    [("first-artifact", False), ("lock", False), ("lock", True)],
    ids=["efbig-at-first-artifact", "efbig-at-lock", "killed-at-lock"],
)
def test_an_interrupted_cut_leaves_the_previous_release_intact(
    unreleased: Path, cli: Cli, step: str, killable: bool
) -> None:
    assert cut(cli, unreleased, "--note", "first")[0] == 0
    write_schema(unreleased, "1.1")
    set_pins(unreleased, "1.1.0", "1.1")
    reword(unreleased, "You are a senior software engineer", "You are an experienced software engineer")
    before = _state(unreleased)
    snapshot_size = (unreleased / "templates/review-result.j2").stat().st_size
    if step == "first-artifact":
        limit, note = snapshot_size // 2, "short"
    else:
        limit, note = 16_384, "n" * 20_000  # every artifact fits, the new lock does not
        assert snapshot_size < limit

    result = _cut_limited(unreleased, limit, note, killable=killable)

    if killable:
        assert result.returncode == -signal.SIGXFSZ, result.stderr
    else:
        assert result.returncode == 3, result.stderr
        assert "File too large" in result.stderr and result.stderr.count("\n") == 1
    assert _state(unreleased) == before  # lock, snapshots and schemas byte for byte as before
    assert not (unreleased / PROMPTS / "1.1.0.j2").exists()
    assert cli(unreleased, "release", "verify")[0] == 0
    assert "1.1.0" not in cli(unreleased, "release", "list")[1]

    # The next cut (no limit) succeeds, replaces any leftovers and leaves no staging directory behind.
    code, out, _ = cut(cli, unreleased, "--note", "again")
    assert code == 0, out
    assert (unreleased / LOCK).read_bytes() != before[LOCK]
    assert not list((unreleased / "versions/review-result").glob(".release-staging*"))
    assert cli(unreleased, "release", "verify")[0] == 0
