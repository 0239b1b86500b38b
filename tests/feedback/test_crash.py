"""A feedback ingest killed by SIGKILL, then run again, leaves exactly what a clean run leaves (real processes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.feedback.events import STORE, event, write_lines
from tests.helpers import REPO_ROOT

EVENTS = 30_000
BATCH = 500


def _promptops(project: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "promptops", *args],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


def _stored(path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], list[tuple[object, ...]]]:
    """(events less how they were batched, batches whose row count disagrees with the table, each finding's kept
    latest outcome)."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        events = con.execute("SELECT * EXCLUDE (batch_id) FROM feedback ORDER BY source, event_id").fetchall()
        outcomes = con.execute("SELECT * FROM finding_outcomes ORDER BY ALL").fetchall()
        torn = con.execute(
            """SELECT b.batch_id FROM batches b LEFT JOIN (SELECT batch_id, count(*) n FROM feedback GROUP BY ALL) f
               USING (batch_id) WHERE coalesce(f.n, 0) != b.feedback"""
        ).fetchall()
    finally:
        con.close()
    return events, torn, outcomes


@pytest.mark.slow  # a killed ingest and two full ones
def test_sigkill_mid_feedback_ingest_then_rerun_equals_a_clean_run(project: Path, tmp_path: Path) -> None:
    write_lines(project / "feedback" / "f.jsonl", (event(i, f"F{i % 3}", f"r{i}") for i in range(EVENTS)))
    wal = project / (STORE + ".wal")
    writer = _promptops(project, "feedback", "ingest", "feedback", "--batch-size", str(BATCH))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and writer.poll() is None:  # kill once several batches are committed
        if wal.exists() and wal.stat().st_size > 400_000:
            break
        time.sleep(0.005)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    assert writer.returncode == -signal.SIGKILL, "ingest finished before it could be killed; write more events"
    events, torn, _ = _stored(project / STORE)
    assert torn == []
    assert 0 < len(events) < EVENTS and len(events) % BATCH == 0

    rerun = _promptops(project, "feedback", "ingest", "feedback", "--batch-size", str(BATCH), "--format", "json")
    out, err = rerun.communicate(timeout=120)
    assert (rerun.returncode, err) == (0, "")
    assert f'"inserted": {EVENTS - len(events)}' in out

    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "versions").symlink_to(REPO_ROOT / "versions", target_is_directory=True)
    (clean / "feedback").symlink_to(project / "feedback", target_is_directory=True)
    once = _promptops(clean, "feedback", "ingest", "feedback")
    assert once.wait(timeout=120) == 0
    assert _stored(project / STORE) == _stored(clean / STORE)
