"""The findings rows of a batch: each kept finding of an accepted response with its stable id
(promptops.parsing.ids), in the columns of the store's ``findings`` table (less key_hash and batch_id, which
the store adds)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from promptops.parsing.ids import FindingColumns

_I32 = pa.int32()
FINDING_SCHEMA = pa.schema(
    [
        ("response_id", pa.string()),
        ("finding_index", _I32),
        ("finding_id", pa.string()),
        ("severity", pa.string()),
        ("path", pa.string()),
        ("line", _I32),
    ]
)


def empty_findings() -> pa.Table:
    return FINDING_SCHEMA.empty_table()


def findings_table(columns: FindingColumns, response_ids: pa.Array | pa.ChunkedArray) -> pa.Table:
    """Finding rows; each finding's response id is gathered from ``response_ids`` by Arrow."""
    if not len(columns):
        return empty_findings()
    lines = pa.array(columns.line, type=pa.int64())
    if lines.null_count < len(lines):
        low, high = pc.min(lines).as_py(), pc.max(lines).as_py()
        if low < -(2**31) or high >= 2**31:  # a line beyond int32 is stored as unknown rather than failing the batch
            outside = pc.or_(pc.less(lines, -(2**31)), pc.greater_equal(lines, 2**31))
            lines = pc.if_else(outside, pa.scalar(None, type=pa.int64()), lines)
    return pa.Table.from_arrays(
        [
            response_ids.take(pa.array(columns.response, type=_I32)),
            pa.array(columns.position, type=_I32),
            pa.array(columns.finding_id, type=pa.string()),
            pa.array(columns.severity, type=pa.string()),
            pa.array(columns.path, type=pa.string()),
            lines.cast(_I32),
        ],
        schema=FINDING_SCHEMA,
    )
