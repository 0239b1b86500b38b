"""Finding feedback: ingest throughput against response ingest, and the read query's latency at scale.

Usage: python benchmarks/bench_feedback.py [--scale 1.0] [--pairs 5] [--workdir DIR]

Prints:
  1. feedback events stored per second by ``ingest_feedback`` against responses stored per second by
     ``ingest_logs`` on the same machine, in paired runs (one of each, alternating, fresh stores), and the
     median of the per-pair ratios                                                    (events/s per response/s)
  2. the feedback read query (feedback_counts) for one rollout over 10,000,000 feedback events on
     10,000,000 findings of 2,500,000 responses (generated with SQL, then the ingests' aggregates kept),
     warm: median of 7 runs                                                           target <= 100 ms;
     and once, a replay with ``now`` before the newest event, which scans events and findings
--scale multiplies every size (e.g. 0.05 for a quick check).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import response_logs

from promptops.store import ParserCache, Store, ingest_logs
from promptops.store.feedback import ingest_feedback
from promptops.store.feedback_query import feedback_counts
from promptops.store.feedback_totals import add_findings, apply_events

ROOT = Path(__file__).resolve().parents[1]
OUTCOMES = ("fixed", "accepted", "dismissed", "ignored")


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--scale", type=float, default=1.0)
    options.add_argument("--pairs", type=int, default=5)
    options.add_argument("--workdir", type=Path, default=None)
    args = options.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-feedback-", dir=args.workdir))
    try:
        _throughput(work, args.scale, args.pairs)
        _query_latency(work, args.scale)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _throughput(work: Path, scale: float, pairs: int) -> None:
    responses = max(2_000, int(50_000 * scale))
    events = max(10_000, int(200_000 * scale))
    logs = work / "responses.jsonl"
    response_logs.write(logs, responses, pool=5_000)
    feedback = work / "feedback.jsonl"
    with feedback.open("w", encoding="utf-8") as handle:
        for i in range(events):
            event = {
                "event_id": f"e{i}",
                "finding_id": f"F{i % 7 + 1}",
                "response_id": f"resp-7-{i // 4:09d}",
                "outcome": OUTCOMES[i % 4],
                "time": f"2026-05-{i % 28 + 1:02d}T12:00:00Z",
                "source": "github",
                "actor": f"dev{i % 300}",
                "actor_kind": "person",
                "evidence": {"kind": "reaction", "url": f"https://github.com/acme/api/pull/{i % 999}#r{i}"},
                "feedback_version": "1.0",
            }
            handle.write(json.dumps(event) + "\n")
    parsers = ParserCache.for_project(ROOT)
    relative = Path.as_posix
    ratios, response_rates, event_rates = [], [], []
    for pair in range(pairs):
        for kind in ("responses", "feedback") if pair % 2 == 0 else ("feedback", "responses"):
            path = work / f"{kind}-{pair}.duckdb"
            with Store.open(path) as store:
                started = time.perf_counter()
                if kind == "responses":
                    ingest_logs([logs], store, parsers, relative=relative)
                    response_rates.append(responses / (time.perf_counter() - started))
                else:
                    ingest_feedback([feedback], store, relative=relative)
                    event_rates.append(events / (time.perf_counter() - started))
            path.unlink()
        ratios.append(event_rates[-1] / response_rates[-1])
    print(f"1. ingest throughput, {pairs} paired runs ({responses:,} responses, {events:,} events, fresh stores)")
    print(f"   response ingest: median {statistics.median(response_rates):10,.0f} responses/s")
    print(f"   feedback ingest: median {statistics.median(event_rates):10,.0f} events/s")
    print(
        f"   ratio (events/s per response/s): median {statistics.median(ratios):.2f}  (pairs: "
        + ", ".join(f"{r:.2f}" for r in ratios)
        + ")"
    )


def _query_latency(work: Path, scale: float) -> None:
    events = max(100_000, int(10_000_000 * scale))
    findings = events
    responses = findings // 4
    path = work / "big.duckdb"
    started = time.perf_counter()
    with Store.open(path, memory_limit="2GB") as store:
        con = store.connection
        # 4 findings a response, 10,000 pull requests, 2 arms of one rollout, 60 days from 2026-03-01.
        con.execute(f"""
            INSERT INTO responses BY NAME
            SELECT printf('g%010d', i) AS response_id, md5_number_lower(printf('g%010d', i)) AS id_hash,
                   TIMESTAMP '2026-03-01' + to_microseconds((i * (60 * 86400000000 // {responses}))::BIGINT) AS ts,
                   'review-result' AS contract, 'review-v7' AS rollout_id,
                   CASE WHEN hash(i) % 2 = 0 THEN 'baseline' ELSE 'candidate' END AS arm,
                   'acme/api#' || (hash(i * 3) % 10000)::VARCHAR AS unit,
                   CASE WHEN hash(i) % 2 = 0 THEN '1.0.0' ELSE '1.1.0' END AS prompt_version, '1.0' AS schema_version,
                   '1.0' AS schema_floor, '1.0.0' AS prompt_pin, false AS prompt_patch_drift, true AS accepted,
                   4 AS findings_seen, 4 AS findings_kept, 0 AS findings_dropped, 0 AS findings_coerced,
                   0 AS coercions, 0 AS n_diagnostics, false AS extracted, false AS truncated, 1 AS batch_id
            FROM range({responses}) t(i)""")
        con.execute(f"""
            INSERT INTO findings BY NAME
            SELECT printf('g%010d', i // 4) AS response_id, md5_number_lower(printf('g%010d', i // 4)) AS id_hash,
                   (i % 4)::INTEGER AS finding_index,
                   'F' || (i % 4 + 1)::VARCHAR AS finding_id,
                   md5_number_lower(printf('g%010d', i // 4) || chr(31) || 'F' || (i % 4 + 1)::VARCHAR) AS key_hash,
                   ['critical', 'high', 'medium', 'low'][(hash(i) % 4)::INTEGER + 1] AS severity,
                   'src/a.py' AS path, (i % 500)::INTEGER AS line, 1 AS batch_id
            FROM range({findings}) t(i)""")
        # Events on 80% of the findings, a fifth of those with a second, later event.
        con.execute(f"""
            INSERT INTO feedback BY NAME
            WITH picked AS (SELECT i, (i * 5) // 4 AS f FROM range({events}) t(i))
            SELECT 'e' || i::VARCHAR AS event_id, 'github' AS source,
                   md5_number_lower('github' || chr(31) || 'e' || i::VARCHAR) AS event_hash,
                   'F' || (f % 4 + 1)::VARCHAR AS finding_id, printf('g%010d', f // 4) AS response_id,
                   md5_number_lower(printf('g%010d', f // 4) || chr(31) || 'F' || (f % 4 + 1)::VARCHAR) AS key_hash,
                   ['fixed', 'accepted', 'dismissed', 'ignored'][(hash(i) % 4)::INTEGER + 1] AS outcome,
                   TIMESTAMP '2026-03-02' + to_microseconds((f * (60 * 86400000000 // {findings}))::BIGINT) AS time,
                   'dev' AS actor, 'person' AS actor_kind, '{{"kind":"reaction"}}' AS evidence,
                   '1.0' AS feedback_version, 2 AS batch_id, NULL AS file, NULL AS file_line
            FROM picked""")
        stored = store.count("feedback")
        generated = time.perf_counter() - started
        # What the two ingests keep in their transactions, here for one batch of findings and one of events.
        started = time.perf_counter()
        con.execute("BEGIN TRANSACTION")
        add_findings(con, 1)
        apply_events(con, 2)
        con.execute("COMMIT")
        kept = time.perf_counter() - started
    with Store.open(path, read_only=True) as store:
        con = store.connection
        now = datetime(2026, 6, 1)
        feedback_counts(con, now, rollout_id="review-v7")  # warm
        times = []
        for _ in range(7):
            started = time.perf_counter()
            rows = feedback_counts(con, now, rollout_id="review-v7")
            times.append((time.perf_counter() - started) * 1000)
        replay = datetime(2026, 4, 30)  # before the newest event: the exact scan of events and findings
        started = time.perf_counter()
        feedback_counts(con, replay, rollout_id="review-v7")
        replayed = time.perf_counter() - started
    print(
        f"2. feedback read query: {stored:,} events, {findings:,} findings, {responses:,} responses "
        f"(generated by SQL in {generated:.0f} s, aggregates kept in {kept:.1f} s), {len(rows)} rows"
    )
    print(
        f"   one rollout, warm: median {statistics.median(times):.0f} ms, best {min(times):.0f} ms (target <= 100 ms)"
    )
    print(f"   a replay with --now before the newest event (exact scan), once: {replayed:.1f} s")


if __name__ == "__main__":
    main()
