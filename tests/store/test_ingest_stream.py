"""Ingest streams each batch into its transaction while it parses: the rows stored are those a batch-at-a-time
ingest stored, a failed run commits nothing of its unfinished batch, and reading ids never waits for a write."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest

from promptops.core.contract import load_contract
from promptops.core.errors import PromptopsError
from promptops.core.policy import ParserPolicy
from promptops.store import ParserCache, Store, ingest_logs
from promptops.store.batch import BatchBuilder
from promptops.store.store import Batch
from tests.helpers import REPO_ROOT
from tests.store.conftest import relative_to

# Made by _stored_rows over the corpus below with the ingest of main before streaming (commit 2cd1b2a):
# batches were written whole then. Any change to what ingest stores for these lines changes it.
ROWS_DIGEST = "6b4295df265f41ae1a80b3c33013d3da8cce590544a602e8a1fac95ba4c9437f"

BAD_LINES = [
    b"",
    b"   ",
    b"not json at all",
    b'{"response_id": "x-1"}',
    b'{"response_id": "x-2", "ts": "yesterday", "contract": "review-result", "rollout_id": null, "arm": null, '
    b'"unit": null, "changed_files": [], "raw": "{}"}',
    b'{"response_id": "x-3", "ts": "2025-05-01T00:00:00Z", "contract": "no-such-contract", "rollout_id": null, '
    b'"arm": null, "unit": null, "changed_files": [], "raw": "{}"}',
    b'{"response_id": "x-4", "ts": "2025-05-01T00:00:00Z", "contract": "review-result", "rollout_id": null, '
    b'"arm": null, "unit": null, "changed_files": [], "raw": "{}", "tokens": -1}',
    b"\xff\xfe not utf-8",
]


def _corpus(path: Path, write_log: Callable[..., Path]) -> Path:
    """Good records with bad lines between them, and ids repeated within a batch and across batches."""
    write_log(path, 700, pool=120, seed=11)
    good = path.read_bytes().splitlines()
    lines: list[bytes] = []
    for number, line in enumerate(good):
        lines.append(line)
        if number % 90 == 45:
            lines.append(BAD_LINES[(number // 90) % len(BAD_LINES)])
        if number % 150 == 149:  # the same record again: a near one (same chunk) and a far one (earlier batch)
            lines.extend([good[number - 3], good[number - 140]])
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _stored_rows(path: Path) -> str:
    """A digest of everything stored except how it was batched and when."""
    queries = {
        "responses": "SELECT * EXCLUDE (batch_id) FROM responses ORDER BY response_id",
        "diagnostics": "SELECT * EXCLUDE (batch_id) FROM diagnostics ORDER BY response_id, seq",
        "findings": "SELECT * EXCLUDE (batch_id) FROM findings ORDER BY response_id, finding_index",
        "slices": "SELECT * FROM slices ORDER BY slice_key",
        "feedback_units": "SELECT * FROM feedback_units ORDER BY ALL",
        "segments": "SELECT * EXCLUDE (ingested_at) FROM segments ORDER BY ALL",
        "batches": "SELECT sum(responses), sum(diagnostics), sum(duplicates), sum(findings) FROM batches",
    }
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = {name: con.execute(query).fetchall() for name, query in queries.items()}
    finally:
        con.close()
    return hashlib.sha256(json.dumps(rows, default=str, sort_keys=True).encode()).hexdigest()


def test_the_rows_stored_are_those_of_a_batch_at_a_time_ingest(
    project: Path, write_log: Callable[..., Path], parsers: ParserCache
) -> None:
    log = _corpus(project / "logs" / "mixed.jsonl", write_log)
    path = project / "store.duckdb"
    with Store.open(path) as store:
        report = ingest_logs([log], store, parsers, relative=relative_to(project), batch_size=200)
        again = ingest_logs([log], store, parsers, relative=relative_to(project), batch_size=200, rescan=True)
    assert (report.inserted, report.duplicates, report.bad_records) == (700, 8, 6)
    assert (again.inserted, again.duplicates) == (0, 708)
    assert _stored_rows(path) == ROWS_DIGEST


def _fails_on_boom(contract_name: str, rollout_id: str | None, arm: str | None) -> ParserPolicy:
    """A resolver that cannot resolve one rollout (a failure of the run, not of a record)."""
    if rollout_id == "boom":
        raise PromptopsError(f"rollout {rollout_id}: cannot resolve")
    return load_contract(REPO_ROOT, contract_name).default_policy


def test_a_failed_run_commits_its_whole_batches_and_nothing_of_the_one_it_was_streaming(
    project: Path, write_log: Callable[..., Path]
) -> None:
    log = write_log(project / "logs" / "a.jsonl", 260, pool=60, seed=5)
    lines = log.read_bytes().splitlines()
    failing = lines[0].replace(b'"rollout_id":"review-v7"', b'"rollout_id":"boom"').replace(b"resp-5-", b"late-")
    assert failing != lines[0]
    log.write_bytes(b"\n".join([*lines, failing]) + b"\n")
    parsers = ParserCache.for_project(project, _fails_on_boom)
    path = project / "store.duckdb"
    with Store.open(path) as store:
        with pytest.raises(PromptopsError, match="boom: cannot resolve"):
            ingest_logs([log], store, parsers, relative=relative_to(project), batch_size=100)
        assert store.count("responses") == 200
        assert store.connection.execute("SELECT count(*), sum(responses) FROM batches").fetchall() == [(2, 200)]
        assert store.count("segments") == 0


def _batch(builder: BatchBuilder, ids: list[str], parsers: ParserCache) -> Batch:
    from datetime import UTC, datetime

    from promptops.parsing import ChangedFiles

    slot = parsers.slot("review-result", None, None)
    assert slot is not None
    parser, when = slot[0], datetime(2025, 5, 1, tzinfo=UTC)
    outcome = parser.parse('{"schema_version": "1.0", "prompt_version": "1.0", "findings": []}', ChangedFiles([]))
    for rid in ids:
        builder.add(outcome, parser.policy, rid, when, "review-result", None, None, None, None, None, None, None, 1)
    return builder.take()


def test_write_parts_is_one_transaction_and_one_batch(tmp_path: Path, parsers: ParserCache) -> None:
    builder = BatchBuilder()
    with Store.open(tmp_path / "s.duckdb") as store:
        store.write(_batch(builder, ["a"], parsers))
        parts = [_batch(builder, ["a", "b", "c"], parsers), _batch(builder, ["c", "d"], parsers)]
        result = store.write_parts(iter(parts), writer="ingest")
        assert (result.responses, result.duplicates) == (3, 2)  # a was stored before; c came in an earlier part
        assert store.connection.execute(
            "SELECT batch_id, responses, duplicates FROM batches ORDER BY 1"
        ).fetchall() == [
            (1, 1, 0),
            (2, 3, 2),
        ]

        def broken() -> Iterator[Batch]:
            yield _batch(builder, ["e"], parsers)
            raise RuntimeError("the producer failed")

        with pytest.raises(RuntimeError, match="producer failed"):
            store.write_parts(broken())
        assert store.count("responses") == 4
        assert store.count("batches") == 2


def test_reading_ids_neither_waits_for_nor_sees_a_write_in_progress(tmp_path: Path, parsers: ParserCache) -> None:
    builder = BatchBuilder()
    first, later = _batch(builder, ["kept"], parsers), _batch(builder, ["streaming"], parsers)
    go_on = threading.Event()
    inserted = threading.Event()

    def parts() -> Iterator[Batch]:
        yield first
        inserted.set()  # only a part later can the writer have inserted the first one
        yield later
        go_on.wait(60)

    with Store.open(tmp_path / "s.duckdb") as store:
        store.write(_batch(builder, ["old"], parsers))
        writer = threading.Thread(target=store.write_parts, args=(parts(),))
        writer.start()
        try:
            assert inserted.wait(60)
            found: list[set[str]] = []
            reader = threading.Thread(target=lambda: found.append(store.existing_ids(["old", "kept", "new"])))
            reader.start()
            reader.join(30)
            assert found == [{"old"}], "existing_ids waited for the write in progress"
        finally:
            go_on.set()
            writer.join(60)
        assert store.existing_ids(["old", "kept", "streaming"]) == {"old", "kept", "streaming"}
