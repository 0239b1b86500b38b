"""Reading and locking plan files: bounded, regular files only, one writer at a time.

A plan is a small YAML file under ``rollout/<contract>/``, read by ``promptops.core.strict_yaml`` like every
hand-kept file: anything that is not a regular file (a FIFO or a symlink to ``/dev/zero`` would never end) or
is larger than ``MAX_PLAN_BYTES`` is refused, and the line of the first byte that is not UTF-8 is named.
Writers of the plans of one contract take an exclusive ``flock`` on the contract's plan directory while they
read, append and replace a plan, so concurrent ``rollout rollback`` runs each keep their history entry (the
plan file itself is replaced by a rename, so it cannot carry the lock). Every write is atomic (a temporary
file in the same directory, fsync, rename); the temporary files a killed writer left are removed by the next
writer, under the lock (so none of them can be a live writer's).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from promptops.core import strict_yaml
from promptops.core.errors import PromptopsError
from promptops.core.files import remove_stray_temps

MAX_PLAN_BYTES = 1 << 20  # a plan with years of history is a few tens of KiB


class PlanError(PromptopsError):
    """A rollout plan that cannot be used, with the file and key at fault."""


def read_plan_text(path: Path, source: str) -> str:
    """The plan's text; ``source`` is how errors name it (repo-relative)."""
    if not os.path.lexists(path):
        raise PlanError(f"{source}: no such rollout plan")
    try:
        return strict_yaml.read_text(path, MAX_PLAN_BYTES)
    except strict_yaml.YamlProblem as problem:
        raise PlanError(f"{source}: {problem}") from None


@contextmanager
def plan_lock(path: Path, source: str) -> Iterator[None]:
    """Hold the exclusive lock of the plans beside ``path`` (its directory) until the block ends."""
    try:
        descriptor = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as problem:
        raise PlanError(f"{source}: cannot lock the plan's directory: {problem.strerror}") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # released when the descriptor closes, even on a crash
        yield
    finally:
        os.close(descriptor)


def remove_dead_temps(directory: Path) -> None:
    """Remove the temporary files of writers killed in ``directory``; the caller holds ``plan_lock``."""
    remove_stray_temps(directory, ["*.yaml"])
