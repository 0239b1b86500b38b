"""The rollout gate's store reads with 10,000,000 feedback events: its usefulness read against its parse-metric reads.

Usage: python benchmarks/bench_gate_feedback.py [--events 10000000] [--runs 7] [--workdir DIR] [--store PATH]

``--store PATH`` keeps the generated store at PATH and reuses it when it is there (a build takes minutes).

The store is generated with SQL: 60 days of review-result traffic (rollout review-0.9, then review-1.1 from day
30), pull requests opened evenly over the days, each reviewed 10 times about 3 hours apart (1.5 days), 10% of
them on the candidate arm; 5 findings a response; 80% of findings get an event 1 hour to 3 days after their
response and a quarter of those a second, a day later; events are never later than the judged time. The
aggregates are then built as upgrading a store builds them (the store's migrations 5 and 6) for all but the
last tenth of the events, which are stored by the feedback ingest's own step, batch by batch, as a live store
would have taken them.

Prints, warm on a read-only open (median of --runs, each measure run in turn within one round):
  1. the gate's parse-metric reads (the step's window by arm and hour, the candidate's incompatible count),
  2. its usefulness read (RatesSource.feedback: per arm, sums over its pull requests of the step's findings as
     of now),
  3. both, and the usefulness read with ``--now`` 2 days earlier (a replay: the later events are read again).
The step started 14 days before the judged time, at 09:30. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path

import duckdb

from promptops.rollout.gate import read_window
from promptops.rollout.looks import read_looks
from promptops.rollout.plan import load_plan
from promptops.store import Store
from promptops.store.ddl import MIGRATIONS
from promptops.store.feedback_totals import apply_events
from promptops.store.source import Window

ROOT = Path(__file__).resolve().parents[1]
PLAN = "rollout/review-result/review-1.1.yaml"
START = datetime(2026, 9, 1)
NOW = START + timedelta(days=60, hours=13)  # the judged time: mid-day
SINCE = NOW - timedelta(days=14, hours=3, minutes=30)  # the step's start: 09:30, 14 days before
EVENT_BATCH = 50_000


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--events", type=int, default=10_000_000)
    options.add_argument("--runs", type=int, default=7)
    options.add_argument("--workdir", type=Path, default=None)
    options.add_argument("--store", type=Path, default=None, help="keep the store here; reused when present")
    args = options.parse_args()
    load = os.getloadavg()
    print(
        f"duckdb {duckdb.__version__}, {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    if args.store is not None:
        if not args.store.exists():
            _build(args.store, args.events)
        _reads(args.store, args.runs)
        return
    work = Path(tempfile.mkdtemp(prefix="bench-gate-feedback-", dir=args.workdir))
    try:
        path = work / "diagnostics.duckdb"
        _build(path, args.events)
        _reads(path, args.runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build(path: Path, events: int) -> None:
    units = events * 104 // 5000  # about 48 events a pull request, of which a few fall after NOW
    started = time.perf_counter()
    with Store.open(path, memory_limit="2GB") as store:
        con = store.connection
        con.execute("SET preserve_insertion_order = true")  # tables in time order, as ingest writes them
        con.execute(f"""
            CREATE TEMP TABLE units AS
            SELECT u, TIMESTAMP '{START}' + to_microseconds((u * (60 * 86400000000 // {units}))::BIGINT
                                                            + (hash(u) % 3600000000)::BIGINT) AS opened,
                   CASE WHEN hash(u * 7) % 100 < 10 THEN 'candidate' ELSE 'baseline' END AS arm,
                   'acme/api#' || u::VARCHAR AS unit
            FROM range({units}) t(u)""")
        con.execute(f"""
            INSERT INTO responses BY NAME
            WITH r AS (
                SELECT n.*, k, opened + to_microseconds((k * 10800000000 + hash(u * 31 + k) % 7200000000)::BIGINT) AS ts
                FROM units n, range(10) t(k))
            SELECT printf('g%09d-%d', u, k) AS response_id, md5_number_lower(printf('g%09d-%d', u, k)) AS id_hash,
                   ts, 'review-result' AS contract,
                   CASE WHEN ts < TIMESTAMP '{START + timedelta(days=30)}' THEN 'review-0.9' ELSE 'review-1.1' END
                       AS rollout_id,
                   arm, unit, 'model-a' AS model,
                   CASE WHEN arm = 'candidate' THEN '1.1.1' ELSE '1.0.1' END AS prompt_version,
                   CASE WHEN arm = 'candidate' THEN '1.1' ELSE '1.0' END AS schema_version,
                   '1.0' AS schema_floor, '1.0.1' AS prompt_pin, false AS prompt_patch_drift, true AS accepted,
                   5 AS findings_seen, 5 AS findings_kept, 0 AS findings_dropped, 0 AS findings_coerced,
                   0 AS coercions, 0 AS n_diagnostics, false AS extracted, false AS truncated,
                   1 + (row_number() OVER (ORDER BY ts) - 1) // 20000 AS batch_id
            FROM r WHERE ts <= TIMESTAMP '{NOW}' ORDER BY ts""")
        con.execute("""
            INSERT INTO findings BY NAME
            SELECT r.response_id, r.id_hash, j::INTEGER AS finding_index, 'F' || (j + 1)::VARCHAR AS finding_id,
                   md5_number_lower(r.response_id || chr(31) || 'F' || (j + 1)::VARCHAR) AS key_hash,
                   ['critical', 'high', 'medium', 'low'][(hash(r.id_hash + j) % 4)::INTEGER + 1] AS severity,
                   'src/a.py' AS path, (j * 10 + 1)::INTEGER AS line, r.batch_id
            FROM responses r, range(5) t(j) ORDER BY r.batch_id""")
        first = int(con.execute("SELECT max(batch_id) + 1 FROM responses").fetchall()[0][0])
        con.execute(f"""
            INSERT INTO feedback BY NAME
            WITH f AS (SELECT f.response_id, f.finding_id, f.key_hash, r.ts, hash(f.key_hash) AS h
                       FROM findings f JOIN responses r USING (id_hash)),
            e AS (
                SELECT *, ts + to_microseconds((3600000000 + (h >> (n * 20)) % (3 * 86400000000)
                                                + n * 86400000000)::BIGINT) AS time
                FROM f, range(2) t(n) WHERE h % 10 < 8 AND (n = 0 OR (h >> 8) % 4 = 0))
            SELECT printf('e%d-%d', key_hash, n) AS event_id, 'github' AS source,
                   md5_number_lower('github' || chr(31) || printf('e%d-%d', key_hash, n)) AS event_hash,
                   finding_id, response_id, key_hash,
                   ['fixed', 'accepted', 'dismissed', 'ignored'][((h >> (n * 7 + 3)) % 4)::INTEGER + 1] AS outcome,
                   time, 'dev' AS actor, 'person' AS actor_kind, '{{"kind":"reaction"}}' AS evidence,
                   '1.0' AS feedback_version, {first} + (row_number() OVER (ORDER BY time) - 1) // {EVENT_BATCH}
                       AS batch_id, NULL AS file, NULL AS file_line
            FROM e WHERE time <= TIMESTAMP '{NOW}' ORDER BY time""")
        counts = con.execute(
            "SELECT (SELECT count(*) FROM responses), (SELECT count(*) FROM findings), (SELECT count(*) FROM feedback)"
        ).fetchall()[0]
        con.execute("CHECKPOINT")
        generated = time.perf_counter() - started
        started = time.perf_counter()
        last = int(con.execute("SELECT max(batch_id) FROM feedback").fetchall()[0][0])
        tail = last - max(1, counts[2] // 10 // EVENT_BATCH) + 1  # the last tenth, in whole batches
        con.execute(f"CREATE TEMP TABLE tail AS SELECT * FROM feedback WHERE batch_id >= {tail}")
        con.execute(f"DELETE FROM feedback WHERE batch_id >= {tail}")
        con.execute("DROP TABLE response_feedback")
        for migration in MIGRATIONS[4:6]:  # what an upgrade builds
            for statement in migration.statements:
                con.execute(statement)
        con.execute("CHECKPOINT")
        rebuilt = time.perf_counter() - started
        started = time.perf_counter()
        for batch in range(tail, last + 1):  # the ingest's own step, one transaction a batch
            con.execute("BEGIN TRANSACTION")
            con.execute(f"INSERT INTO feedback SELECT * FROM tail WHERE batch_id = {batch}")
            apply_events(con, batch)
            con.execute("COMMIT")
        con.execute("CHECKPOINT")
        ingested = time.perf_counter() - started
    print(
        f"store: {counts[0]:,} responses, {counts[1]:,} findings, {counts[2]:,} feedback events (generated in "
        f"{generated:.0f} s); aggregates built as an upgrade does in {rebuilt:.0f} s for all but the last "
        f"{last - tail + 1} batches of {EVENT_BATCH:,} events, then kept by the ingest's step in {ingested:.0f} s"
    )


def _reads(path: Path, runs: int) -> None:
    plan = load_plan(ROOT / PLAN, PLAN)
    replay = NOW - timedelta(days=2)
    with Store.open(path, read_only=True) as store:
        source = store.source
        window = Window(plan.contract, plan.rollout_id, SINCE, NOW)

        def parse_metrics() -> object:
            read_looks(source, plan, SINCE, NOW)
            return read_window(source, plan, None, NOW)["candidate"].hits["incompatible_version"]

        measures: dict[str, Callable[[], object]] = {
            "parse": parse_metrics,
            "feedback": lambda: source.feedback(window, NOW),
            "replay": lambda: source.feedback(Window(plan.contract, plan.rollout_id, SINCE, replay), replay),
        }
        times: dict[str, list[float]] = {name: [] for name in measures}
        for call in measures.values():  # warm
            call()
        for _ in range(runs):
            for name, call in measures.items():
                started = time.perf_counter()
                call()
                times[name].append((time.perf_counter() - started) * 1000)
        feedback = source.feedback(window, NOW)
    prs = {arm: found.pull_requests for arm, found in sorted(feedback.items())}
    decided = {arm: found.decided for arm, found in sorted(feedback.items())}
    pending = {arm: found.pending for arm, found in sorted(feedback.items())}
    total = [p + f for p, f in zip(times["parse"], times["feedback"], strict=True)]
    print(f"\nthe step's window: pull requests {prs}, decided findings {decided}, pending {pending}")
    print(f"warm, median of {runs} (best):")
    for label, values in (
        ("1. parse-metric reads (looks by hour, incompatible count)", times["parse"]),
        ("2. usefulness read (sums over pull requests, as of now)", times["feedback"]),
        ("3. both: the gate's store reads (target < 100 ms)", total),
        ("   usefulness read, --now 2 days earlier (a replay)", times["replay"]),
    ):
        print(f"  {label:<58} {statistics.median(values):7.1f} ms ({min(values):.1f})")


if __name__ == "__main__":
    main()
