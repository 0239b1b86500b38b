"""Columnar batches of parse outcomes, and the Recorder that services use to store them (and the re-ask
loop's trace steps) as they happen.

The hot path appends plain values to Python lists (one list per column) and keeps each response's Diagnostic
objects as they are; columns become Arrow arrays once per batch, which DuckDB loads in bulk. Nothing here
touches the database row by row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from promptops.core.policy import ParserPolicy
from promptops.parsing import Diagnostic, ParseOutcome
from promptops.parsing.diagnostics import COERCION_CODES, Code
from promptops.parsing.ids import FindingColumns
from promptops.store.ddl import SLICE_COLUMNS
from promptops.store.findings import findings_table
from promptops.store.store import Batch, Store, WriteResult
from promptops.store.traces import TraceBuilder
from promptops.store.values import check_outcome, check_values

if TYPE_CHECKING:
    from promptops.core.contract import Contract
    from promptops.reask import TraceStep

DEFAULT_BATCH_SIZE = 20_000

_STR = pa.string()
_I32 = pa.int32()
_BOOL = pa.bool_()
RESPONSE_SCHEMA = pa.schema(
    [
        ("response_id", _STR),
        ("ts", pa.timestamp("us")),
        ("contract", _STR),
        ("rollout_id", _STR),
        ("arm", _STR),
        ("unit", _STR),
        ("model", _STR),
        ("latency_ms", pa.float64()),
        ("tokens", pa.int64()),
        ("prompt_version", _STR),
        ("schema_version", _STR),
        ("schema_floor", _STR),
        ("prompt_pin", _STR),
        ("prompt_patch_drift", _BOOL),
        ("accepted", _BOOL),
        ("reason", _STR),
        ("findings_seen", _I32),
        ("findings_kept", _I32),
        ("findings_dropped", _I32),
        ("findings_coerced", _I32),
        ("coercions", _I32),
        ("n_diagnostics", _I32),
        ("extracted", _BOOL),
        ("truncated", _BOOL),
        ("source", _STR),
        ("source_line", _I32),
    ]
)
# A diagnostic row names its response's slice (ddl.SLICE_COLUMNS) by its place in the batch's slices table;
# the store turns that into the slice's key when it writes the batch (Store.write).
DIAGNOSTIC_SCHEMA = pa.schema(
    [
        ("response_id", _STR),
        ("seq", _I32),
        ("code", _STR),
        ("level", _STR),
        ("path", _STR),
        ("finding_index", _I32),
        ("finding_id", _STR),
        ("message", _STR),
        ("ts", RESPONSE_SCHEMA.field("ts").type),
        ("slice", _I32),
    ]
)
SLICE_SCHEMA = pa.schema([("slice", _I32), *((name, _STR) for name in SLICE_COLUMNS)])

# The optional C column builder (_columns.c); None when it is not built, and then (or whenever it declines a
# batch) python_diagnostics_table, its reference twin, does the job with identical results.
native_columns: Callable[..., tuple[tuple[Any, ...], ...] | None] | None
native_int32: Callable[[list[int]], bytes | None] | None
try:
    from promptops.store._columns import diagnostic_columns as native_columns
    from promptops.store._columns import int32_column as native_int32
except ImportError:
    native_columns = native_int32 = None
# Diagnostic's slot descriptors, in _columns.c's order (its columns in DIAGNOSTIC_SCHEMA order): C reads the slots.
_SLOTS = tuple(vars(Diagnostic)[name] for name in ("code", "level", "path", "finding_index", "finding_id", "message"))


def diagnostics_table(
    diagnostics: list[Diagnostic], rows: list[int], seqs: list[int], slices: list[int], responses: pa.Table
) -> pa.Table:
    """Diagnostic rows: each Diagnostic, the index of its response in ``responses``, its place there and the
    number of its response's slice.

    Only the diagnostic's own fields cross from Python objects; the response's id and time are gathered by
    Arrow (``take``), in C, with no per-row Python work and no join in DuckDB.
    """
    table = native_diagnostics_table(diagnostics, rows, seqs, slices, responses)
    return python_diagnostics_table(diagnostics, rows, seqs, slices, responses) if table is None else table


def native_diagnostics_table(
    diagnostics: list[Diagnostic], rows: list[int], seqs: list[int], slices: list[int], responses: pa.Table
) -> pa.Table | None:
    """diagnostics_table from the buffers _columns.c fills in one pass over the objects (pa.array takes one
    pass per column). None when the extension is not built or declines the batch: the reference then decides,
    errors included (what can fail here after that, ``take`` and ``from_arrays``, fails alike in both)."""
    if native_columns is None or native_int32 is None:
        return None
    row_values, seq_values, slice_values = native_int32(rows), native_int32(seqs), native_int32(slices)
    built = native_columns(diagnostics, Diagnostic, Code, _SLOTS)
    if built is None or row_values is None or seq_values is None or slice_values is None:
        return None
    arrays = [_from_buffers(_I32 if len(column) == 3 else _STR, len(diagnostics), column) for column in built]
    copied = responses.select(["response_id", "ts"]).take(_int32_array(row_values))
    return pa.Table.from_arrays(
        [
            copied.column("response_id"),
            _int32_array(seq_values),
            *arrays,
            copied.column("ts"),
            _int32_array(slice_values),
        ],
        schema=DIAGNOSTIC_SCHEMA,
    )


def _int32_array(values: bytes) -> pa.Array:
    return pa.Array.from_buffers(_I32, len(values) // 4, [None, pa.py_buffer(values)])


def _from_buffers(kind: pa.DataType, length: int, column: tuple[Any, ...]) -> pa.Array:
    nulls, *buffers = column
    return pa.Array.from_buffers(
        kind, length, [None if b is None else pa.py_buffer(b) for b in buffers], null_count=nulls
    )


def python_diagnostics_table(
    diagnostics: list[Diagnostic], rows: list[int], seqs: list[int], slices: list[int], responses: pa.Table
) -> pa.Table:
    """The reference for diagnostics_table: one pa.array per column."""
    copied = responses.select(["response_id", "ts"]).take(pa.array(rows, type=_I32))
    return pa.Table.from_arrays(
        [
            copied.column("response_id"),
            pa.array(seqs, type=_I32),
            pa.array([d.code for d in diagnostics], type=_STR),  # Code is a StrEnum: Arrow takes it as str
            pa.array([d.level for d in diagnostics], type=_STR),
            pa.array([d.path for d in diagnostics], type=_STR),
            pa.array([d.finding_index for d in diagnostics], type=_I32),
            pa.array([d.finding_id for d in diagnostics], type=_STR),
            pa.array([d.message for d in diagnostics], type=_STR),
            copied.column("ts"),
            pa.array(slices, type=_I32),
        ],
        schema=DIAGNOSTIC_SCHEMA,
    )


def slices_table(slices: Sequence[tuple[str | None, ...]]) -> pa.Table:
    """The slices table of a batch: row ``i`` is slice number ``i``, its values in ddl.SLICE_COLUMNS order."""
    columns = list(zip(*slices)) if slices else [() for _ in SLICE_COLUMNS]  # noqa: B905
    return pa.Table.from_arrays(
        [pa.array(range(len(slices)), type=_I32), *(pa.array(column, type=_STR) for column in columns)],
        schema=SLICE_SCHEMA,
    )


class BatchBuilder:
    """Accumulates outcomes as row tuples; ``take`` hands over a columnar Batch and starts a new one.

    Rows are transposed once per batch (``zip(*rows)`` runs in C), which beats appending to 26 lists per
    response. ``add`` takes positional arguments because it runs once per response on the ingest hot path.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._rows: list[tuple[Any, ...]] = []
        self._ids: set[str] = set()
        self._diag_row: list[int] = []  # index of the diagnostic's response in _rows
        self._diag_seq: list[int] = []
        self._diags: list[Diagnostic] = []
        self._diag_slice: list[int] = []  # number of the diagnostic's response's slice in _slices
        self._slices: dict[tuple[str | None, ...], int] = {}
        self._duplicates = 0
        self._policies: dict[int, tuple[ParserPolicy, str, str, bool]] = {}
        self._findings = FindingColumns()

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def pending(self) -> bool:
        """Whether ``take`` has anything to hand over (responses, or duplicates to report)."""
        return bool(self._rows) or self._duplicates > 0

    def add(
        self,
        outcome: ParseOutcome,
        policy: ParserPolicy,
        response_id: str,
        ts: datetime,
        contract: str,
        rollout_id: str | None,
        arm: str | None,
        unit: str | None,
        model: str | None,
        latency_ms: float | None,
        tokens: int | None,
        source: str | None,
        source_line: int | None,
        spec: Contract | None = None,
    ) -> bool:
        """Add one response; False (and counted as a duplicate) when its id is already in this batch.
        With ``spec`` (the parser's Contract) its kept findings are added with their ids (``findings`` table).

        Everything is computed before anything is kept, so an exception leaves the builder as it was (ingest
        then reports the record as bad and goes on)."""
        if response_id in self._ids:
            self._duplicates += 1
            return False
        cached = self._policies.get(id(policy))
        if cached is None:
            # Keyed by identity, holding the policy itself so the id cannot be reused while cached.
            cached = (policy, str(policy.schema_floor), str(policy.prompt_version), policy.allow_prompt_patch_drift)
        diagnostics = outcome.diagnostics
        count = len(diagnostics)
        coercions = sum(1 for d in diagnostics if d.code in COERCION_CODES) if count else 0
        reason = outcome.reason
        row = (
            response_id,
            ts,
            contract,
            rollout_id,
            arm,
            unit,
            model,
            latency_ms,
            tokens,
            outcome.prompt_version,
            outcome.schema_version,
            cached[1],
            cached[2],
            cached[3],
            outcome.accepted,
            None if reason is None else str(reason),
            outcome.findings_seen,
            outcome.findings_kept,
            outcome.findings_dropped,
            outcome.findings_coerced,
            coercions,
            count,
            outcome.extracted,
            outcome.truncated,
            source,
            source_line,
        )
        if spec is not None:  # last of what can fail, so a failure leaves no finding of this response behind
            self._findings.add(spec, response_id, outcome, len(self._rows))
        self._policies[id(policy)] = cached
        self._ids.add(response_id)
        if count:
            self._diags.extend(diagnostics)
            self._diag_row.extend([len(self._rows)] * count)
            self._diag_seq.extend(range(count))
            # ddl.SLICE_COLUMNS, in that order; only responses with diagnostics need their slice.
            key = (
                contract,
                rollout_id,
                arm,
                model,
                outcome.prompt_version,
                outcome.schema_version,
                cached[1],
                cached[2],
            )
            number = self._slices.setdefault(key, len(self._slices))
            self._diag_slice.extend([number] * count)
        self._rows.append(row)
        return True

    def take(self) -> Batch:
        # Every row has the schema's length by construction; zip(*rows) transposes them in C.
        columns = list(zip(*self._rows)) if self._rows else [() for _ in RESPONSE_SCHEMA]  # noqa: B905
        responses = pa.Table.from_arrays(
            [pa.array(column, type=field.type) for column, field in zip(columns, RESPONSE_SCHEMA, strict=True)],
            schema=RESPONSE_SCHEMA,
        )
        diagnostics = diagnostics_table(self._diags, self._diag_row, self._diag_seq, self._diag_slice, responses)
        findings = findings_table(self._findings, responses.column("response_id"))
        batch = Batch(responses, diagnostics, slices_table(list(self._slices)), self._duplicates, findings=findings)
        self._reset()
        return batch


