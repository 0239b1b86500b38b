"""Where an ingest's time goes (bench_ingest.py --steps): the log through the ingest's own functions in one
process, one step more per pass, so each step's cost is the difference between two passes.

It also prints the ceiling of any ingest that reads, decodes and parses its records on one thread (the GIL
keeps msgspec's decode and the parser on one core at a time): the parser alone on the already decoded
responses against the main thread's time through "+ slot lookup, parse", as if ids, rows and the store's
write cost nothing; and, beside it, the same bound with the fastest record decode there is (orjson, which
builds a dict and does nothing else) in place of the ingest's read and decode."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

from promptops.parsing import ChangedFiles
from promptops.rollout.policies import RolloutPolicies
from promptops.store import ParserCache, Store, ingest_logs
from promptops.store.chunks import parse_chunk
from promptops.store.ingest import DECODE_CHUNK
from promptops.store.logs import Segment, SegmentReader, decode_record
from promptops.store.nopandas import skip_pandas_probe
from promptops.store.policies import Slot


def report(log: Path, root: Path, count: int, passes: int = 3) -> None:
    skip_pandas_probe()
    parsers = ParserCache.for_project(root, RolloutPolicies(root))
    segment = Segment(log, log.stat().st_size)

    def read() -> None:
        for _ in SegmentReader(segment, "log").lines():
            pass

    def decode() -> None:
        for _, line in SegmentReader(segment, "log").lines():
            assert line is not None
            decode_record(line)

    def decoded() -> Iterator[tuple[Slot, str, list[str]]]:
        """Each record's slot, answer and changed files, as ingest decodes them."""
        for _, line in SegmentReader(segment, "log").lines():
            assert line is not None
            record = decode_record(line)
            assert not isinstance(record, str)
            slot = parsers.slot(record.contract, record.rollout_id, record.arm)
            assert slot is not None
            yield slot, record.raw, record.changed_files

    def parse() -> None:
        for (parser, schema_version, prompt_version), raw, changed in decoded():
            parser.parse(raw, ChangedFiles(changed), schema_version=schema_version, prompt_version=prompt_version)

    records = list(decoded())

    lines = [line for _, line in SegmentReader(segment, "log").lines() if line is not None]

    def fastest_decode() -> None:
        for line in lines:
            orjson.loads(line)

    def parser_alone() -> None:
        for (parser, schema_version, prompt_version), raw, changed in records:
            parser.parse(raw, ChangedFiles(changed), schema_version=schema_version, prompt_version=prompt_version)

    def chunks() -> None:
        chunk: list[tuple[int, bytes | None]] = []
        for numbered in SegmentReader(segment, "log").lines():
            chunk.append(numbered)
            if len(chunk) == DECODE_CHUNK:
                parse_chunk(chunk, "log", parsers)
                chunk = []
        if chunk:
            parse_chunk(chunk, "log", parsers)

    def ingest() -> None:
        store_path = log.with_name("steps.duckdb")
        store_path.unlink(missing_ok=True)
        with Store.open(store_path) as store:
            ingest_logs([log], store, parsers, relative=lambda p: p.name)
        store_path.unlink()

    steps: list[tuple[str, Callable[[], None]]] = [
        ("read, sha256, split lines", read),
        ("+ decode records", decode),
        ("+ slot lookup, parse", parse),
        ("+ finding ids, rows, Arrow (parse_chunk)", chunks),
        ("+ dedupe, DuckDB write, segment mark (ingest_logs)", ingest),
    ]
    print(
        f"steps (us a response, best of {passes} passes: CPU of the process, of its main thread (what a free "
        "second core cannot take over), and wall clock):"
    )
    previous = 0.0
    main_through: dict[str, float] = {}
    alone = [("the parser alone (decoded responses)", parser_alone), ("orjson.loads of each line", fastest_decode)]
    for name, step in [*alone, *steps]:
        best_cpu = best_main = best_wall = float("inf")
        for _ in range(passes):
            wall, cpu, main = time.perf_counter(), time.process_time(), time.thread_time()
            step()
            best_cpu = min(best_cpu, time.process_time() - cpu)
            best_main = min(best_main, time.thread_time() - main)
            best_wall = min(best_wall, time.perf_counter() - wall)
        per = best_cpu / count * 1e6
        main_through[name] = best_main
        if step in (parser_alone, fastest_decode):
            print(f"   {name:52s} {per:6.1f}; main thread {best_main / count * 1e6:6.1f}")
            continue
        print(
            f"   {name:52s} {per:6.1f} (step {per - previous:+5.1f}); main thread {best_main / count * 1e6:6.1f}; "
            f"wall {best_wall / count * 1e6:6.1f}"
        )
        previous = per
    ceiling = main_through["the parser alone (decoded responses)"] / main_through["+ slot lookup, parse"]
    print(f"   ceiling of a one-thread read + decode + parse, nothing stored: {ceiling:.2f}x the parser alone")
    alone_time, orjson_time = (
        main_through["the parser alone (decoded responses)"],
        main_through["orjson.loads of each line"],
    )
    bound = alone_time / (alone_time + orjson_time)
    print(f"   the same with orjson's decode and nothing else beside the parser: {bound:.2f}x")
