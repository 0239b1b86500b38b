"""Migrations 5 and 6 of the store (promptops.store.ddl): the feedback aggregates the gate reads, rebuilt from the
events and findings. Frozen once released, like every migration: a change is a new migration.
"""

from __future__ import annotations

# The effective outcome (as promptops.store.feedback_totals ranks events when it was written).
_RANK_5 = "CASE outcome WHEN 'fixed' THEN 3 WHEN 'accepted' THEN 2 WHEN 'dismissed' THEN 1 ELSE 0 END"
_OUTCOME_COUNTS_5 = (
    "count(*) AS findings, count(*) FILTER (WHERE o.rank = 3) AS fixed, count(*) FILTER (WHERE o.rank = 2) AS "
    "accepted, count(*) FILTER (WHERE o.rank = 1) AS dismissed, count(*) FILTER (WHERE o.rank = 0) AS ignored"
)  # over findings and finding_outcomes o
_SUMS_5 = "sum(findings), sum(fixed), sum(accepted), sum(dismissed), sum(ignored)"

NAME_5 = "feedback counts per response (the gate's window); each finding's latest outcome rebuilt from the events"
STATEMENTS_5 = (
    # Stores from early versions of migration 4 lack finding_outcomes and feedback_units, or hold them in
    # another shape: all three aggregates are rebuilt from the events and findings (here and in
    # migration 6, each a transaction of its own), in the shapes promptops.store.feedback_totals keeps.
    "DROP TABLE IF EXISTS feedback_units",
    "DROP TABLE IF EXISTS finding_outcomes",
    "CREATE TABLE finding_outcomes (key_hash UBIGINT NOT NULL, score BIGINT NOT NULL, rank TINYINT NOT NULL)",
    """CREATE TABLE feedback_units (
        contract VARCHAR, rollout_id VARCHAR, arm VARCHAR, prompt_version VARCHAR, severity VARCHAR,
        unit VARCHAR,
        findings BIGINT NOT NULL, fixed BIGINT NOT NULL, accepted BIGINT NOT NULL,
        dismissed BIGINT NOT NULL, ignored BIGINT NOT NULL
    )""",
    # Per response of a rollout's arm with a finding: its findings and their effective outcomes, so the
    # gate sums the responses of its window (any time range) without reading a finding or an event.
    """CREATE TABLE response_feedback (
        id_hash UBIGINT NOT NULL, ts TIMESTAMP NOT NULL,
        contract VARCHAR NOT NULL, rollout_id VARCHAR NOT NULL, arm VARCHAR NOT NULL, unit VARCHAR,
        findings INTEGER NOT NULL, fixed INTEGER NOT NULL, accepted INTEGER NOT NULL,
        dismissed INTEGER NOT NULL, ignored INTEGER NOT NULL
    )""",
    f"""INSERT INTO finding_outcomes
        SELECT key_hash, max(epoch_us(time) * 4 + {_RANK_5}), arg_max({_RANK_5}, epoch_us(time) * 4 + {_RANK_5})
        FROM feedback GROUP BY key_hash""",
)
NAME_6 = "the feedback counts per unit and per response rebuilt from the findings and their outcomes"
STATEMENTS_6 = (
    # In two joins through a table, not one: at 10^7 findings the three-way join with its grouping ran
    # out of the store's default memory (256 MB), while each join alone spills to disk and completes.
    f"""CREATE TABLE _po_outcomes_6 AS
        SELECT f.id_hash, f.severity, {_OUTCOME_COUNTS_5}
        FROM findings f LEFT JOIN finding_outcomes o ON o.key_hash = f.key_hash
        GROUP BY ALL""",
    """CREATE TABLE _po_rebuilt_6 AS
        SELECT r.id_hash, r.ts, r.contract, r.rollout_id, r.arm, r.prompt_version, o.severity, r.unit,
               o.findings, o.fixed, o.accepted, o.dismissed, o.ignored
        FROM _po_outcomes_6 o JOIN responses r ON r.id_hash = o.id_hash""",
    "DROP TABLE _po_outcomes_6",
    f"""INSERT INTO feedback_units
        SELECT contract, rollout_id, arm, prompt_version, severity, unit, {_SUMS_5}
        FROM _po_rebuilt_6 GROUP BY ALL""",
    f"""INSERT INTO response_feedback
        SELECT id_hash, ts, contract, rollout_id, arm, unit, {_SUMS_5}
        FROM _po_rebuilt_6 WHERE rollout_id IS NOT NULL AND arm IS NOT NULL
        GROUP BY ALL ORDER BY ts""",
    "DROP TABLE _po_rebuilt_6",
)
