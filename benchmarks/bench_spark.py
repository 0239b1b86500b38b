"""The Spark engine against the embedded store, each measured in the same run on the same data.

Usage: python benchmarks/bench_spark.py [--scale 1.0] [--workdir DIR] [--keep]

Prints:
  1. ingest throughput of 1,000,000 logged responses (64 segments): Spark local[2] (``promptops ingest --engine
     spark``) against the embedded ingest with ``--workers 2``, as responses per second and their ratio; Spark's
     fixed start-up cost (a JVM and a session running a trivial job) is measured apart and left out of its rate
  2. the rates query for one rollout (by arm) over a 10,000,000-response lake, on DuckDB (``--store LAKE``)
     and on Spark (session already running), best of 3 each
--scale multiplies both sizes (e.g. 0.05 for a quick check). Every run is a child process or a timed call in
this one; the machine's load average is printed with the figures, since both engines share its cores.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import response_logs

ROOT = Path(__file__).resolve().parents[1]
SEGMENTS = 64  # about 40 MB each: a segment is one task, read whole by binaryFile
POOL = 20_000
REPEATS = 3
STARTUP = (
    "from promptops.spark.session import spark_session\n"
    "spark = spark_session('local[2]')\n"
    "spark.range(1000).selectExpr('sum(id)').collect()\n"
)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--scale", type=float, default=1.0)
    options.add_argument("--workdir", type=Path, default=None)
    options.add_argument("--keep", action="store_true")
    args = options.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-spark-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        run(work, args.scale)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def run(work: Path, scale: float) -> None:
    responses = int(1_000_000 * scale)
    project = work / "project"
    logs = project / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    if not (project / "versions").exists():
        shutil.copytree(ROOT / "versions", project / "versions")
    per = responses // SEGMENTS
    for i in range(SEGMENTS):
        path = logs / f"part-{i}.jsonl"
        if not path.exists():
            response_logs.write(path, per, pool=POOL, seed=100 + i)
    total = per * SEGMENTS
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    embedded = _timed(["ingest", str(logs), "--store", str(work / "store.duckdb"), "--workers", "2"], project)
    startup = _timed_python(STARTUP)
    lake = work / "lake"
    shutil.rmtree(lake, ignore_errors=True)
    spark = _timed(
        ["ingest", str(logs), "--engine", "spark", "--spark-master", "local[2]", "--store", str(lake)], project
    )
    spark_work = max(spark - startup, 1e-9)
    print(f"1. ingest of {total:,} responses ({SEGMENTS} segments)")
    print(f"   embedded, --workers 2: {embedded:8.1f} s  {total / embedded:10,.0f} responses/s")
    print(f"   Spark local[2]:        {spark:8.1f} s  of which start-up {startup:.1f} s (measured apart)")
    print(f"   Spark without start-up:{spark_work:8.1f} s  {total / spark_work:10,.0f} responses/s")
    print(f"   ratio Spark / embedded (throughput, start-up excluded): {embedded / spark_work:.2f}")
    print(f"   ratio with start-up: {embedded / spark:.2f}")

    big = work / "lake10"
    copies = 10
    _replicate(lake, big, copies)
    print(f"2. rates for one rollout by arm over {total * copies:,} responses (a lake of {copies} copies)")
    duck = _rates_duckdb(big)
    on_spark, session = _rates_spark(big)
    print(f"   DuckDB --store LAKE: {duck * 1000:8.0f} ms (best of {REPEATS})")
    print(f"   Spark local[2]:      {on_spark * 1000:8.0f} ms (best of {REPEATS}; session start-up {session:.1f} s)")
    print(f"   ratio Spark / DuckDB: {on_spark / duck:.1f}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


def _timed(args: list[str], project: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "promptops", "--root", str(project), *args], capture_output=True, text=True
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.startswith("promptops:")]
        raise SystemExit(f"promptops {' '.join(args)} exited {done.returncode}: {' | '.join(said[-5:])}")
    return elapsed


def _timed_python(program: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", program], check=True, capture_output=True)
    return time.perf_counter() - start


def _replicate(lake: Path, target: Path, copies: int) -> None:
    """``copies`` copies of the lake's responses, each with its own ids and a later week: the same rows a
    store ten times as large would hold, without parsing ten times as much."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if target.exists():
        return
    for path in sorted((lake / "responses").rglob("*.parquet")):
        table = pq.read_table(path)
        for k in range(copies):
            shifted = table.set_column(
                table.schema.get_field_index("response_id"),
                "response_id",
                pc.binary_join_element_wise(table["response_id"], pa.scalar(f"-{k}"), ""),
            )
            shifted = shifted.set_column(
                shifted.schema.get_field_index("ts"),
                "ts",
                pc.add(shifted["ts"], pa.scalar(timedelta(days=7 * k), pa.duration("us"))),
            )
            day = path.parent.name.split("=", 1)[1]
            moved = (pa.scalar(day).cast(pa.date32()).as_py() + timedelta(days=7 * k)).isoformat()
            out = target / "responses" / path.parent.parent.name / f"day={moved}" / f"copy{k}-{path.name}"
            out.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(shifted, out)
    for table in ("diagnostics", "slices"):  # rates of one rollout by arm read the diagnostics for the top lists
        for path in sorted((lake / table).rglob("*.parquet")):
            out = target / path.relative_to(lake)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, out)


def _query() -> Any:
    from promptops.store import RatesQuery

    return RatesQuery("review-result", by=("arm",), rollout_id="review-v7")


def _rates_duckdb(lake: Path) -> float:
    from promptops.store import open_parquet, rates

    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        con = open_parquet(lake, display="lake")
        report = rates(con, _query())
        best = min(best, time.perf_counter() - start)
        con.close()
        assert report.groups
    return best


def _rates_spark(lake: Path) -> tuple[float, float]:
    from promptops.spark.session import spark_session
    from promptops.spark.views import open_lake
    from promptops.store import rates

    start = time.perf_counter()
    spark = spark_session("local[2]")
    spark.range(1).count()
    session = time.perf_counter() - start
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        con = open_lake(spark, str(lake), display="lake")
        report = rates(con, _query())  # type: ignore[arg-type]  # the DuckDB-like connection on Spark
        best = min(best, time.perf_counter() - start)
        con.close()
        assert report.groups
    spark.stop()
    return best, session


if __name__ == "__main__":
    main()
