"""The Spark lake after compaction against the embedded store, and ingest into a full lake against an empty one.

Usage: python benchmarks/bench_lake.py [--scale 1.0] [--rounds 5] [--workdir DIR] [--keep]

Builds (once per --workdir; cached when kept):
  - a DuckDB store of 10,000,000 generated responses over 60 days (bench_store's generator) with diagnostics;
  - a lake holding the same rows the way a daily ingest leaves it: 16 segments a day, each a file per table
    and partition, with their commit markers (960 segments, about 2,900 files);
  - the same lake after ``compact`` (Spark local[2], target 512 MB).
Prints, as medians of --rounds paired rounds (the order rotates each round):
  1. ``rates`` for one rollout by arm (with top reasons) on the store, the compacted lake and the daily-ingest
     lake, all read by DuckDB (``--store``), and the ratio compacted lake / store (target <= 1.5);
  2. a Spark ingest of --new logged responses (default 100,000; the next days' logs) into the full lake and
     into an empty one, in one running session, and the ratio full / empty (target <= 1.2).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_store
import response_logs

from promptops.store import RatesQuery, Store, lake_files, open_parquet, rates

ROOT = Path(__file__).resolve().parents[1]
SEGMENTS_PER_DAY = 16
DAYS = 60  # bench_store's generator spreads its responses over 60 days


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--scale", type=float, default=1.0)
    options.add_argument("--rounds", type=int, default=5)
    options.add_argument("--new", type=int, default=100_000)
    options.add_argument("--workdir", type=Path, default=None)
    options.add_argument("--keep", action="store_true")
    args = options.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-lake-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        run(work, args.scale, args.rounds, args.new)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def run(work: Path, scale: float, rounds: int, new: int) -> None:
    from promptops.spark.session import spark_session

    count = max(100_000, int(10_000_000 * scale))
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    store = work / "store.duckdb"
    if not store.exists():
        with Store.open(store) as opened:
            bench_store._generate(opened.connection, count)
    daily = work / "lake-daily"
    if not daily.exists():
        _daily_lake(store, daily)
    spark = spark_session("local[2]")
    compacted = work / "lake-compacted"
    if not compacted.exists():
        from promptops.spark.compact import compact

        shutil.copytree(daily, work / "lake-compacting")
        started = time.perf_counter()
        report = compact(spark, (work / "lake-compacting").as_posix(), before=date(9999, 1, 1))
        print(f"compaction: {len(report.compacted)} partitions in {time.perf_counter() - started:.0f} s")
        (work / "lake-compacting").rename(compacted)
    files = {name: _live_count(path) for name, path in (("daily", daily), ("compacted", compacted))}
    print(f"lakes: {count:,} responses; live files: daily-ingest {files['daily']:,}, compacted {files['compacted']:,}")

    query = RatesQuery("review-result", by=("arm",), rollout_id="rollout-07")
    readers = {
        "store": lambda: _rates_store(store, query),
        "compacted lake": lambda: _rates_lake(compacted, query),
        "daily-ingest lake": lambda: _rates_lake(daily, query),
    }
    timings = _paired(readers, rounds)
    print(f"1. rates for one rollout by arm, DuckDB, medians of {rounds} paired rounds")
    for name, values in timings.items():
        print(f"   {name:18} {statistics.median(values) * 1000:8.1f} ms")
    ratio = statistics.median(c / s for c, s in zip(timings["compacted lake"], timings["store"], strict=True))
    print(f"   ratio compacted lake / store: {ratio:.2f} (target <= 1.5)")

    parts = max(4, new // 25_000)  # segments of at most 25,000 responses (about 55 MB; docs/spark.md: < 256 MB)
    logs = work / ("new-logs" if new == 100_000 else f"new-logs-{new}")  # cached per size
    if not logs.exists():
        logs.mkdir()
        for i in range(parts):
            response_logs.write(logs / f"part-{i:03}.jsonl", new // parts, pool=20_000, seed=500 + i)
    project = work / "project"
    if not project.exists():
        shutil.copytree(ROOT / "versions", project / "versions")
    for _ in range(3):  # warm-up: the executors' Python workers and the JVM's compiled code (runs keep
        _ingest(spark, project, logs, work / "lake-empty", keep=False)  # getting faster for a few runs)
    ingests = {
        "into the full lake": lambda: _ingest(spark, project, logs, daily, keep=True),
        "into an empty lake": lambda: _ingest(spark, project, logs, work / "lake-empty", keep=False),
    }
    timings = _paired(ingests, rounds)
    print(f"2. Spark ingest of {new:,} new responses (local[2], session running), medians of {rounds} rounds")
    for name, values in timings.items():
        print(f"   {name:18} {statistics.median(values):8.1f} s")
    full, empty = timings["into the full lake"], timings["into an empty lake"]
    ratio = statistics.median(f / e for f, e in zip(full, empty, strict=True))
    print(f"   ratio full / empty: {ratio:.2f} (target <= 1.2)")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    spark.stop()


def _paired(calls: dict[str, Any], rounds: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {name: [] for name in calls}
    names = list(calls)
    for round_ in range(rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            started = time.perf_counter()
            timed = calls[name]()  # a call may time its own part (and leave its clean-up out)
            found[name].append(timed if isinstance(timed, float) else time.perf_counter() - started)
    return found


def _rates_store(path: Path, query: RatesQuery) -> None:
    with Store.open(path, read_only=True) as store:
        assert rates(store.connection, query).groups


def _rates_lake(path: Path, query: RatesQuery) -> None:
    con = open_parquet(path, display="lake")
    try:
        assert rates(con, query).groups
    finally:
        con.close()


def _ingest(spark: Any, project: Path, logs: Path, lake: Path, *, keep: bool) -> float:
    """The time of one ingest of ``logs`` into ``lake``; afterwards the lake is put back as it was (the new
    segments' files and markers removed), so every round ingests the same responses into the same lake."""
    from promptops.spark.ingest import ingest_to_lake
    from promptops.spark.setup import ParserSetup

    fs, base = lake_files.filesystem(lake.as_posix())
    before = lake_files.read_state(fs, base).segments if lake.exists() else set()
    relative = lambda path: path.resolve().relative_to(project.resolve().parent).as_posix()  # noqa: E731
    setup = ParserSetup.from_project(project)
    started = time.perf_counter()
    report = ingest_to_lake(spark, [str(logs)], lake.as_posix(), setup, relative=relative)
    elapsed = time.perf_counter() - started
    assert report.inserted > 0
    if not keep:
        shutil.rmtree(lake)
        return elapsed
    added = lake_files.read_state(fs, base).segments - before
    for path in list(lake.rglob("seg-*.parquet")):
        if path.name[4:].rsplit("_", 1)[0] in added:
            path.unlink()
    for sha in added:
        (lake / lake_files.SEGMENTS_DIR / f"{sha}.json").unlink()
    return elapsed


def _daily_lake(store: Path, lake: Path) -> None:
    """The store's rows as a daily ingest writes them: per day, SEGMENTS_PER_DAY segments in time order, each
    one file per table and partition named after its (made-up) sha256, then its marker."""
    import duckdb

    from promptops.store.ddl import TABLE_COLUMNS

    scratch = lake.with_name(lake.name + "-scratch")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    con = duckdb.connect(str(store), read_only=True)
    segment = f"(CAST(epoch_us(ts) // ({86400 * 1_000_000 // SEGMENTS_PER_DAY}) AS BIGINT))"
    tables = {
        "responses": (
            "SELECT {cols}, contract, CAST(ts AS DATE) AS day, {seg} AS seg FROM responses",
            ("contract", "day", "seg"),
        ),
        "diagnostics": (
            "SELECT {cols}, 'review-result' AS contract, CAST(ts AS DATE) AS day, {seg} AS seg FROM diagnostics",
            ("contract", "day", "seg"),
        ),
    }
    for table, (select, partitions) in tables.items():
        cols = ", ".join(name for name, _ in TABLE_COLUMNS[table] if name != "contract")
        target = (scratch / table).as_posix()
        con.execute(
            f"COPY ({select.format(cols=cols, seg=segment)}) TO '{target}' "
            f"(FORMAT parquet, PARTITION_BY ({', '.join(partitions)}))"
        )
    segments: set[int] = set()
    for path in sorted(scratch.rglob("*.parquet")):
        parts = dict(part.split("=", 1) for part in path.relative_to(scratch).parts[1:-1])
        seg = int(parts["seg"])
        segments.add(seg)
        out = lake / path.relative_to(scratch).parts[0] / f"contract={parts['contract']}" / f"day={parts['day']}"
        out.mkdir(parents=True, exist_ok=True)
        path.rename(out / f"seg-{_sha(seg)}_0.parquet")
    slices = lake / "slices" / "contract=review-result"
    slices.mkdir(parents=True)
    cols = ", ".join(name for name, _ in TABLE_COLUMNS["slices"] if name != "contract")
    first = min(segments)
    con.execute(f"COPY (SELECT {cols} FROM slices) TO '{(slices / f'seg-{_sha(first)}_0.parquet').as_posix()}'")
    con.close()
    shutil.rmtree(scratch)
    markers = lake / lake_files.SEGMENTS_DIR
    markers.mkdir()
    for seg in segments:
        (markers / f"{_sha(seg)}.json").write_text(json.dumps({"source": f"segment-{seg}"}))
    (lake / lake_files.LAYOUT_FILE).write_text(json.dumps({"layout": lake_files.LAYOUT}))


def _sha(seg: int) -> str:
    return hashlib.sha256(f"segment-{seg}".encode()).hexdigest()


def _live_count(lake: Path) -> int:
    fs, base = lake_files.filesystem(lake.as_posix())
    state = lake_files.read_state(fs, base)
    return sum(len(lake_files.live_files(fs, base, table, state)) for table in lake_files.PARTITIONS)


if __name__ == "__main__":
    main()
