"""An ingest builds Arrow arrays from Python values: pandas, installed by the test extra, must not be loaded.
A command that reads a DuckDB store (rates, report, the rollout gate) needs no Arrow at all: pyarrow and numpy
cost more start-up than the whole gate's work (Parquet exports and the lake load them when asked for)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

_RUN = (
    "import json, sys; from promptops.cli import run; code = run(sys.argv[1:]); "
    "print(json.dumps({'code': code, 'pandas': 'pandas' in sys.modules}))"
)
_READ = (
    "import json, sys; from promptops.cli import run; code = run(sys.argv[1:]); "
    "print(json.dumps({'code': code, 'loaded': sorted(m for m in ('pyarrow', 'numpy') if m in sys.modules)}))"
)


def test_an_ingest_never_imports_pandas(project: Path, write_log: Callable[..., Path]) -> None:
    assert importlib.util.find_spec("pandas") is not None  # installed: pyarrow would import it if asked
    log = write_log(project / "logs" / "day.jsonl", 300)
    store = project / "diagnostics.duckdb"
    for _ in range(2):  # a fresh store, then one with every id stored (the duplicate lookup)
        done = subprocess.run(
            [sys.executable, "-c", _RUN, "--root", str(project), "ingest", str(log), "--store", str(store), "--rescan"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert json.loads(done.stdout.splitlines()[-1]) == {"code": 0, "pandas": False}, done.stderr


def test_reading_a_store_never_imports_pyarrow(project: Path, write_log: Callable[..., Path]) -> None:
    log = write_log(project / "logs" / "day.jsonl", 50)
    store = project / "diagnostics.duckdb"
    run = [sys.executable, "-c", _RUN, "--root", str(project), "ingest", str(log), "--store", str(store)]
    assert subprocess.run(run, capture_output=True, check=False).returncode == 0
    rates = ["rates", "--contract", "review-result", "--store", str(store)]
    done = subprocess.run(
        [sys.executable, "-c", _READ, "--root", str(project), *rates], capture_output=True, text=True, check=False
    )
    assert json.loads(done.stdout.splitlines()[-1]) == {"code": 0, "loaded": []}, done.stderr
