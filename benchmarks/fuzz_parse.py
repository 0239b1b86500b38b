"""The parser's full adversarial run: generated inputs over every shipped contract and the hostile schemas (a
user's patterns that backtrack, bounds outside int64, uniqueItems, deep nesting, a 100,000-value enum), each
parsed with the fast path on and off; counts exceptions, differing outcomes and inputs over 0.5 s (all must be 0),
then times every 4 MiB shape.

    python benchmarks/fuzz_parse.py --inputs 1000000 [--seed 1]

The generators are the test suite's (tests/parsing/generators.py); the suite runs a small seeded slice of them.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from promptops import Parser
from tests.parsing import generators
from tests.parsing.invariants import _summary


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--inputs", type=int, default=1_000_000)
    options.add_argument("--seed", type=int, default=1)
    args = options.parse_args()
    scratch = tempfile.TemporaryDirectory()
    contracts = generators.contracts() + generators.hostile_contracts(Path(scratch.name))
    per_contract = args.inputs // len(contracts) + 1
    total = exceptions = differing = slow_inputs = 0
    slowest = 0.0
    start = time.perf_counter()
    for contract in contracts:
        parsers = [Parser(contract), Parser(contract, fast_path=False)]
        rng = random.Random(f"{args.seed}-{contract.name}")
        for raw, changed, request in generators.inputs(rng, contract, per_contract):
            total += 1
            summaries = []
            for parser in parsers:
                began = time.perf_counter()
                try:
                    if request is None:
                        outcome = parser.parse(raw, changed)
                    else:
                        outcome = parser.parse(raw, changed, schema_version=request[0], prompt_version=request[1])
                    summaries.append(_summary(outcome))
                except Exception as exc:  # counted, never expected
                    exceptions += 1
                    print(f"exception {exc!r} on {raw[:200]!r}", flush=True)
                    summaries.append(repr(exc))
                elapsed = time.perf_counter() - began
                slowest = max(slowest, elapsed)
                if elapsed > 0.5:
                    slow_inputs += 1
                    print(f"{elapsed:.2f} s on {raw[:200]!r}", flush=True)
            if summaries[0] != summaries[1]:
                differing += 1
                print(f"differing outcomes on {raw[:200]!r}", flush=True)
        print(f"{contract.name}: {total:,} inputs so far, {time.perf_counter() - start:.0f} s", flush=True)
    print(f"inputs {total:,}  parses {2 * total:,}  exceptions {exceptions}  differing outcomes {differing}")
    print(f"slowest parse {slowest:.3f} s, parses over 0.5 s: {slow_inputs}")
    worst_time = worst_memory = 0.0
    for contract in contracts[: len(generators.CONTRACTS)]:
        versions: dict[str, str] = {}
        if not contract.versions.schema:
            versions = {"schema_version": "1.0", "prompt_version": "1.0.0"}
        for kind in generators.HUGE_KINDS:
            text = generators.huge(kind, contract)
            for raw in (text, text.encode()):
                for fast_path in (True, False):
                    parser = Parser(contract, fast_path=fast_path)
                    began = time.perf_counter()
                    outcome = parser.parse(raw, generators.CHANGED, **versions)
                    elapsed = time.perf_counter() - began
                    tracemalloc.start()
                    parser.parse(raw, generators.CHANGED, **versions)
                    peak = tracemalloc.get_traced_memory()[1] / 2**20
                    tracemalloc.stop()
                    worst_time, worst_memory = max(worst_time, elapsed), max(worst_memory, peak)
                    print(f"  4 MiB {contract.name:22} {kind:9} {type(raw).__name__:5} fast={fast_path!s:5} "
                          f"{elapsed:6.3f} s {peak:7.1f} MiB  {outcome.reason}")  # fmt: skip
    print(f"worst 4 MiB input: {worst_time:.3f} s, {worst_memory:.1f} MiB allocated at peak")


if __name__ == "__main__":
    main()
