"""OTLP ingest within bounds: a line over the JSONL path's cap is a bad record read in bounded memory (also when
a small .gz inflates to it), and a killed ingest leaves no copy of the traces behind. The real CLI in its own
process, a real DuckDB file; memory is measured with getrusage, never by time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import zlib
from itertools import cycle
from pathlib import Path

import duckdb
import pytest

from promptops.store.logs import MAX_LINE
from tests.helpers import REPO_ROOT
from tests.otlp.sdk import emit, request_lines, responses

pytestmark = pytest.mark.slow  # lines past the cap, and a killed ingest

_MEASURED = """
import resource, sys
from promptops.cli import run
code = run(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(code)
"""
_CLI = "import sys; from promptops.cli import run; sys.exit(run(sys.argv[1:]))"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "versions").symlink_to(REPO_ROOT / "versions", target_is_directory=True)
    (tmp_path / "rollout").symlink_to(REPO_ROOT / "rollout", target_is_directory=True)  # the plan of review-1.1
    (tmp_path / "logs").mkdir()
    return tmp_path


def _good_lines(prefix: str, records: int = 4, per_line: int = 6) -> tuple[list[bytes], list[str]]:
    """Export requests of model calls (and the other spans around them) from the real SDK, and their ids."""
    chosen = [{**r, "response_id": f"{prefix}-{i}"} for i, r in zip(range(records), cycle(responses()))]
    spans = emit(chosen)[:-1]  # not the model call that lost its output
    return [line.encode() for line in request_lines(spans, per_line)], [r["response_id"] for r in chosen]


def _peak_rss_mib(project: Path, log: Path, store: str) -> tuple[int, str, float]:
    """The real CLI in a fresh process: exit code, stderr and peak resident memory in MiB."""
    completed = subprocess.run(
        [sys.executable, "-c", _MEASURED, "--root", str(project), "ingest", str(log), "--input-format",
         "otlp-json", "--workers", "0", "--store", str(project / store)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return completed.returncode, completed.stderr, int(completed.stdout.splitlines()[-1]) / 1024


def _stored(path: Path) -> list[str]:
    with duckdb.connect(str(path), read_only=True) as db:
        return sorted(row[0] for row in db.execute("select response_id from responses").fetchall())


def test_a_line_over_the_cap_is_a_bad_record_read_in_bounded_memory(project: Path) -> None:
    lines, ids = _good_lines("good")
    spans = json.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"]
    logs = project / "logs"
    (logs / "small.json").write_bytes(lines[0] + b"\n")
    # Just over the cap: one request of many copies of a model-call span (the old reader decoded it whole).
    one = json.dumps(spans[0]).encode()
    with (logs / "big.json").open("wb") as big:
        big.write(lines[0] + b"\n" + b'{"resourceSpans": [{"scopeSpans": [{"spans": [' + one)
        for _ in range((MAX_LINE + (4 << 20)) // (len(one) + 1)):
            big.write(b"," + one)
        big.write(b"]}]}]}\n" + lines[1] + b"\n")
    # A 1 MB .gz that inflates to one line 16 times the cap, between two good ones.
    blob = b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x", "attributes": [{"key": "blob", "value": '
    with (logs / "bomb.jsonl.gz").open("wb") as bomb:
        deflate = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
        bomb.write(deflate.compress(lines[0] + b"\n" + blob + b'{"stringValue": "'))
        block = b"a" * (1 << 20)
        for _ in range(16 * MAX_LINE >> 20):
            bomb.write(deflate.compress(block))
        bomb.write(deflate.compress(b'"}}]}]}]}]}\n' + lines[1] + b"\n") + deflate.flush())
    assert (logs / "bomb.jsonl.gz").stat().st_size < 2 << 20

    code, err, baseline = _peak_rss_mib(project, logs / "small.json", "small.duckdb")
    assert (code, err) == (0, "")
    for name in ("big.json", "bomb.jsonl.gz"):
        code, err, peak = _peak_rss_mib(project, logs / name, f"{name}.duckdb")
        assert (code, err) == (2, f"promptops: logs/{name}:2: line longer than 32 MiB\n")
        assert _stored(project / f"{name}.duckdb") == sorted(ids)
        # The old reader held the whole line and its decoded spans: +250 MB here, +4 GB for a 2 GB line.
        assert peak - baseline < 64, (name, baseline, peak)


def _reading(pid: int, path: Path) -> bool:
    """Whether process ``pid`` has ``path`` open and has read some of it (Linux's /proc)."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        for fd in fds.iterdir():
            if os.readlink(fd) == str(path):
                position = (Path(f"/proc/{pid}/fdinfo") / fd.name).read_text().split()[1]
                return int(position) > 0
    except OSError:  # the process is starting or gone, or the descriptor closed meanwhile
        return False
    return False


def test_a_killed_ingest_leaves_no_copy_of_the_traces(project: Path, tmp_path: Path) -> None:
    lines, ids = _good_lines("kill", records=3_000, per_line=300)
    trace = project / "logs" / "traces.json"
    trace.write_bytes(b"".join(line + b"\n" for line in lines))
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    environment = {**os.environ, "TMPDIR": str(temporary)}
    command = [sys.executable, "-c", _CLI, "--root", str(project), "ingest", str(trace), "--input-format", "otlp-json",
               "--workers", "0", "--batch-size", "500"]  # fmt: skip
    process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while process.poll() is None and not _reading(process.pid, trace):
            time.sleep(0.005)  # polls; nothing is asserted about time
        process.send_signal(signal.SIGKILL)
    finally:
        process.wait()
    assert process.returncode == -signal.SIGKILL, "the ingest ended before it could be killed"
    assert list(temporary.iterdir()) == []
    completed = subprocess.run(command, env=environment, capture_output=True, text=True, check=False)
    assert (completed.returncode, completed.stderr) == (0, "")
    assert list(temporary.iterdir()) == []
    assert _stored(project / ".promptops" / "diagnostics.duckdb") == sorted(ids)
