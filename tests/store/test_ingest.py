"""Ingest into a real DuckDB file: counts, idempotency, segments, bad records, policies, store consistency."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from promptops import Contract, ParserPolicy, PromptopsError, PromptVersion
from promptops.parsing.diagnostics import DROP_CODES
from promptops.store import BadRecord, IngestReport, ParserCache, Store, ingest_logs
from tests.helpers import REPO_ROOT
from tests.store.conftest import relative_to


def _ingest(
    store: Store, parsers: ParserCache, root: Path, *paths: Path, **options: Any
) -> tuple[IngestReport, list[BadRecord]]:
    bad: list[BadRecord] = []
    report = ingest_logs(list(paths), store, parsers, relative=relative_to(root), on_bad=bad.append, **options)
    return report, bad


def _one(store: Store, sql: str) -> object:
    return store.connection.execute(sql).fetchall()[0][0]


@pytest.mark.parametrize("processes", [0, 2])
def test_ingest_stores_every_record_once_and_reingest_adds_nothing(
    project: Path, store: Store, parsers: ParserCache, write_log: Callable[..., Path], processes: int
) -> None:
    log = write_log(project / "logs" / "a.jsonl", 1500)
    report, bad = _ingest(store, parsers, project, log, batch_size=400, processes=processes)
    assert (report.records, report.inserted, report.duplicates, bad) == (1500, 1500, 0, [])
    before = store.connection.execute("SELECT * FROM responses ORDER BY response_id").fetchall()
    diagnostics = store.count("diagnostics")
    assert _one(store, "SELECT count(*) FROM batches") == 4  # 400 + 400 + 400 + 300

    again, _ = _ingest(store, parsers, project, log)
    assert again.skipped == ["logs/a.jsonl"] and again.inserted == 0
    rescan, _ = _ingest(store, parsers, project, log, rescan=True, processes=processes)
    assert (rescan.inserted, rescan.duplicates) == (0, 1500)
    assert store.connection.execute("SELECT * FROM responses ORDER BY response_id").fetchall() == before
    assert store.count("diagnostics") == diagnostics


def test_store_is_consistent_with_the_parser(
    project: Path, store: Store, parsers: ParserCache, contract: Contract, write_log: Callable[..., Path]
) -> None:
    log = write_log(project / "logs" / "a.jsonl", 800)
    _ingest(store, parsers, project, log)
    con = store.connection
    assert _one(store, "SELECT sum(n_diagnostics) FROM responses") == store.count("diagnostics")
    # Every dropped finding carries exactly one drop diagnostic; every coercion is a coercion diagnostic.
    assert _one(store, "SELECT sum(findings_dropped) FROM responses") == _one(
        store, "SELECT count(*) FROM diagnostic_facts WHERE kind = 'drop'"
    )
    assert _one(store, "SELECT sum(coercions) FROM responses") == _one(
        store, "SELECT count(*) FROM diagnostic_facts WHERE kind = 'coercion'"
    )
    # Row for row, the stored diagnostics are the parser's, in order, with the response's slicing columns.
    from promptops import ChangedFiles, Parser

    parser = Parser(contract)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    for record in records[::37]:
        outcome = parser.parse(record["raw"], ChangedFiles(record["changed_files"]))
        stored = con.execute(
            "SELECT code, level, path, finding_index, finding_id, message, arm, rollout_id, contract "
            "FROM diagnostic_facts WHERE response_id = ? ORDER BY seq",
            [record["response_id"]],
        ).fetchall()
        expected = [
            (
                str(d.code),
                d.level,
                d.path,
                d.finding_index,
                d.finding_id,
                d.message,
                record["arm"],
                record["rollout_id"],
                "review-result",
            )
            for d in outcome.diagnostics
        ]
        assert stored == expected
        row = con.execute(
            "SELECT accepted, reason, findings_seen, findings_kept, findings_dropped, findings_coerced, extracted, "
            "truncated, schema_floor, prompt_pin, source, source_line FROM responses WHERE response_id = ?",
            [record["response_id"]],
        ).fetchall()[0]
        line = records.index(record) + 1
        assert row == (
            outcome.accepted,
            None if outcome.reason is None else str(outcome.reason),
            outcome.findings_seen,
            outcome.findings_kept,
            outcome.findings_dropped,
            outcome.findings_coerced,
            outcome.extracted,
            outcome.truncated,
            "1.0",
            "1.0.0",
            "logs/a.jsonl",
            line,
        )
    assert DROP_CODES  # the view's drop kind is built from this set


def test_directory_of_segments_remembers_what_was_fully_ingested(
    project: Path, store: Store, parsers: ParserCache, write_log: Callable[..., Path]
) -> None:
    logs = project / "logs"
    write_log(logs / "day1" / "a.jsonl", 300, seed=1)
    write_log(logs / "day1" / "b.jsonl.gz", 200, seed=2)
    (logs / ".partial.jsonl").write_text("ignored: hidden\n")
    (logs / "notes.txt").write_text("ignored: not a segment\n")
    report, bad = _ingest(store, parsers, project, logs)
    assert (report.inserted, bad) == (500, [])
    segments = store.connection.execute("SELECT path, records FROM segments ORDER BY path").fetchall()
    assert segments == [("logs/day1/a.jsonl", 300), ("logs/day1/b.jsonl.gz", 200)]

    # A new segment and a grown one: only their new records are stored.
    write_log(logs / "day2" / "c.jsonl", 100, seed=3)
    with (logs / "day1" / "a.jsonl").open("ab") as grown:
        grown.write(b"".join((logs / "day2" / "c.jsonl").read_bytes().splitlines(keepends=True)[:10]))
    report, bad = _ingest(store, parsers, project, logs)
    assert report.skipped == ["logs/day1/b.jsonl.gz"]
    assert (report.inserted, report.duplicates, bad) == (100, 310, [])
    assert store.count("responses") == 600


@pytest.mark.parametrize("processes", [0, 2])
def test_bad_records_are_reported_with_file_and_line_and_never_stop_the_good_ones(
    project: Path, store: Store, parsers: ParserCache, write_log: Callable[..., Path], processes: int
) -> None:
    good = write_log(project / "logs" / "good.jsonl", 30).read_bytes().splitlines()
    record = json.loads(good[0])
    broken = [
        b"{not json",
        b"[1, 2]",
        json.dumps({**record, "response_id": "r-no-ts", "ts": None}).encode(),
        json.dumps({k: v for k, v in record.items() if k != "raw"} | {"response_id": "r-no-raw"}).encode(),
        json.dumps({**record, "response_id": "r-bad-ts", "ts": "yesterday"}).encode(),
        json.dumps({**record, "response_id": "r-unknown", "contract": "no-such-contract"}).encode(),
        json.dumps({**record, "response_id": ""}).encode(),
        json.dumps({**record, "response_id": "r-files", "changed_files": "src/a.py"}).encode(),
    ]
    lines = good[:10] + broken[:4] + [b"", b"   "] + good[10:20] + broken[4:] + good[20:]
    log = project / "logs" / "mixed.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    report, bad = _ingest(store, parsers, project, log, batch_size=7, processes=processes)
    assert report.inserted == 30 and report.bad_records == 8
    assert [(b.source, b.line) for b in bad] == [("logs/mixed.jsonl", n) for n in (11, 12, 13, 14, 27, 28, 29, 30)]
    problems = [b.problem for b in bad]
    assert problems[0].startswith("not valid JSON")
    assert problems[1] == "not a JSON object"
    assert problems[2] == "field 'ts': expected datetime, got null"
    assert problems[3] == "missing required field 'raw'"
    assert problems[4].startswith("field 'ts': invalid")
    assert problems[5] == "unknown contract 'no-such-contract' (no versions/no-such-contract/)"
    assert problems[6].startswith("field 'response_id': ") and problems[7].startswith("field 'changed_files': ")
    assert str(bad[0]).startswith("logs/mixed.jsonl:11: ")


@pytest.mark.parametrize("processes", [0, 2])
def test_a_corrupt_gzip_segment_keeps_what_was_read_and_is_not_remembered(
    project: Path, store: Store, parsers: ParserCache, write_log: Callable[..., Path], processes: int
) -> None:
    plain = write_log(project / "logs" / "a.jsonl", 50, seed=1)
    data = gzip.compress(write_log(project / "tmp.jsonl", 200, seed=2).read_bytes())
    (project / "logs" / "b.jsonl.gz").write_bytes(data[: len(data) * 2 // 3])
    report, _ = _ingest(store, parsers, project, project / "logs", batch_size=25, processes=processes)
    failed = report.failed
    assert [f.path for f in failed] == ["logs/b.jsonl.gz"]
    assert (failed[0].error or "").startswith("logs/b.jsonl.gz: cannot read: ")
    assert 50 < store.count("responses") < 250  # all of a.jsonl and what b held before the damage
    assert store.connection.execute("SELECT path FROM segments").fetchall() == [("logs/a.jsonl",)]
    assert plain.exists()


class PinCandidate:
    """A rollout-style resolver: the candidate arm pins another prompt version. Picklable, for workers."""

    def __init__(self, contract: Contract, pin: PromptVersion) -> None:
        self.default = contract.default_policy
        self.pinned = contract.default_policy.with_overrides(prompt_version=pin)
        self.asked: list[tuple[str, str | None, str | None]] = []

    def __call__(self, contract_name: str, rollout_id: str | None, arm: str | None) -> ParserPolicy:
        self.asked.append((contract_name, rollout_id, arm))
        return self.pinned if arm == "candidate" else self.default


@pytest.mark.parametrize("processes", [0, 2])
def test_policy_resolver_is_asked_once_per_slot_and_its_policy_is_stored(
    project: Path, store: Store, contract: Contract, write_log: Callable[..., Path], processes: int
) -> None:
    resolver = PinCandidate(contract, PromptVersion(1, 1, 0))
    parsers = ParserCache.for_project(REPO_ROOT, resolver)
    log = write_log(project / "logs" / "a.jsonl", 200)
    _ingest(store, parsers, project, log, processes=processes)
    rows = store.connection.execute(
        "SELECT arm, prompt_pin, count(*), count(*) FILTER (WHERE reason = 'incompatible_version') "
        "FROM responses GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    # The corpus answers with prompt 1.0.0: the candidate arm, pinned to 1.1.0, rejects every response.
    by_arm = {arm: (pin, n, incompatible) for arm, pin, n, incompatible in rows}
    assert by_arm["candidate"][0] == "1.1.0" and by_arm["candidate"][1] == by_arm["candidate"][2] > 0
    assert by_arm["baseline"][0] == "1.0.0" and by_arm["baseline"][2] < by_arm["baseline"][1]
    if processes == 0:  # in workers each process asks for itself
        slots = [
            ("review-v7", "baseline"),
            ("review-v7", "candidate"),
            ("review-v8", "baseline"),
            ("review-v8", "candidate"),
            (None, None),
        ]
        assert sorted(resolver.asked, key=str) == sorted({("review-result", r, a) for r, a in slots}, key=str)
        assert parsers.parser("review-result", "review-v7", "candidate") is parsers.parser(
            "review-result", "review-v8", "candidate"
        )


def test_parallel_ingest_needs_a_parser_setup_it_can_send(project: Path, store: Store, contract: Contract) -> None:
    local = ParserCache(lambda name: contract, lambda name: True)
    with pytest.raises(PromptopsError, match=r"only a ParserCache.for_project\(...\) can be sent"):
        ingest_logs([project / "logs"], store, local, relative=relative_to(project), processes=2)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz"])
def test_a_segment_rewritten_to_the_same_size_is_read_again(
    project: Path, store: Store, parsers: ParserCache, write_log: Callable[..., Path], suffix: str
) -> None:
    log = write_log(project / "logs" / f"a{suffix}", 40, seed=5)
    _ingest(store, parsers, project, log)
    plain = gzip.decompress(log.read_bytes()) if suffix.endswith(".gz") else log.read_bytes()
    rewritten = plain.replace(b'"resp-5-', b'"resp-6-')  # new ids, same length
    assert len(rewritten) == len(plain) and rewritten != plain
    if suffix.endswith(".gz"):
        size = log.stat().st_size
        for level in range(1, 10):  # find a compression of the new bytes with the old size
            data = gzip.compress(rewritten, compresslevel=level, mtime=0)
            if len(data) == size:
                break
        else:
            data = gzip.compress(rewritten, mtime=0)  # sizes differ: still a changed segment
        log.write_bytes(data)
    else:
        log.write_bytes(rewritten)
    report, _ = _ingest(store, parsers, project, log)
    assert report.skipped == [] and report.inserted == 40
    again, _ = _ingest(store, parsers, project, log)
    assert again.skipped == ["logs/" + log.name] and again.inserted == 0
