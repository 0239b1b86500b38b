"""Diagnostics generated with SQL for the benchmarks' large stores (bench_store, bench_report).

The responses come first (each benchmark generates its own traffic); this adds a drop diagnostic for each
response that dropped a finding and a coercion for each that coerced one, with messages, and their slices.
"""

from __future__ import annotations

import duckdb

from promptops.store.ddl import SLICE_COLUMNS, SLICE_KEY

_NOISY = "findings_dropped > 0 OR coercions > 0"


def diagnostics(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(
        f"INSERT INTO slices SELECT DISTINCT {SLICE_KEY}, {', '.join(SLICE_COLUMNS)} FROM responses WHERE {_NOISY}"
    )
    con.execute(f"""
        INSERT INTO diagnostics BY NAME
        SELECT response_id, k AS seq,
               CASE WHEN k = 0 AND findings_dropped > 0
                    THEN (['invalid_enum', 'missing_required_field', 'file_not_in_changed_files', 'invalid_line'])
                         [1 + (id_hash % 4)::BIGINT]
                    ELSE (['trimmed_whitespace', 'converted_numeric_string', 'normalized_path_separator'])
                         [1 + (id_hash % 3)::BIGINT] END AS code,
               CASE WHEN k = 0 AND findings_dropped > 0 THEN 'warning' ELSE 'info' END AS level,
               printf('findings[%d].%s', id_hash % 6,
                      (['line', 'file', 'title', 'severity'])[1 + (id_hash % 4)::BIGINT]) AS path,
               (id_hash % 6)::INTEGER AS finding_index, printf('F%d', 1 + id_hash % 6) AS finding_id,
               printf('finding dropped: findings[%d]: generated diagnostic of %s', id_hash % 6, response_id)
                   AS message,
               ts, {SLICE_KEY} AS slice_key, batch_id
        FROM responses, range(2) AS g(k)
        WHERE (k = 0 AND ({_NOISY})) OR (k = 1 AND findings_dropped > 0 AND coercions > 0)
        """)
