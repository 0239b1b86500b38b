"""The whole ``promptops ingest`` process against the parser alone on the same responses, one process each.

Usage: python benchmarks/bench_ingest.py [--responses 100000] [--runs 5] [--against TREE]

Each run times, back to back: the parser alone in this process on exactly the logged responses (str in,
ParseOutcome out; the floor), then ``promptops ingest LOG --workers 0`` as a child process into a fresh
store (start-up, read, decode, parse, store, exit), and, with ``--against``, the same command with another
source tree first on PYTHONPATH (a baseline from the same run). Prints each run's ratio (parser time /
ingest time) and the medians, with the ingest process's peak RSS. Target: ingest >= 0.8x the parser alone.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import response_logs

from promptops import ChangedFiles
from promptops.store import ParserCache

ROOT = Path(__file__).resolve().parents[1]
POOL = 50_000


def _ingest(tree: Path, log: Path, store: Path) -> tuple[float, int]:
    """Wall time of one ``promptops ingest`` child and its own peak RSS (KiB, from wait4)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "promptops", "--root", str(ROOT), "ingest", str(log), "--store", str(store)]
    started = time.perf_counter()
    child = subprocess.Popen(
        [*command, "--workers", "0"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"promptops ingest failed (exit {child.returncode})")
    store.unlink()
    return seconds, usage.ru_maxrss


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--responses", type=int, default=100_000)
    options.add_argument("--runs", type=int, default=5)
    options.add_argument("--against", type=Path, help="another source tree, measured in the same runs")
    args = options.parse_args()
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        log = work / "log.jsonl"
        size = response_logs.write(log, args.responses, pool=POOL, seed=3)
        pool = min(POOL, args.responses)
        responses = [(r["raw"], r["changed_files"]) for r in response_logs.records(pool, pool=pool, seed=3)]
        parser = ParserCache.for_project(ROOT).slot("review-result", None, None)
        assert parser is not None
        parse = parser[0].parse
        trees = {"this tree": ROOT} | ({"against": args.against.resolve()} if args.against else {})
        ratios: dict[str, list[float]] = {name: [] for name in trees}
        seconds: dict[str, list[float]] = {name: [] for name in ["parser", *trees]}
        peaks: dict[str, list[int]] = {name: [] for name in trees}
        print(f"{args.responses:,} responses, {size / 1e6:,.0f} MB of JSONL; ratio = parser time / ingest time")
        for run in range(args.runs):
            started = time.perf_counter()
            for i in range(args.responses):
                raw, changed = responses[i % pool]
                parse(raw, ChangedFiles(changed))
            parsed = time.perf_counter() - started
            seconds["parser"].append(parsed)
            line = [f"run {run + 1}: parser {parsed:.2f} s"]
            for name, tree in trees.items():
                took, peak = _ingest(tree, log, work / "store.duckdb")
                seconds[name].append(took)
                peaks[name].append(peak)
                ratios[name].append(parsed / took)
                line.append(f"{name} {took:.2f} s ({parsed / took:.2f}x)")
            print("   " + "; ".join(line))
        print(f"medians (load {os.getloadavg()[0]:.1f}):")
        for name in trees:
            print(
                f"   {name}: ingest {statistics.median(seconds[name]):.2f} s, "
                f"{statistics.median(ratios[name]):.2f}x the parser alone "
                f"({statistics.median(seconds['parser']):.2f} s), peak RSS {max(peaks[name]) / 1024:,.0f} MiB   "
                "(target >= 0.8)"
            )


if __name__ == "__main__":
    main()
