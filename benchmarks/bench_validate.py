"""``promptops validate --batch --format json`` against a bare orjson loop over the same records (the floor).

Usage: python benchmarks/bench_validate.py [--responses 100000] [--runs 5] [--against TREE]

The batch holds bench_parse's corpus (about 88% clean answers, 10% with a defect, 2% malformed or wrapped) as
JSONL records (response_id, raw, changed_files). Each run times, back to back, whole processes writing to
/dev/null: the floor, ``python -c`` reading the lines and, per record, ``orjson.loads`` of the record and of
its answer and ``orjson.dumps`` of an outcome line holding the answer; ``promptops validate`` from this tree
(metaschema verdicts cached: a warm run, as a user's second run is); and, with ``--against``, the same
command with another source tree first on PYTHONPATH. Prints each run's ratios (floor time / command time)
and their medians. Target: >= 0.45x the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus

ROOT = Path(__file__).resolve().parents[1]
FLOOR = """
import sys, orjson
out = open('/dev/null', 'wb')
with open(sys.argv[1], 'rb') as lines:
    for line in lines:
        record = orjson.loads(line)
        try:
            answer = orjson.loads(record['raw'])
        except orjson.JSONDecodeError:  # a malformed or wrapped answer
            answer = None
        out.write(orjson.dumps({'response_id': record.get('response_id'), 'outcome': 'accepted', 'reason': None,
                                'result': answer, 'diagnostics': []}) + b'\\n')
"""


def _timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        done = subprocess.run(command, env=env, stdout=sink, stderr=subprocess.PIPE, check=False)
    if done.returncode not in ((0,) if command[1] == "-c" else (0, 1, 2)):
        raise SystemExit(f"{command[:4]} failed (exit {done.returncode}): {done.stderr.decode()[-500:]}")
    return time.perf_counter() - started


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    options.add_argument("--responses", type=int, default=100_000)
    options.add_argument("--runs", type=int, default=5)
    options.add_argument("--against", type=Path, help="another source tree, measured in the same runs")
    args = options.parse_args()
    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        batch = work / "batch.jsonl"
        with batch.open("w") as out:
            for i, response in enumerate(corpus.stream(args.responses, 5)):
                record = {
                    "response_id": f"r-{i}",
                    "raw": response.raw.decode(),
                    "changed_files": response.changed_files,
                }
                out.write(json.dumps(record) + "\n")
        env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
        env.pop("PROMPTOPS_NO_TEMPLATE_CACHE", None)
        validate = ["-m", "promptops", "--root", str(ROOT), "validate", "--contract", "review-result"]
        commands = {"floor": [sys.executable, "-c", FLOOR, str(batch)]}
        trees = {"this tree": ROOT} | ({"against": args.against.resolve()} if args.against else {})
        for name in trees:
            commands[name] = [sys.executable, *validate, "--batch", str(batch), "--format", "json"]
        envs = {name: {**env, "PYTHONPATH": str(tree)} for name, tree in trees.items()} | {"floor": env}
        for name in trees:  # warm: bytecode and the metaschema verdicts
            _timed(commands[name], envs[name])
        seconds: dict[str, list[float]] = {name: [] for name in commands}
        print(f"{args.responses:,} records, {batch.stat().st_size / 1e6:,.0f} MB; ratio = floor time / command time")
        for run in range(args.runs):
            for name, command in commands.items():
                seconds[name].append(_timed(command, envs[name]))
            ratios = ", ".join(f"{n} {seconds['floor'][-1] / seconds[n][-1]:.2f}x" for n in trees)
            print(f"   run {run + 1}: floor {seconds['floor'][-1]:.2f} s; {ratios}")
        print(f"medians (load {os.getloadavg()[0]:.1f}):")
        floor = seconds["floor"]
        for name in trees:
            ratio = statistics.median(f / s for f, s in zip(floor, seconds[name], strict=True))
            print(
                f"   {name}: {statistics.median(seconds[name]):.2f} s, {ratio:.2f}x the floor "
                f"({statistics.median(floor):.2f} s)   (target >= 0.45)"
            )


if __name__ == "__main__":
    main()
