"""The CLI pauses Python's garbage collector while modules import and freezes what they made only in a process
that ``main`` runs: ``run`` in-process (tests, other callers) leaves the collector enabled and freezes nothing,
since it may run many times in one process."""

from __future__ import annotations

import gc
from pathlib import Path

from tests.conftest import Cli


def test_run_in_process_leaves_the_collector_enabled_and_nothing_frozen(cli: Cli, full_project: Path) -> None:
    frozen = gc.get_freeze_count()
    # A lazily loaded command (rollout) and one that imports the store's modules before it finds no store.
    code, _, _ = cli(full_project, "rollout", "--help")
    assert code == 0
    code, _, err = cli(full_project, "rates", "--contract", "review-result")
    assert code == 3 and "no diagnostics store here" in err
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
