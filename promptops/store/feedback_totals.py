"""The aggregates the feedback read queries use instead of reading every event and finding.

Both ingests keep them in the transaction that writes their batch, so a killed run leaves them matching the
events and findings stored:
- ``finding_outcomes``: per finding (key_hash) with an event, the score (epoch_us(time) * 4 + rank) and rank of
  its latest event, ties broken by rank, as feedback_query decides it;
- ``feedback_units``: per (contract, rollout, arm, prompt version, severity, unit), the findings stored and how
  many of them have each effective outcome (``feedback_counts``);
- ``response_feedback``: the same counts per response of a rollout's arm, with its time, so the gate sums the
  responses of its window (``arm_feedback``).
Feedback ingest moves a finding whose latest event changed from its old outcome's count to its new one; response
ingest adds its findings, with the outcome of any event that arrived before them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the gate imports RANK from here without loading DuckDB
    import duckdb

RANK = "CASE outcome WHEN 'fixed' THEN 3 WHEN 'accepted' THEN 2 WHEN 'dismissed' THEN 1 ELSE 0 END"
GROUP_COLUMNS = "contract, rollout_id, arm, prompt_version, severity, unit"
_COUNTS = ("fixed", "accepted", "dismissed", "ignored")
_SUMS = ", ".join(f"sum(m.{name})::BIGINT AS {name}" for name in ("findings", *_COUNTS))  # over _po_moved m

# Findings (in _po_changed) whose latest event changed: -1 in the old outcome's count, +1 in the new one's.
_CHANGED = f"""CREATE OR REPLACE TEMP TABLE _po_changed AS
WITH latest AS (
    SELECT key_hash, max(epoch_us(time) * 4 + {RANK}) AS score, arg_max({RANK}, epoch_us(time) * 4 + {RANK}) AS rank
    FROM feedback WHERE batch_id = $batch GROUP BY key_hash
)
SELECT n.key_hash, n.score, n.rank, o.rank AS old_rank
FROM latest n LEFT JOIN finding_outcomes o ON o.key_hash = n.key_hash
WHERE o.score IS NULL OR n.score > o.score"""
# Each aggregate's change, per (response, severity): the one join of findings both tables are moved from.
_MOVED = f"""CREATE OR REPLACE TEMP TABLE _po_moved AS
SELECT f.id_hash, f.severity, 0::BIGINT AS findings,
{
    ", ".join(
        f"sum((c.rank = {3 - i})::BIGINT - coalesce(c.old_rank = {3 - i}, false)::BIGINT) AS {name}"
        for i, name in enumerate(_COUNTS)
    )
}
FROM _po_changed c JOIN findings f ON f.key_hash = c.key_hash
GROUP BY ALL"""
_ADDED = f"""CREATE OR REPLACE TEMP TABLE _po_moved AS
SELECT f.id_hash, f.severity, count(*) AS findings,
{", ".join(f"count(*) FILTER (WHERE o.rank = {3 - i}) AS {name}" for i, name in enumerate(_COUNTS))}
FROM findings f LEFT JOIN finding_outcomes o ON o.key_hash = f.key_hash
WHERE f.batch_id = $batch
GROUP BY ALL"""
_UNITS_DELTA = f"""CREATE OR REPLACE TEMP TABLE _po_delta AS
SELECT r.contract, r.rollout_id, r.arm, r.prompt_version, m.severity, r.unit, {_SUMS}
FROM _po_moved m JOIN responses r ON r.id_hash = m.id_hash{{batch}}
GROUP BY ALL"""
# Groups match on all six columns, NULL matching NULL; _po_delta has one row per group. Groups already kept are
# added to, then the new ones inserted.
_SAME = " AND ".join(f"u.{c} IS NOT DISTINCT FROM d.{c}" for c in GROUP_COLUMNS.split(", "))
_MERGE_UNITS = (
    f"""UPDATE feedback_units u SET {", ".join(f"{n} = u.{n} + d.{n}" for n in ("findings", *_COUNTS))}
    FROM _po_delta d WHERE {_SAME}""",
    f"INSERT INTO feedback_units BY NAME SELECT d.* FROM _po_delta d ANTI JOIN feedback_units u ON {_SAME}",
    "DROP TABLE _po_delta",
)
# Responses are kept once, when their findings are stored (only those of a rollout's arm: what the gate asks).
_RESPONSES_ADDED = f"""INSERT INTO response_feedback
SELECT r.id_hash, r.ts, r.contract, r.rollout_id, r.arm, r.unit, {_SUMS}
FROM _po_moved m JOIN responses r ON r.id_hash = m.id_hash AND r.batch_id = $batch
WHERE r.rollout_id IS NOT NULL AND r.arm IS NOT NULL
GROUP BY ALL"""
_RESPONSES_MOVED = f"""UPDATE response_feedback u SET {", ".join(f"{n} = u.{n} + d.{n}" for n in _COUNTS)}
FROM (SELECT m.id_hash, {_SUMS} FROM _po_moved m GROUP BY m.id_hash) d
WHERE u.id_hash = d.id_hash"""


def apply_events(con: duckdb.DuckDBPyConnection, batch_id: int) -> None:
    """Account for the feedback events of ``batch_id`` (inside its transaction)."""
    con.execute(_CHANGED, {"batch": batch_id})
    con.execute(
        "DELETE FROM finding_outcomes WHERE key_hash IN (SELECT key_hash FROM _po_changed WHERE old_rank IS NOT NULL)"
    )
    con.execute("INSERT INTO finding_outcomes SELECT key_hash, score, rank FROM _po_changed")
    con.execute(_MOVED)
    con.execute("DROP TABLE _po_changed")
    _merge(con, _RESPONSES_MOVED, None)


def add_findings(con: duckdb.DuckDBPyConnection, batch_id: int) -> None:
    """Account for the findings of ``batch_id`` (inside its transaction)."""
    con.execute(_ADDED, {"batch": batch_id})
    _merge(con, _RESPONSES_ADDED, batch_id)


def _merge(con: duckdb.DuckDBPyConnection, responses: str, batch_id: int | None) -> None:
    """_po_moved into both aggregates; ``batch_id``: the findings are new, their responses of that batch."""
    if batch_id is None:
        con.execute(_UNITS_DELTA.format(batch=""))
    else:  # the batch's responses only: a range of the table to read, not all of it
        con.execute(_UNITS_DELTA.format(batch=" AND r.batch_id = $batch"), {"batch": batch_id})
    for statement in _MERGE_UNITS:
        con.execute(statement)
    con.execute(responses, {"batch": batch_id} if batch_id is not None else {})
    con.execute("DROP TABLE _po_moved")
