"""Instructions per parse, by class of answer, against a baseline checkout: what a timer on a shared machine
cannot tell apart reliably.

    python benchmarks/bench_parse_instructions.py --baseline /path/to/other/checkout [--per-class 200]

Needs valgrind. Each class of benchmarks/corpus.py's answers (clean, with a defect, wrapped in prose, fences or
think blocks, other malformed) is parsed once to warm the caches, then once more under callgrind, which counts
only inside the measured loop (``--toggle-collect`` on the C function that drives it). The baseline is any other
checkout with its C extension built (for instance ``git worktree add --detach /tmp/base main``); both use this
checkout's corpus.

    python benchmarks/bench_parse_instructions.py --peers 2000

counts instead the parser and bench_parse's contenders (orjson alone, orjson + jsonschema-rs, orjson + pydantic,
finding by finding) on benchmarks/corpus_independent.py's first answers: ratios no machine load moves (in time,
interpreted Python does worse than its count says).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLASSES = ("clean", "defect", "wrapped", "malformed")


def classify(raw: bytes, kind: str) -> str:
    """The record's class: corpus.py's kind, with the answers wrapped around one object set apart."""
    if kind == "malformed" and raw.startswith((b"Here is", b"<think>")):
        return "wrapped"
    return kind


def _child(kind: str, count: int) -> None:
    """Runs under callgrind with the tree to measure on PYTHONPATH: parse ``count`` answers of class ``kind``."""
    import collections

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import corpus

    from promptops import ChangedFiles, Parser, load_contract

    parser = Parser(load_contract(ROOT, "review-result"))
    records = [
        (r.raw, ChangedFiles(r.changed_files)) for r in corpus.stream(count * 60) if classify(r.raw, r.kind) == kind
    ]
    records = records[:count]

    def parse(record: tuple[bytes, ChangedFiles]) -> object:
        return parser.parse(record[0], record[1])

    for record in records:  # warm: the version table, the fast path's guess
        parse(record)
    print(len(records), file=sys.stderr)
    collections.deque(map(parse, records), maxlen=0)  # counted: callgrind collects inside deque_extend only


def _peer_child(name: str, count: int) -> None:
    """Runs under callgrind: one contender of bench_parse over ``count`` answers of the independent corpus."""
    import collections

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_parse
    import corpus_independent
    import jsonschema_rs
    import orjson

    from promptops import ChangedFiles, Parser, SchemaVersion, load_contract

    contract = load_contract(ROOT, "review-result")
    parser = Parser(contract)
    item_schema = contract.shape(SchemaVersion(1, 0)).schema["properties"]["findings"]["items"]
    records = corpus_independent.build(count)

    def promptops_parse(record: object) -> object:
        return parser.parse(record.raw, ChangedFiles(record.changed_files))  # type: ignore[attr-defined]

    runs = {
        "parser": promptops_parse,
        "orjson": lambda record: orjson.loads(record.raw) if record.kind != "wrapped" else None,
        "jsonschema-rs": bench_parse._peer(jsonschema_rs.Draft7Validator(item_schema).is_valid),
        "pydantic": bench_parse._peer(bench_parse._pydantic_validator()),
    }
    run = runs[name]
    for record in records:  # warm, not counted
        run(record)
    print(len(records), file=sys.stderr)
    collections.deque(map(run, records), maxlen=0)


def _instructions(tree: Path, kind: str, count: int) -> tuple[int, int]:
    """(instructions, answers parsed) for one class in one tree."""
    with tempfile.TemporaryDirectory() as scratch:
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={scratch}/out",
            "--collect-atstart=no",
            "--toggle-collect=deque_extend",
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            kind,
            "--per-class",
            str(count),
        ]
        env = {**os.environ, "PYTHONPATH": str(tree)}
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    collected = re.search(r"Collected : ([0-9]+)", done.stderr)
    parsed = re.search(r"^([0-9]+)$", done.stderr, re.MULTILINE)
    if collected is None or parsed is None:
        raise SystemExit(f"callgrind gave no count for {kind} in {tree}: {done.stderr[-500:]}")
    return int(collected.group(1)), int(parsed.group(1))


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--baseline", type=Path, help="another checkout to compare with")
    options.add_argument("--per-class", type=int, default=200)
    options.add_argument("--classes", default=",".join(CLASSES), help="comma-separated, of " + ", ".join(CLASSES))
    options.add_argument("--peers", type=int, metavar="N", help="count bench_parse's contenders on N answers")
    options.add_argument("--child", help=argparse.SUPPRESS)
    args = options.parse_args()
    if args.child in CLASSES:
        _child(args.child, args.per_class)
        return
    if args.child:
        _peer_child(args.child, args.per_class)
        return
    if args.peers:
        print(f"instructions per answer (callgrind), the first {args.peers} answers of corpus_independent.py")
        counts = {}
        for name in ("parser", "orjson", "jsonschema-rs", "pydantic"):
            instructions, parsed = _instructions(ROOT, name, args.peers)
            counts[name] = instructions / parsed
            ratio = "" if name == "parser" else f"   parser against it: {counts[name] / counts['parser']:.2f}"
            print(f"  {name:<14}{counts[name]:>12,.0f}{ratio}", flush=True)
        return
    trees = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    print(f"instructions per answer (callgrind), {args.per_class} answers per class")
    print(f"  {'class':<10}" + "".join(f"{name:>14}" for name in trees) + ("     change" if args.baseline else ""))
    for kind in args.classes.split(","):
        per: dict[str, float] = {}
        for name, tree in trees.items():
            instructions, parsed = _instructions(tree, kind, args.per_class)
            per[name] = instructions / parsed
        row = f"  {kind:<10}" + "".join(f"{per[name]:>14,.0f}" for name in trees)
        if args.baseline:
            row += f"  {per['this'] / per['baseline'] - 1:+9.1%}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
