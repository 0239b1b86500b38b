"""The whole ``promptops ingest`` process against the parser alone on the same responses, one process each.

Usage: python benchmarks/bench_ingest.py [--responses 20000] [--runs 5] [--against TREE] [--steps]

Each run is one pair, alternating which side goes first: the parser alone in this process on exactly the
logged responses (str in, ParseOutcome out; the floor), and ``promptops ingest LOG --workers 0`` as a child
process into a fresh store (start-up, read, decode, parse, store, exit), with a one-record ingest beside it
so that start-up can be taken out: per response, ingest costs (ingest of N - ingest of one) / (N - 1).
With ``--against``, the same two ingests with another source tree first on PYTHONPATH join each run (a
baseline from the same run). Prints each run's ratios (parser time / ingest time, per response and whole
process) and their medians, wall clock and CPU time (user + sys of the child, this thread's CPU for the
parser: steadier than wall clock on a busy machine), with the ingest process's peak RSS. Target: per
response, ingest >= 0.8x the parser alone.

``--steps`` adds where an ingest's time goes: the same responses through the ingest's own functions in this
process, one step more per pass (CPU time of this thread; the store's write is DuckDB's, on its threads).
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
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import response_logs

from promptops import ChangedFiles
from promptops.store import ParserCache

ROOT = Path(__file__).resolve().parents[1]
POOL = 50_000


class Timing:
    def __init__(self, wall: float, cpu: float, peak_kib: int = 0) -> None:
        self.wall, self.cpu, self.peak_kib = wall, cpu, peak_kib


def _ingest(tree: Path, log: Path, store: Path) -> Timing:
    """Wall and CPU time of one ``promptops ingest`` child, and its own peak RSS (KiB, from wait4)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "promptops", "--root", str(ROOT), "ingest", str(log), "--store", str(store)]
    started = time.perf_counter()
    child = subprocess.Popen(
        [*command, "--workers", "0"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"promptops ingest failed (exit {os.waitstatus_to_exitcode(status)})")
    store.unlink()
    return Timing(seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def _parser(parse: Callable[..., object], responses: list[tuple[str, list[str]]], count: int) -> Timing:
    pool = len(responses)
    started, cpu = time.perf_counter(), time.thread_time()
    for i in range(count):
        raw, changed = responses[i % pool]
        parse(raw, ChangedFiles(changed))
    return Timing(time.perf_counter() - started, time.thread_time() - cpu)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--responses", type=int, default=20_000)
    options.add_argument("--runs", type=int, default=5)
    options.add_argument("--against", type=Path, help="another source tree, measured in the same runs")
    options.add_argument("--steps", action="store_true", help="also time the ingest's steps in this process")
    args = options.parse_args()
    if args.responses < 2:
        raise SystemExit("--responses must be at least 2")
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        log, one = work / "log.jsonl", work / "one.jsonl"
        size = response_logs.write(log, args.responses, pool=POOL, seed=3)
        with log.open("rb") as handle:
            one.write_bytes(handle.readline())
        pool = min(POOL, args.responses)
        responses = [(r["raw"], r["changed_files"]) for r in response_logs.records(pool, pool=pool, seed=3)]
        parser = ParserCache.for_project(ROOT).slot("review-result", None, None)
        assert parser is not None
        parse = parser[0].parse
        trees = {"this tree": ROOT} | ({"against": args.against.resolve()} if args.against else {})
        n = args.responses
        print(f"{n:,} responses, {size / 1e6:,.0f} MB of JSONL; ratio = parser time / ingest time")
        results: dict[str, dict[str, list[float]]] = {
            name: {k: [] for k in ("wall", "cpu", "whole", "start", "peak")} for name in trees
        }
        parser_times: dict[str, list[float]] = {"wall": [], "cpu": []}
        for run in range(args.runs):
            line = []
            sides: list[str] = ["parser", *trees]
            for side in sides if run % 2 == 0 else reversed(sides):  # alternate which side goes first
                if side == "parser":
                    floor = _parser(parse, responses, n)
                    parser_times["wall"].append(floor.wall / n)
                    parser_times["cpu"].append(floor.cpu / n)
                    continue
                tree = trees[side]
                whole, start = _ingest(tree, log, work / "store.duckdb"), _ingest(tree, one, work / "store.duckdb")
                kept = results[side]
                kept["wall"].append((whole.wall - start.wall) / (n - 1))
                kept["cpu"].append((whole.cpu - start.cpu) / (n - 1))
                kept["whole"].append(whole.wall)
                kept["start"].append(start.wall)
                kept["peak"].append(whole.peak_kib / 1024)
            for name in trees:
                kept = results[name]
                line.append(
                    f"{name} {kept['whole'][-1]:.2f} s (start-up {kept['start'][-1]:.2f} s): per response "
                    f"{parser_times['wall'][-1] / kept['wall'][-1]:.2f}x wall, "
                    f"{parser_times['cpu'][-1] / kept['cpu'][-1]:.2f}x CPU"
                )
            print(f"   run {run + 1}: parser {parser_times['wall'][-1] * n:.2f} s; " + "; ".join(line))
        print(f"medians of {args.runs} runs (load {os.getloadavg()[0]:.1f}); target >= 0.8x per response:")
        parser_wall, parser_cpu = _median(parser_times["wall"]), _median(parser_times["cpu"])
        print(f"   parser alone: {parser_wall * 1e6:.1f} us a response wall, {parser_cpu * 1e6:.1f} us CPU")
        for name, kept in results.items():
            wall_ratios = [p / i for p, i in zip(parser_times["wall"], kept["wall"], strict=True)]
            cpu_ratios = [p / i for p, i in zip(parser_times["cpu"], kept["cpu"], strict=True)]
            print(
                f"   {name}: ingest {_median(kept['wall']) * 1e6:.1f} us a response wall "
                f"({_median(kept['cpu']) * 1e6:.1f} us CPU): {_median(wall_ratios):.2f}x the parser per response "
                f"(CPU {_median(cpu_ratios):.2f}x); whole process {_median(kept['whole']):.2f} s = "
                f"{parser_wall * n / _median(kept['whole']):.2f}x; start-up {_median(kept['start']):.2f} s; "
                f"peak RSS {max(kept['peak']):,.0f} MiB"
            )
        if args.steps:
            import bench_ingest_steps

            bench_ingest_steps.report(log, ROOT, n)


if __name__ == "__main__":
    main()
