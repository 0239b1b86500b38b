"""Benchmark the compatibility engine, and report its agreement with the peer registries.

    python benchmarks/bench_compat.py                 # classify review-result against 50 earlier versions
    python benchmarks/bench_compat.py --conformance   # agreement with shared/conformance/compat-vectors.json

The history starts from the shipped review-result 1.0 schema; each later minor adds an optional finding or
top-level field (some also reword descriptions), which is what a healthy major line looks like. The new
version is classified against all 50 (transitive within the major line). The target is under
1 s; the figure is printed with a ratio against a baseline measured in the same run (one python-jsonschema
metaschema check of the same schema), so runs on different machines can be compared. Prints only.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator

from promptops.compat import Change, classify_against, normalize
from promptops.compat.conformance import score
from promptops.core.versioning import SchemaVersion

REPO = Path(__file__).resolve().parents[1]
REVIEW_RESULT = REPO / "versions" / "review-result" / "schemas" / "1.0.json"
VECTORS = REPO / ".." / "shared" / "conformance" / "compat-vectors.json"
KINDS = (
    {"type": "string"},
    {"type": "integer", "minimum": 0},
    {"type": "boolean"},
    {"type": "array", "items": {"type": "string"}},
    {"type": "string", "enum": ["a", "b", "c"]},
)


def history(count: int) -> dict[SchemaVersion, dict[str, Any]]:
    """Versions 1.0 .. 1.count of the review-result schema, each a minor (or patch) over the previous."""
    schema: dict[str, Any] = json.loads(REVIEW_RESULT.read_text(encoding="utf-8"))
    versions = {SchemaVersion(1, 0): copy.deepcopy(schema)}
    for minor in range(1, count + 1):
        finding = schema["properties"]["findings"]["items"]["properties"]
        if minor % 5 == 0:
            schema["properties"][f"extra_{minor}"] = dict(KINDS[minor % len(KINDS)])
        else:
            finding[f"field_{minor}"] = {**KINDS[minor % len(KINDS)], "description": f"added in 1.{minor}"}
        if minor % 3 == 0:
            finding["message"]["description"] = f"reworded in 1.{minor}"
        versions[SchemaVersion(1, minor)] = copy.deepcopy(schema)
    return versions


def best(run: Callable[[], object], repeat: int) -> float:
    timings = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        timings.append(time.perf_counter() - start)
    return min(timings)


def bench(repeat: int) -> None:
    versions = history(50)
    head_version = max(versions)
    head = versions.pop(head_version)
    normalized = {v: normalize(s) for v, s in versions.items()}

    def end_to_end() -> Change:
        earlier = {v: normalize(s) for v, s in versions.items()}
        return classify_against(earlier, head).change

    def diff_only() -> Change:
        return classify_against(normalized, head).change

    result = classify_against(normalized, head)
    total = best(end_to_end, repeat)
    diffs = best(diff_only, repeat)
    baseline = best(lambda: Draft7Validator.check_schema(head), max(repeat, 20))
    size = len(json.dumps(head))
    print(
        f"review-result {head_version} ({size} bytes) classified against {len(versions)} earlier versions: "
        f"{result.change}"
    )
    print(f"  normalize 50 + classify: {total * 1000:8.1f} ms  (target < 1000 ms: {'ok' if total < 1 else 'TOO SLOW'})")
    per_version = diffs / len(versions) * 1000
    print(f"  classify only:           {diffs * 1000:8.1f} ms  ({per_version:.2f} ms per version)")
    print(f"  baseline, one Draft7 metaschema check of the same schema: {baseline * 1000:.2f} ms")
    print(
        f"  ratio (normalize 50 + classify) / baseline: {total / baseline:.1f}x; "
        f"per earlier version: {total / len(versions) / baseline:.2f}x"
    )
    print(f"  best of {repeat} runs; python {sys.version.split()[0]}")


def conformance() -> int:
    if not VECTORS.is_file():
        print(f"peer vectors not found at {VECTORS.resolve()}")
        return 1
    report = score(json.loads(VECTORS.read_text(encoding="utf-8")))
    (b_ok, b_all), (f_ok, f_all) = report.backward, report.forward
    print(f"peer vectors: {len(report.results)} ({len(report.disputed)} DISPUTED, not scored)")
    print(f"  backward agreement: {b_ok}/{b_all} = {b_ok / b_all:.1%}")
    print(f"  forward agreement:  {f_ok}/{f_all} = {f_ok / f_all:.1%} (vectors that state a forward verdict)")
    print(f"disagreements kept: {len(report.disagreements)}")
    for r in report.disagreements:
        print(
            f"  {r.name}: expected B={r.expected_backward} F={r.expected_forward}, engine B={r.backward} F={r.forward}"
        )
    print("scored per promptops policy (POLICY-DEPENDENT):")
    for r in report.results:
        if r.note:
            print(f"  {r.name}: expected B={r.expected_backward} ({r.note}); engine B={r.backward}")
    print("DISPUTED (information only; the engine follows what a validator does):")
    for r in report.disputed:
        print(f"  {r.name}: source B={r.expected_backward} F={r.expected_forward}, engine B={r.backward} F={r.forward}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--conformance", action="store_true", help="report agreement with the peer vectors")
    parser.add_argument("--repeat", type=int, default=5, help="timing runs; the best is reported")
    args = parser.parse_args(argv)
    if args.conformance:
        return conformance()
    bench(args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
