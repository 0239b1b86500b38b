"""Real processes against a real DuckDB file: SIGKILL mid-ingest, concurrent writers, lock timeouts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from tests.helpers import REPO_ROOT
from tests.store.messages import errors_only

STORE = ".promptops/diagnostics.duckdb"


def _promptops(project: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "promptops", *args],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )


def _run(project: Path, *args: str, timeout: float = 120) -> tuple[int, str, str]:
    process = _promptops(project, *args)
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def _snapshot(path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    """Everything stored except how it was batched."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        responses = con.execute("SELECT * EXCLUDE (batch_id) FROM responses ORDER BY response_id").fetchall()
        diagnostics = con.execute("SELECT * EXCLUDE (batch_id) FROM diagnostics ORDER BY response_id, seq").fetchall()
    finally:
        con.close()
    return responses, diagnostics


def _whole_batches(path: Path) -> tuple[int, int]:
    """(batches, responses); fails unless every batch is stored whole, with all of its diagnostics."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        mismatched = con.execute(
            """SELECT b.batch_id FROM batches b
               LEFT JOIN (SELECT batch_id, count(*) n FROM responses GROUP BY ALL) r USING (batch_id)
               LEFT JOIN (SELECT batch_id, count(*) n FROM diagnostics GROUP BY ALL) d USING (batch_id)
               WHERE coalesce(r.n, 0) != b.responses OR coalesce(d.n, 0) != b.diagnostics"""
        ).fetchall()
        assert mismatched == []
        orphans = con.execute(
            "SELECT count(*) FROM responses WHERE batch_id NOT IN (SELECT batch_id FROM batches)"
        ).fetchall()[0][0]
        assert orphans == 0
        assert con.execute("SELECT sum(n_diagnostics) = (SELECT count(*) FROM diagnostics) FROM responses").fetchall()[
            0
        ][0] in (True, None)
        return con.execute("SELECT count(*), coalesce(sum(responses), 0) FROM batches").fetchall()[0]
    finally:
        con.close()


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow  # killed ingests
@pytest.mark.parametrize("workers", ["0", "2"])
def test_sigkill_mid_ingest_then_rerun_gives_exactly_a_clean_runs_store(
    project: Path, write_log: Callable[..., Path], tmp_path: Path, workers: str
) -> None:
    log = write_log(project / "logs" / "big.jsonl", 12000, pool=600)
    wal = project / (STORE + ".wal")
    writer = _promptops(project, "ingest", "logs", "--batch-size", "150", "--workers", workers)
    deadline = time.monotonic() + 60
    # Kill once the write-ahead log shows several committed batches (a batch is about 50 KB of it).
    while time.monotonic() < deadline and writer.poll() is None:
        if wal.exists() and wal.stat().st_size > 400_000:
            break
        time.sleep(0.005)
    children = _children(writer.pid)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    assert writer.returncode == -signal.SIGKILL, "ingest finished before it could be killed; make the log bigger"
    assert len(children) >= int(workers)
    deadline = time.monotonic() + 10  # parser workers leave with their parent
    while any(_alive(child) for child in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [child for child in children if _alive(child)]
    batches, stored = _whole_batches(project / STORE)
    assert 0 < stored < 12000 and stored == batches * 150

    code, out, err = _run(project, "ingest", "logs", "--batch-size", "150", "--format", "json")
    assert (code, errors_only(err)) == (0, "")
    assert f'"inserted": {12000 - stored}' in out
    _whole_batches(project / STORE)

    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "versions").symlink_to(REPO_ROOT / "versions", target_is_directory=True)
    (clean / "logs").symlink_to(log.parent, target_is_directory=True)
    assert _run(clean, "ingest", "logs")[0] == 0
    assert _snapshot(project / STORE) == _snapshot(clean / STORE)
    assert log.exists()


@pytest.mark.slow  # concurrent processes
def test_two_concurrent_ingesters_wait_for_each_other_and_never_corrupt_the_store(
    project: Path, write_log: Callable[..., Path]
) -> None:
    write_log(project / "logs" / "a" / "a.jsonl", 2500, seed=1)
    write_log(project / "logs" / "b" / "b.jsonl", 2500, seed=2)
    first = _promptops(project, "ingest", "logs/a", "--batch-size", "200", "--lock-timeout", "120")
    second = _promptops(project, "ingest", "logs/b", "--batch-size", "200", "--lock-timeout", "120")
    results = [process.communicate(timeout=180) for process in (first, second)]
    assert (first.returncode, second.returncode) == (0, 0), results
    assert _whole_batches(project / STORE) == (26, 5000)
    # The file is sound: a third process reads it, and re-ingesting everything adds nothing.
    code, out, _ = _run(project, "ingest", "logs", "--rescan", "--format", "json")
    assert code == 0 and '"inserted": 0' in out and '"duplicates": 5000' in out
    code, out, _ = _run(project, "rates", "--contract", "review-result", "--format", "json")
    assert code == 0 and '"responses": 5000' in out


_HOLDER = """
import sys, time
from pathlib import Path
from promptops.store import Store
store = Store.open(Path(sys.argv[1]))
print("holding", flush=True)
time.sleep(float(sys.argv[2]))
store.close()
"""


def _hold(project: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(project / STORE), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
    return holder


@pytest.mark.slow  # concurrent processes
def test_a_writer_that_times_out_fails_with_one_clear_line_and_exit_3(
    project: Path, write_log: Callable[..., Path]
) -> None:
    write_log(project / "logs" / "a.jsonl", 50)
    holder = _hold(project, 30)
    try:
        started = time.monotonic()
        code, out, err = _run(project, "ingest", "logs", "--lock-timeout", "1")
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert code == 3 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"promptops: error: {STORE}: store is locked by another process (PID {holder.pid}); ")
    assert "gave up after 1 s" in err and waited >= 1
    assert _run(project, "ingest", "logs")[0] == 0  # nothing was half-written


@pytest.mark.slow  # concurrent processes
def test_a_waiting_writer_proceeds_once_the_lock_is_released(project: Path, write_log: Callable[..., Path]) -> None:
    write_log(project / "logs" / "a.jsonl", 50)
    holder = _hold(project, 1.5)
    code, out, err = _run(project, "ingest", "logs", "--lock-timeout", "60", "--format", "json")
    holder.wait()
    assert (code, errors_only(err)) == (0, "") and '"inserted": 50' in out