class Recorder:
    """Buffers parse outcomes and writes them to a Store in batches, in the format ``promptops ingest`` writes.

    ```python
    with Store.open(path) as store, Recorder(store) as recorder:
        outcome = parser.parse(raw, changed)
        recorder.record(outcome, response_id=rid, ts=now, contract="review-result", policy=parser.policy,
                        rollout_id="review-v7", arm="candidate", unit="org/repo#42")
    ```
    It is also the re-ask loop's trace sink (``promptops.reask.TraceSink``): ``Asker(..., sink=recorder)``
    hands it each run's steps through ``record_trace``, and they are stored in the ``traces`` table.

    A batch is written when ``batch_size`` rows (responses plus trace steps) are buffered, on ``flush`` and
    when the context exits (also after an exception: what was recorded is valid). Each write is one
    transaction; response ids and trace steps (run_id, attempt) already stored are skipped, so a retried
    flush never duplicates. Not thread-safe: use one Recorder per thread.
    """

    def __init__(self, store: Store, *, batch_size: int = DEFAULT_BATCH_SIZE, writer: str = "recorder") -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._store = store
        self._batch_size = batch_size
        self._writer = writer
        self._builder = BatchBuilder()
        self._traces = TraceBuilder()
        self.written = 0
        self.duplicates = 0
        self.traces_written = 0
        self.trace_duplicates = 0

    def record(
        self,
        outcome: ParseOutcome,
        *,
        response_id: str,
        ts: datetime,
        contract: str,
        policy: ParserPolicy,
        rollout_id: str | None = None,
        arm: str | None = None,
        unit: str | None = None,
        model: str | None = None,
        latency_ms: float | None = None,
        tokens: int | None = None,
        spec: Contract | None = None,
    ) -> None:
        """Buffer one outcome. ``policy`` is the parser's (``parser.policy``); ``ts`` is UTC when naive.
        ``spec`` is the parser's Contract (``parser.contract``): with it, the kept findings' ids are stored too,
        so feedback on them can be joined back (docs/feedback.md).

        Raises ValueError naming the field when a value cannot be stored (store/values.py: an empty id, a
        lone surrogate, ``tokens`` outside 0..2**63-1, a negative or non-finite ``latency_ms``...); nothing
        is buffered then, and what was buffered before stays."""
        check_values(
            response_id=response_id,
            ts=ts,
            contract=contract,
            rollout_id=rollout_id,
            arm=arm,
            unit=unit,
            model=model,
            latency_ms=latency_ms,
            tokens=tokens,
        )
        check_outcome(outcome)
        self._builder.add(
            outcome,
            policy,
            response_id,
            ts,
            contract,
            rollout_id,
            arm,
            unit,
            model,
            latency_ms,
            tokens,
            None,
            None,
            spec,
        )
        self._flush_when_full()

    def record_trace(self, steps: Sequence[TraceStep]) -> None:
        """Buffer one re-ask run's steps (the TraceSink method). A malformed step raises ValueError naming
        it, and none of the run's steps is kept; what was buffered before stays."""
        self._traces.add(steps)
        self._flush_when_full()

    def flush(self) -> WriteResult | None:
        """Write what is buffered (one transaction); None when nothing was."""
        if not (self._builder.pending or self._traces.pending):
            return None
        traces, trace_duplicates = self._traces.take()
        batch = replace(self._builder.take(), traces=traces, trace_duplicates=trace_duplicates)
        result = self._store.write(batch, writer=self._writer)
        self.written += result.responses
        self.duplicates += result.duplicates
        self.traces_written += result.traces
        self.trace_duplicates += result.trace_duplicates
        return result

    def _flush_when_full(self) -> None:
        if len(self._builder) + len(self._traces) >= self._batch_size:
            self.flush()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.flush()
