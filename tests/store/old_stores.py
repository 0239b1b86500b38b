"""Stores as earlier promptops versions wrote them, for the migration tests.

Migration statements are frozen once released, so an old store is made from ``MIGRATIONS[:n]``. Its rows come
from the current batch builder and are laid out as that version's tables held them: before migration 3 every
diagnostic row carried its response's slice columns (ddl.SLICE_COLUMNS) instead of a slice key.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path

import duckdb

from promptops import ChangedFiles, Parser, load_contract
from promptops.store import Store
from promptops.store.batch import BatchBuilder
from promptops.store.ddl import MIGRATIONS
from promptops.store.store import INSERT_RESPONSES, Batch
from tests.helpers import CHANGED, REPO_ROOT, finding, response, text

Rows = Sequence[tuple[str, str, str | None]]  # (raw response, arm, rollout id)

# The diagnostics table's columns before migration 3, in table order, less batch_id: diagnostic_facts shows
# all of them, before the migration and after.
WIDE_DIAGNOSTIC_COLUMNS = (
    "response_id, seq, code, level, path, finding_index, finding_id, message, contract, ts, rollout_id, arm, "
    "model, prompt_version, schema_version, schema_floor, prompt_pin"
)
_WIDE_INSERT = (
    "INSERT INTO diagnostics BY NAME SELECT d.* EXCLUDE (slice), s.* EXCLUDE (slice), $batch AS batch_id "
    "FROM _po_diagnostics d JOIN _po_slices s USING (slice)"
)


def sample_batches() -> list[Rows]:
    """Two batches over two rollouts and both arms, with drops, coercions, a reject and a clean response."""
    dropped = text(response([finding(1, line="7"), finding(2, severity="urgent")]))
    coerced = text(response([finding(1, line="7")]))
    return [
        [
            (text(response()), "candidate", "review-v7"),
            (dropped, "candidate", "review-v7"),
            ("not json", "baseline", None),
        ],
        [(coerced, "baseline", "review-v7"), (dropped, "candidate", "review-v8"), (dropped, "baseline", "review-v8")],
    ]


def old_store(path: Path, version: int, batches: Sequence[Rows]) -> None:
    """A store at schema ``version`` (1 or 2) holding ``batches`` (response ids r0, r1, ...)."""
    assert version in (1, 2)
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE schema_version (version INTEGER NOT NULL, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)"
    )
    for migration in MIGRATIONS[:version]:
        for statement in migration.statements:
            con.execute(statement)
        con.execute("INSERT INTO schema_version VALUES (?, ?, now()::TIMESTAMP)", [migration.version, migration.name])
    for batch_id, batch in enumerate(built(batches), start=1):
        for name, table in (
            ("_po_responses", batch.responses),
            ("_po_diagnostics", batch.diagnostics),
            ("_po_slices", batch.slices),
        ):
            con.register(name, table)
        con.execute(INSERT_RESPONSES, {"batch": batch_id})
        con.execute(_WIDE_INSERT, {"batch": batch_id})
        traces = ", 0, 0" if version >= 2 else ""
        con.execute(
            f"INSERT INTO batches VALUES (?, TIMESTAMP '2025-05-01 12:05:00', 'recorder', ?, ?, 0{traces})",
            [batch_id, batch.responses.num_rows, batch.diagnostics.num_rows],
        )
    con.close()


def current_store(path: Path, batches: Sequence[Rows], prefix: str = "r") -> None:
    """The same rows as ``old_store`` writes (ids ``prefix``0, ...), written by this promptops; added to what
    ``path`` holds."""
    with Store.open(path) as store:
        for batch in built(batches, prefix):
            store.write(batch)


def built(batches: Sequence[Rows], prefix: str = "r") -> Iterator[Batch]:
    """``batches`` as the batch builder makes them, response ids ``prefix``0, ``prefix``1, ..."""
    parser = Parser(load_contract(REPO_ROOT, "review-result"))
    changed = ChangedFiles(CHANGED)
    serial = 0
    for rows in batches:
        builder = BatchBuilder()
        for raw, arm, rollout_id in rows:
            stamp = datetime(2025, 5, 1 + serial % 3, 12, serial % 60)
            outcome = parser.parse(raw, changed)
            builder.add(
                outcome, parser.policy, f"{prefix}{serial}", stamp, "review-result", rollout_id, arm, None, "model-a",
                None, None, None, None,
            )  # fmt: skip
            serial += 1
        yield builder.take()
