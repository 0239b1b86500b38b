"""Trace steps of the re-ask loop (``promptops.reask.TraceStep``) as columnar rows of the ``traces`` table.

A run's steps are checked when they are handed over, all of them before any is kept, so a malformed step
fails its own ``record_trace`` call with one line and never spoils a batch already buffered. Rows are kept
as tuples and transposed into Arrow columns once per batch, like the response rows (``batch.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:  # the store only reads the steps' fields; it needs none of the loop at run time
    from promptops.reask import TraceStep

_STR = pa.string()
TRACE_SCHEMA = pa.schema(
    [
        ("run_id", _STR),
        ("attempt", pa.int32()),
        ("agent", _STR),
        ("started_at", pa.timestamp("us")),
        ("finished_at", pa.timestamp("us")),
        ("tokens_used", pa.int64()),
        ("status", _STR),
        ("reason", _STR),
        ("contract", _STR),
        ("prompt_version", _STR),
        ("schema_version", _STR),
    ]
)
STATUSES = ("ok", "failed")


def empty_traces() -> pa.Table:
    return TRACE_SCHEMA.empty_table()


class TraceBuilder:
    """Buffers trace steps; ``take`` hands over the buffered rows as a table and starts anew.

    A step whose (run_id, attempt) is already buffered is counted as a duplicate and left out (the store
    also skips steps it already holds).
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._rows: list[tuple[Any, ...]] = []
        self._keys: set[tuple[str, int]] = set()
        self._duplicates = 0

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def pending(self) -> bool:
        return bool(self._rows) or self._duplicates > 0

    def add(self, steps: Sequence[TraceStep]) -> None:
        """Buffer one run's steps; ValueError (one line, naming the step) and nothing buffered if any is bad."""
        rows = [_row(step) for step in steps]
        for row in rows:
            key = (row[0], row[1])
            if key in self._keys:
                self._duplicates += 1
                continue
            self._keys.add(key)
            self._rows.append(row)

    def take(self) -> tuple[pa.Table, int]:
        """The buffered steps as a TRACE_SCHEMA table, and how many duplicates were left out."""
        columns = list(zip(*self._rows)) if self._rows else [() for _ in TRACE_SCHEMA]  # noqa: B905
        table = pa.Table.from_arrays(
            [pa.array(column, type=field.type) for column, field in zip(columns, TRACE_SCHEMA, strict=True)],
            schema=TRACE_SCHEMA,
        )
        duplicates = self._duplicates
        self._reset()
        return table, duplicates


def _row(step: TraceStep) -> tuple[Any, ...]:
    run_id, attempt = step.run_id, step.attempt
    where = f"trace step {attempt!r} of run {run_id!r}"
    if not isinstance(run_id, str) or not run_id:
        raise ValueError(f"{where}: run_id must be a non-empty string")
    if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
        raise ValueError(f"{where}: attempt must be an integer >= 1")
    for name in ("agent", "contract", "prompt_version", "schema_version"):
        value = getattr(step, name)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{where}: {name} must be a non-empty string, not {value!r}")
    if step.status not in STATUSES:
        raise ValueError(f"{where}: status must be one of {', '.join(STATUSES)}, not {step.status!r}")
    if step.reason is not None and not isinstance(step.reason, str):
        raise ValueError(f"{where}: reason must be a string or None, not {step.reason!r}")
    tokens = step.tokens_used
    if tokens is not None and (not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0):
        raise ValueError(f"{where}: tokens_used must be an integer >= 0 or None, not {tokens!r}")
    return (
        run_id,
        attempt,
        step.agent,
        _utc(step.started_at, where, "started_at"),
        _utc(step.finished_at, where, "finished_at"),
        tokens,
        step.status,
        step.reason,
        step.contract,
        step.prompt_version,
        step.schema_version,
    )


def _utc(text: str, where: str, name: str) -> datetime:
    """An ISO 8601 time as naive UTC, the store's convention (no offset means UTC, as in response logs)."""
    try:
        moment = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: {name} {text!r} is not an ISO 8601 time") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment
