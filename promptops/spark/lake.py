"""Writing one input segment's output set into the lake, and its commit marker.

The lake has the layout ``promptops export`` writes (``promptops.store.parquet``): hive-partitioned Parquet
under ``responses/``, ``diagnostics/`` (both ``contract=<name>/day=<YYYY-MM-DD>/``) and ``slices/``
(``contract=<name>/``), read by ``promptops rates --store DIR`` and the Spark engine through the lake's commit
protocol (``promptops.store.lake_files``).

Idempotence and crash safety come from naming, not from coordination:

- an input segment is known by the sha256 of its bytes; everything it produces is named ``seg-<sha>_0.parquet``
  (one file per table and partition), so writing the same segment again produces the same names;
- each file is written in place, with no rename (a copy and a delete on object storage); readers ignore it
  until ``_segments/<sha>.json`` records the segment (counts, source), written when all its files are there.
  A segment with a marker is skipped by later runs; one without (the job died first) is written again whole,
  to the same names with the same rows, replacing what the dead attempt left.

The rows a segment writes are its responses whose id no earlier segment (in the run's order, or committed in
the partitions it writes) holds, so a re-run after a failure writes exactly what a clean run writes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import date
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from promptops.store.ddl import SLICE_COLUMNS, TABLE_COLUMNS
from promptops.store.lake_files import SEGMENT_PREFIX, SEGMENTS_DIR, filesystem, put_json

BATCH_ID = 0  # the lake has no store batches; readers ignore the column, kept so the files match an export

# Diagnostic fields carried inside each parsed response row (a list of structs), in DIAGNOSTIC_SCHEMA order.
DIAGNOSTIC_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("seq", pa.int32()),
    ("code", pa.string()),
    ("level", pa.string()),
    ("path", pa.string()),
    ("finding_index", pa.int32()),
    ("finding_id", pa.string()),
    ("message", pa.string()),
)


def md5_lower(text: str) -> int:
    """The store's 64-bit hash (``ddl.md5_lower``: DuckDB's md5_number_lower), in Python."""
    return int.from_bytes(hashlib.md5(text.encode()).digest()[8:], "little")


def slice_key(values: tuple[str | None, ...]) -> int:
    """``ddl.SLICE_KEY`` in Python: the hash of the slice's values as a compact JSON array (DuckDB's to_json)."""
    return md5_lower(json.dumps(list(values), separators=(",", ":"), ensure_ascii=False))


def write_marker(lake: str, sha: str, marker: dict[str, Any]) -> None:
    fs, base = filesystem(lake)
    put_json(fs, base, f"{SEGMENTS_DIR}/{sha}.json", marker)


def write_segment(
    lake: str, sha: str, responses: pa.Table, after_file: Callable[[str], None] | None = None
) -> tuple[int, int, list[str]]:
    """Write the segment's responses (RESPONSE_SCHEMA columns plus ``diagnostics``, a list of
    DIAGNOSTIC_FIELDS structs) as its output set; returns (responses, diagnostics, files written).

    ``after_file`` (tests only) is called with each file's lake path once it is in place."""
    fs, base = filesystem(lake)
    responses = responses.sort_by([("source_line", "ascending"), ("response_id", "ascending")])
    tables = _tables(responses)
    name = f"{SEGMENT_PREFIX}{sha}_0.parquet"
    written: list[str] = []
    for table, parts in tables.items():
        for partition, rows in parts:
            relative = f"{table}/{partition}/{name}"
            fs.create_dir(f"{base}/{table}/{partition}", recursive=True)
            with fs.open_output_stream(f"{base}/{relative}") as stream:  # in place: the marker commits it
                pq.write_table(rows, stream)
            written.append(relative)
            if after_file is not None:
                after_file(relative)
    diagnostics = sum(rows.num_rows for _, rows in tables["diagnostics"])
    return responses.num_rows, diagnostics, written


def _tables(responses: pa.Table) -> dict[str, list[tuple[str, pa.Table]]]:
    """The export's files of these responses: per table, (partition path, rows without partition columns)."""
    days = pc.cast(responses["ts"], pa.date32())
    contracts = responses["contract"]
    ids = responses["response_id"].to_pylist()
    id_hash = pa.array([md5_lower(value) for value in ids], type=pa.uint64())
    batch = pa.array([BATCH_ID] * responses.num_rows, type=pa.int64())
    stored = responses.drop_columns(["diagnostics"]).append_column("id_hash", id_hash).append_column("batch_id", batch)
    response_columns = [name for name, _ in TABLE_COLUMNS["responses"] if name != "contract"]
    stored = stored.select(response_columns)

    # Diagnostics: one row per list element, with its response's id, time and slice key.
    lists = responses["diagnostics"].combine_chunks()
    owners = pc.list_parent_indices(lists)
    flat = lists.flatten()
    slice_values = [tuple(responses[column].to_pylist()) for column in SLICE_COLUMNS]
    keys_by_row = [slice_key(values) for values in zip(*slice_values, strict=True)] if responses.num_rows else []
    row_keys = pa.array(keys_by_row, type=pa.uint64())
    diagnostic_columns = {
        "response_id": pc.take(responses["response_id"], owners),
        **{field: flat.field(field) for field, _ in DIAGNOSTIC_FIELDS},
        "ts": pc.take(responses["ts"], owners),
        "slice_key": pc.take(row_keys, owners),
        "batch_id": pa.array([BATCH_ID] * len(flat), type=pa.int64()),
    }
    names = [name for name, _ in TABLE_COLUMNS["diagnostics"]]
    diagnostics = pa.table({name: diagnostic_columns[name] for name in names})
    diagnostic_days = pc.take(days, owners)
    diagnostic_contracts = pc.take(contracts, owners)

    # Slices: the distinct slices of the responses that have diagnostics.
    seen: dict[int, tuple[str | None, ...]] = {}
    counts = responses["n_diagnostics"].to_pylist()
    for row, key in enumerate(keys_by_row):
        if counts[row]:
            seen.setdefault(key, tuple(values[row] for values in slice_values))
    slice_rows = sorted(seen.items())
    slices = pa.table(
        {
            "slice_key": pa.array([key for key, _ in slice_rows], type=pa.uint64()),
            **{
                column: pa.array([values[i] for _, values in slice_rows], type=pa.string())
                for i, column in enumerate(SLICE_COLUMNS)
            },
        }
    )
    return {
        "responses": _by_partition(stored, contracts, days),
        "diagnostics": _by_partition(diagnostics, diagnostic_contracts, diagnostic_days),
        "slices": _by_partition(slices.drop_columns(["contract"]), slices["contract"], None),
    }


def _by_partition(table: pa.Table, contracts: Any, days: Any) -> list[tuple[str, pa.Table]]:
    if table.num_rows == 0:
        return []
    names = pc.cast(contracts, pa.string()).to_pylist()
    dates: list[date | None] = days.to_pylist() if days is not None else [None] * len(names)
    groups: dict[tuple[str, date | None], list[int]] = {}
    for row, key in enumerate(zip(names, dates, strict=True)):
        groups.setdefault(key, []).append(row)
    parts = []
    for (contract, day), rows in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1] or date.min)):
        partition = f"contract={contract}" + ("" if day is None else f"/day={day.isoformat()}")
        parts.append((partition, table.take(pa.array(rows, type=pa.int64()))))
    return parts
