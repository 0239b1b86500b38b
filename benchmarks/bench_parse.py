"""Parser throughput against the floor and the validators a team would otherwise use.

Usage: python benchmarks/bench_parse.py [--responses 100000] [--rounds 3] [--naive-sample 5000] [--corpus independent]

One process, one corpus (benchmarks/corpus.py, or with ``--corpus independent`` benchmarks/corpus_independent.py,
generated apart from it), every contender on the same bytes:
  (a) orjson.loads alone: the floor no parser can beat
  (b) the promptops parser with full diagnostics (b2: plus materializing every accepted result as dicts)
  (c) naive: orjson + python-jsonschema Draft 7 validator, finding by finding (timed on a sample: it is slow)
  (d) orjson + jsonschema-rs, finding by finding
  (e) orjson + pydantic v2 (strict model), finding by finding
Rounds are interleaved and the best round counts, so background noise hurts every contender alike; the ratios
are also given as the median of each round's own ratios (paired runs).
Needs the bench extra: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import jsonschema
import jsonschema_rs
import orjson
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus
import corpus_independent

from promptops import ChangedFiles, Parser, SchemaVersion, load_contract

ROOT = Path(__file__).resolve().parents[1]


class _Finding(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    id: Annotated[str, Field(min_length=1)]
    severity: Literal["critical", "high", "medium", "low", "info"]
    category: Literal["correctness", "security", "performance", "reliability", "maintainability", "style", "test"]
    title: Annotated[str, Field(min_length=1)]
    file: Annotated[str, Field(min_length=1)]
    line: Annotated[int, Field(ge=1)]
    end_line: Annotated[int, Field(ge=1)] | None = None
    message: Annotated[str, Field(min_length=1)]
    suggestion: str | None = None
    confidence: Literal["high", "medium", "low"] | None = None
    rule_id: str | None = None


def _peer(validate_finding: Callable[[Any], object]) -> Callable[[corpus.Record], object]:
    """A parser built from orjson and a per-finding validator, as a team would write one."""

    def run(record: corpus.Record) -> object:
        try:
            top = orjson.loads(record.raw)
        except orjson.JSONDecodeError:
            return False
        if not isinstance(top, dict) or not isinstance(top.get("findings"), list):
            return False
        return [validate_finding(item) for item in top["findings"]]

    return run


def _pydantic_validator() -> Callable[[Any], object]:
    adapter = TypeAdapter(_Finding)

    def validate(item: Any) -> object:
        try:
            return adapter.validate_python(item)
        except ValidationError:
            return None

    return validate


def _time(records: list[corpus.Record], run: Callable[[corpus.Record], object]) -> float:
    start = time.perf_counter()
    for record in records:
        run(record)
    return time.perf_counter() - start


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--responses", type=int, default=100_000)
    options.add_argument("--rounds", type=int, default=3)
    options.add_argument("--naive-sample", type=int, default=5_000)
    options.add_argument("--corpus", choices=["default", "independent"], default="default")
    args = options.parse_args()

    contract = load_contract(ROOT, "review-result")
    parser = Parser(contract)
    item_schema = contract.shape(SchemaVersion(1, 0)).schema["properties"]["findings"]["items"]
    records = (corpus_independent if args.corpus == "independent" else corpus).build(args.responses)
    kinds = {kind: sum(r.kind == kind for r in records) for kind in ("clean", "defect", "malformed", "wrapped")}
    findings = [len(json.loads(r.raw)["findings"]) for r in records if r.kind in ("clean", "defect")]

    def promptops_parse(record: corpus.Record) -> object:
        return parser.parse(record.raw, ChangedFiles(record.changed_files))

    def promptops_materialized(record: corpus.Record) -> object:
        return parser.parse(record.raw, ChangedFiles(record.changed_files)).result

    def orjson_floor(record: corpus.Record) -> object:
        try:
            return orjson.loads(record.raw)
        except orjson.JSONDecodeError:
            return None

    rs = jsonschema_rs.Draft7Validator(item_schema)
    contenders: dict[str, Callable[[corpus.Record], object]] = {
        "a": orjson_floor,
        "b": promptops_parse,
        "b2": promptops_materialized,
        "d": _peer(rs.is_valid),
        "e": _peer(_pydantic_validator()),
    }
    best = {name: float("inf") for name in contenders}
    rounds: list[dict[str, float]] = []
    gc.collect()
    for _ in range(args.rounds):
        rounds.append({name: _time(records, run) for name, run in contenders.items()})
        for name, seconds in rounds[-1].items():
            best[name] = min(best[name], seconds)
    naive = _peer(jsonschema.Draft7Validator(item_schema).is_valid)
    sample = records[: args.naive_sample]
    naive_time = _time(sample, naive) * len(records) / len(sample)

    outcomes = [parser.parse(r.raw, ChangedFiles(r.changed_files)) for r in records]
    accepted = sum(o.accepted for o in outcomes)
    clean = sum(1 for o in outcomes if o.accepted and not o.diagnostics)
    rate = {name: len(records) / seconds for name, seconds in best.items()}
    rate["c"] = len(records) / naive_time

    print(f"python {platform.python_version()} on {platform.machine()}, single process, best of {args.rounds} rounds")
    print(
        f"corpus: {len(records):,} responses, {kinds['defect'] / len(records):.1%} with defects, "
        f"{(kinds['malformed'] + kinds['wrapped']) / len(records):.1%} malformed or wrapped, "
        f"{sum(findings) / len(findings):.2f} findings on average (0 to {max(findings)}), "
        f"{sum(len(r.raw) for r in records) / len(records):,.0f} bytes on average"
    )
    rejected = len(records) - accepted
    print(f"promptops outcomes: {accepted:,} accepted, {rejected:,} rejected, {clean:,} without diagnostics")
    labels = {
        "a": "(a) orjson.loads alone (floor)",
        "b": "(b) promptops parser, full diagnostics",
        "b2": "(b2) promptops, results materialized",
        "c": f"(c) orjson + jsonschema Draft7 (sample {len(sample):,})",
        "d": "(d) orjson + jsonschema-rs per finding",
        "e": "(e) orjson + pydantic v2 per finding",
    }
    for name in ("a", "b", "b2", "c", "d", "e"):
        print(f"  {labels[name]:<44} {rate[name]:>12,.0f} responses/s  {1e6 / rate[name]:8.2f} us/response")
    b = rate["b"]
    print(
        f"ratios: b/a = {b / rate['a']:.2f}   b/c = {b / rate['c']:.1f}   b/d = {b / rate['d']:.2f}   "
        f"b/e = {b / rate['e']:.2f}   (b2/a = {rate['b2'] / rate['a']:.2f}, b2/d = {rate['b2'] / rate['d']:.2f})"
    )
    paired = {peer: [r[peer] / r["b"] for r in rounds] for peer in ("a", "d", "e")}
    print(
        f"paired, median of {len(rounds)} rounds ({sum(findings):,} findings a round): "
        + "   ".join(f"b/{peer} = {statistics.median(ratios):.2f}" for peer, ratios in paired.items())
        + "   per round b/e: "
        + ", ".join(f"{ratio:.2f}" for ratio in paired["e"])
    )


if __name__ == "__main__":
    main()
