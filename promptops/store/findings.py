"""The findings rows of a batch: each kept finding of an accepted response with its stable id
(promptops.parsing.ids), in the columns of the store's ``findings`` table (less key_hash and batch_id, which
the store adds)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from promptops.parsing.ids import FindingRow

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


def findings_table(rows: Sequence[FindingRow], responses: Sequence[int], response_ids: pa.Array) -> pa.Table:
    """Finding rows; ``responses[i]`` is the index of row i's response in ``response_ids`` (gathered by Arrow)."""
    if not rows:
        return empty_findings()
    index, finding_id, severity, path, line = zip(*rows, strict=True)
    return pa.Table.from_arrays(
        [
            response_ids.take(pa.array(responses, type=_I32)),
            pa.array(index, type=_I32),
            pa.array(finding_id, type=pa.string()),
            pa.array(severity, type=pa.string()),
            pa.array(path, type=pa.string()),
            # a line beyond int32 is stored as unknown rather than failing the batch
            pa.array([v if v is None or -(2**31) <= v < 2**31 else None for v in line], type=_I32),
        ],
        schema=FINDING_SCHEMA,
    )
