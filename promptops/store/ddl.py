"""The store's schema: versioned tables with forward migrations, and the rate views derived from them.

Tables change only through ``MIGRATIONS``: an ordered list, each entry applied once, in its own transaction, and
recorded in ``schema_version``. A released migration is never edited; a change is a new entry at the end.
Views hold no data, so they are not migrated: ``VIEWS`` is recreated whenever its text changes (a hash kept in
``store_meta``), which keeps the DuckDB file, a Parquet directory and the code on the very same definitions.
"""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple

import duckdb

from promptops.parsing.diagnostics import COERCION_CODES, DROP_CODES, Code
from promptops.store import catalogue, migrations_feedback
from promptops.store.errors import StoreError


class Migration(NamedTuple):  # not a dataclass: every gate defines it at start-up
    version: int
    name: str
    statements: tuple[str, ...]


# The response columns that diagnostics are sliced by in rate queries. A diagnostic row holds their
# ``slice_key``: 64 bits of md5 of the values as a JSON array, so the key depends only on the values and the
# slices of many stores merge in one Parquet directory.
SLICE_COLUMNS = (
    "contract",
    "rollout_id",
    "arm",
    "model",
    "prompt_version",
    "schema_version",
    "schema_floor",
    "prompt_pin",
)


def md5_lower(expression: str) -> str:
    """SQL for ``md5_number_lower(expression)``, the 64-bit hash the store keys ids, runs and slices by.

    md5_number_lower goes through a bit string and costs four times md5_number, whose high 64 bits are the
    same number (a test checks it); ingest hashes every response id twice per batch.
    """
    return f"(md5_number({expression}) >> 64)::UBIGINT"


SLICE_KEY = md5_lower(f"to_json([{', '.join(SLICE_COLUMNS)}])")
# The key feedback joins findings on: a finding id is unique within its response only.
FINDING_KEY = md5_lower("response_id || chr(31) || finding_id")
EVENT_KEY = md5_lower("source || chr(31) || event_id")
_SLICE_COLUMNS_DDL = """contract VARCHAR NOT NULL,
                rollout_id VARCHAR,
                arm VARCHAR,
                model VARCHAR,
                prompt_version VARCHAR,
                schema_version VARCHAR,
                schema_floor VARCHAR NOT NULL,
                prompt_pin VARCHAR NOT NULL"""

_SCHEMA_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL,
    name VARCHAR NOT NULL,
    applied_at TIMESTAMP NOT NULL
)"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "responses, diagnostics, batches, segments, store_meta",
        (
            # One row per response. Versions are as the response declared them (NULL when it declared none
            # readable); schema_floor/prompt_pin/prompt_patch_drift are the policy the parser applied.
            # id_hash (64 bits of md5 of response_id) makes the duplicate check scan 8 bytes a row.
            """CREATE TABLE IF NOT EXISTS responses (
                response_id VARCHAR NOT NULL,
                id_hash UBIGINT NOT NULL,
                ts TIMESTAMP NOT NULL,
                contract VARCHAR NOT NULL,
                rollout_id VARCHAR,
                arm VARCHAR,
                unit VARCHAR,
                model VARCHAR,
                latency_ms DOUBLE,
                tokens BIGINT,
                prompt_version VARCHAR,
                schema_version VARCHAR,
                schema_floor VARCHAR NOT NULL,
                prompt_pin VARCHAR NOT NULL,
                prompt_patch_drift BOOLEAN NOT NULL,
                accepted BOOLEAN NOT NULL,
                reason VARCHAR,
                findings_seen INTEGER NOT NULL,
                findings_kept INTEGER NOT NULL,
                findings_dropped INTEGER NOT NULL,
                findings_coerced INTEGER NOT NULL,
                coercions INTEGER NOT NULL,
                n_diagnostics INTEGER NOT NULL,
                extracted BOOLEAN NOT NULL,
                truncated BOOLEAN NOT NULL,
                batch_id BIGINT NOT NULL,
                source VARCHAR,
                source_line INTEGER
            )""",
            # One row per diagnostic, in the parser's order (seq). The response's slicing columns are copied in
            # when the batch is built so that rate queries never join 10^7 rows (until migration 3, which
            # moves them to the small slices table).
            """CREATE TABLE IF NOT EXISTS diagnostics (
                response_id VARCHAR NOT NULL,
                seq INTEGER NOT NULL,
                code VARCHAR NOT NULL,
                level VARCHAR NOT NULL,
                path VARCHAR,
                finding_index INTEGER,
                finding_id VARCHAR,
                message VARCHAR NOT NULL,
                contract VARCHAR NOT NULL,
                ts TIMESTAMP NOT NULL,
                rollout_id VARCHAR,
                arm VARCHAR,
                model VARCHAR,
                prompt_version VARCHAR,
                schema_version VARCHAR,
                schema_floor VARCHAR NOT NULL,
                prompt_pin VARCHAR NOT NULL,
                batch_id BIGINT NOT NULL
            )""",
            """CREATE TABLE IF NOT EXISTS batches (
                batch_id BIGINT NOT NULL,
                committed_at TIMESTAMP NOT NULL,
                writer VARCHAR NOT NULL,
                responses INTEGER NOT NULL,
                diagnostics INTEGER NOT NULL,
                duplicates INTEGER NOT NULL
            )""",
            # Log segments read to the end: the repo-relative path plus the size and sha256 of the bytes read.
            """CREATE TABLE IF NOT EXISTS segments (
                path VARCHAR NOT NULL,
                size BIGINT NOT NULL,
                sha256 VARCHAR NOT NULL,
                records BIGINT NOT NULL,
                bad_records BIGINT NOT NULL,
                ingested_at TIMESTAMP NOT NULL
            )""",
            """CREATE TABLE IF NOT EXISTS store_meta (key VARCHAR NOT NULL, value VARCHAR NOT NULL)""",
            """INSERT INTO store_meta SELECT 'store_id', replace(gen_random_uuid()::VARCHAR, '-', '')
               WHERE NOT EXISTS (SELECT 1 FROM store_meta WHERE key = 'store_id')""",
        ),
    ),
    Migration(
        2,
        "traces of the re-ask loop; batches count their trace steps",
        (
            # One row per attempt of promptops.reask (a TraceStep): agent-output's {agent, started_at, finished_at,
            # tokens_used, status} plus what per-version retry rates need. (run_id, attempt) identifies a step;
            # run_hash (64 bits of md5 of run_id) keeps the duplicate check as cheap as responses' id_hash.
            """CREATE TABLE IF NOT EXISTS traces (
                run_id VARCHAR NOT NULL,
                run_hash UBIGINT NOT NULL,
                attempt INTEGER NOT NULL,
                agent VARCHAR NOT NULL,
                started_at TIMESTAMP NOT NULL,
                finished_at TIMESTAMP NOT NULL,
                tokens_used BIGINT,
                status VARCHAR NOT NULL,
                reason VARCHAR,
                contract VARCHAR NOT NULL,
                prompt_version VARCHAR NOT NULL,
                schema_version VARCHAR NOT NULL,
                batch_id BIGINT NOT NULL
            )""",
            # Batches written before this migration held no trace steps: the defaults say so.
            "ALTER TABLE batches ADD COLUMN traces INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE batches ADD COLUMN trace_duplicates INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    Migration(
        3,
        "diagnostics name their response's slice (slices table) instead of copying its columns",
        (
            # Each distinct combination of the response columns that rates slice diagnostics by, once. Storing
            # them per diagnostic made every diagnostic row carry eight strings, which halved insert speed.
            f"""CREATE TABLE IF NOT EXISTS slices (
                slice_key UBIGINT NOT NULL,
                {_SLICE_COLUMNS_DDL}
            )""",
            f"INSERT INTO slices SELECT DISTINCT {SLICE_KEY} AS slice_key, {', '.join(SLICE_COLUMNS)} FROM diagnostics",
            # Rebuilt rather than altered so the columns keep the order a new store has.
            """CREATE TABLE diagnostics_v3 (
                response_id VARCHAR NOT NULL,
                seq INTEGER NOT NULL,
                code VARCHAR NOT NULL,
                level VARCHAR NOT NULL,
                path VARCHAR,
                finding_index INTEGER,
                finding_id VARCHAR,
                message VARCHAR NOT NULL,
                ts TIMESTAMP NOT NULL,
                slice_key UBIGINT NOT NULL,
                batch_id BIGINT NOT NULL
            )""",
            f"""INSERT INTO diagnostics_v3
                SELECT response_id, seq, code, level, path, finding_index, finding_id, message, ts,
                       {SLICE_KEY}, batch_id
                FROM diagnostics""",
            "DROP VIEW IF EXISTS diagnostic_facts",  # the only view over diagnostics; recreated after migrating
            "DROP TABLE diagnostics",
            "ALTER TABLE diagnostics_v3 RENAME TO diagnostics",
        ),
    ),
    Migration(
        4,
        "findings of each response with their stable ids; finding feedback events",
        (
            # One row per kept finding of an accepted response (promptops.parsing.ids), so feedback joins back
            # to its response, arm and prompt version. key_hash (64 bits of md5 of response id and finding id)
            # and id_hash (the response's, as in responses) are the join keys, so reads never join strings;
            # responses stored before this migration have no rows here.
            """CREATE TABLE IF NOT EXISTS findings (
                response_id VARCHAR NOT NULL,
                id_hash UBIGINT NOT NULL,
                finding_index INTEGER NOT NULL,
                finding_id VARCHAR NOT NULL,
                key_hash UBIGINT NOT NULL,
                severity VARCHAR,
                path VARCHAR,
                line INTEGER,
                batch_id BIGINT NOT NULL
            )""",
            # Every feedback event ever ingested (docs/feedback.md), the unknown ones too: an event joins its
            # finding when the later of the two is stored, so an event that arrived before its response counts
            # once the response is stored. (source, event_id) is unique; event_hash keys the duplicate check.
            """CREATE TABLE IF NOT EXISTS feedback (
                event_id VARCHAR NOT NULL,
                source VARCHAR NOT NULL,
                event_hash UBIGINT NOT NULL,
                finding_id VARCHAR NOT NULL,
                response_id VARCHAR NOT NULL,
                key_hash UBIGINT NOT NULL,
                outcome VARCHAR NOT NULL,
                time TIMESTAMP NOT NULL,
                actor VARCHAR,
                actor_kind VARCHAR NOT NULL,
                evidence VARCHAR NOT NULL,
                feedback_version VARCHAR NOT NULL,
                batch_id BIGINT NOT NULL,
                file VARCHAR,
                file_line INTEGER
            )""",
            # Kept by both ingests in their batch's transaction (promptops.store.feedback_totals), so the gate
            # reads aggregates: each finding's latest (score = epoch_us(time) * 4 + rank, rank as feedback_query
            # ranks), and per (slice, severity, unit) the findings and their effective outcomes.
            "CREATE TABLE IF NOT EXISTS finding_outcomes (key_hash UBIGINT NOT NULL, score BIGINT NOT NULL, "
            "rank TINYINT NOT NULL)",
            """CREATE TABLE IF NOT EXISTS feedback_units (
                contract VARCHAR, rollout_id VARCHAR, arm VARCHAR, prompt_version VARCHAR, severity VARCHAR,
                unit VARCHAR,
                findings BIGINT NOT NULL, fixed BIGINT NOT NULL, accepted BIGINT NOT NULL,
                dismissed BIGINT NOT NULL, ignored BIGINT NOT NULL
            )""",
            "ALTER TABLE batches ADD COLUMN findings INTEGER NOT NULL DEFAULT 0",
            "ALTER TABLE batches ADD COLUMN feedback INTEGER NOT NULL DEFAULT 0",
        ),
    ),
    Migration(5, migrations_feedback.NAME_5, migrations_feedback.STATEMENTS_5),
    Migration(6, migrations_feedback.NAME_6, migrations_feedback.STATEMENTS_6),
)

LATEST_VERSION = MIGRATIONS[-1].version

# Columns of the data tables, in table order: Parquet views select exactly these so both sources look alike.
TABLE_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "responses": (
        ("response_id", "VARCHAR"),
        ("id_hash", "UBIGINT"),
        ("ts", "TIMESTAMP"),
        ("contract", "VARCHAR"),
        ("rollout_id", "VARCHAR"),
        ("arm", "VARCHAR"),
        ("unit", "VARCHAR"),
        ("model", "VARCHAR"),
        ("latency_ms", "DOUBLE"),
        ("tokens", "BIGINT"),
        ("prompt_version", "VARCHAR"),
        ("schema_version", "VARCHAR"),
        ("schema_floor", "VARCHAR"),
        ("prompt_pin", "VARCHAR"),
        ("prompt_patch_drift", "BOOLEAN"),
        ("accepted", "BOOLEAN"),
        ("reason", "VARCHAR"),
        ("findings_seen", "INTEGER"),
        ("findings_kept", "INTEGER"),
        ("findings_dropped", "INTEGER"),
        ("findings_coerced", "INTEGER"),
        ("coercions", "INTEGER"),
        ("n_diagnostics", "INTEGER"),
        ("extracted", "BOOLEAN"),
        ("truncated", "BOOLEAN"),
        ("batch_id", "BIGINT"),
        ("source", "VARCHAR"),
        ("source_line", "INTEGER"),
    ),
    "diagnostics": (
        ("response_id", "VARCHAR"),
        ("seq", "INTEGER"),
        ("code", "VARCHAR"),
        ("level", "VARCHAR"),
        ("path", "VARCHAR"),
        ("finding_index", "INTEGER"),
        ("finding_id", "VARCHAR"),
        ("message", "VARCHAR"),
        ("ts", "TIMESTAMP"),
        ("slice_key", "UBIGINT"),
        ("batch_id", "BIGINT"),
    ),
    "slices": (("slice_key", "UBIGINT"), *((name, "VARCHAR") for name in SLICE_COLUMNS)),
    "traces": (
        ("run_id", "VARCHAR"),
        ("run_hash", "UBIGINT"),
        ("attempt", "INTEGER"),
        ("agent", "VARCHAR"),
        ("started_at", "TIMESTAMP"),
        ("finished_at", "TIMESTAMP"),
        ("tokens_used", "BIGINT"),
        ("status", "VARCHAR"),
        ("reason", "VARCHAR"),
        ("contract", "VARCHAR"),
        ("prompt_version", "VARCHAR"),
        ("schema_version", "VARCHAR"),
        ("batch_id", "BIGINT"),
    ),
}

# Per table, the time column a Parquet export partitions by day.
TIME_COLUMNS: dict[str, str] = {"responses": "ts", "diagnostics": "ts", "traces": "started_at"}


def _sql_list(codes: frozenset[Code]) -> str:
    return ", ".join(f"'{code}'" for code in sorted(codes))


def _columns(template: str) -> str:  # one select-list line per catalogue metric
    return "\n".join(f"           {template.format(sql=m.sql, column=m.column)}," for m in catalogue.per_response())


# The rate definitions (docs/store.md). Every per-response indicator is a Bernoulli outcome over
# all responses, as the rollout gate counts them (docs/rollouts.md); the metrics come from the catalogue.
VIEWS: tuple[str, ...] = (
    f"""CREATE OR REPLACE VIEW response_indicators AS
    SELECT response_id, ts, CAST(ts AS DATE) AS day, contract, rollout_id, arm, unit, model,
           prompt_version, schema_version, schema_floor, prompt_pin, accepted, reason,
           findings_seen, findings_kept, findings_dropped, findings_coerced, coercions,
{_columns("{sql} AS {column}")}
           extracted, truncated
    FROM responses""",
    f"""CREATE OR REPLACE VIEW diagnostic_facts AS
    SELECT response_id, seq, code, level, path, finding_index, finding_id, message,
           contract, ts, CAST(ts AS DATE) AS day, rollout_id, arm, model,
           prompt_version, schema_version, schema_floor, prompt_pin,
           CASE WHEN level = 'error' THEN 'reject'
                WHEN code IN ({_sql_list(COERCION_CODES)}) THEN 'coercion'
                WHEN level = 'warning' AND code IN ({_sql_list(DROP_CODES)}) THEN 'drop'
                ELSE 'note' END AS kind,
           regexp_replace(path, '\\[[0-9]+\\]', '[]', 'g') AS field
    FROM diagnostics JOIN slices USING (slice_key)""",
    f"""CREATE OR REPLACE VIEW daily_rates AS
    SELECT contract, rollout_id, arm, prompt_version, schema_version, schema_floor, prompt_pin, day,
           count(*) AS responses,
{_columns("count(*) FILTER (WHERE {column}) AS {column}")}
           count(*) FILTER (WHERE extracted) AS extracted,
           count(*) FILTER (WHERE truncated) AS truncated,
           sum(findings_seen) AS findings_seen,
           sum(findings_dropped) AS findings_dropped,
           sum(findings_coerced) AS findings_coerced,
{_columns("count(*) FILTER (WHERE {column}) / count(*) AS {column}_rate")}
           sum(findings_dropped) / nullif(sum(findings_seen), 0) AS finding_drop_rate,
           sum(findings_coerced) / nullif(sum(findings_seen), 0) AS finding_coercion_rate
    FROM response_indicators
    GROUP BY ALL""",
    # One row per run of the re-ask loop (its trace steps), with the columns response_indicators has so the
    # same filters and --by keys apply: ts is the first attempt's start, and what traces do not carry
    # (rollout, arm, model, parser policy) is NULL, so runs group under a null key and match no --rollout.
    """CREATE OR REPLACE VIEW run_indicators AS
    SELECT run_id, contract, agent, prompt_version, schema_version,
           min(started_at) AS ts, CAST(min(started_at) AS DATE) AS day,
           CAST(NULL AS VARCHAR) AS rollout_id, CAST(NULL AS VARCHAR) AS arm, CAST(NULL AS VARCHAR) AS model,
           CAST(NULL AS VARCHAR) AS schema_floor, CAST(NULL AS VARCHAR) AS prompt_pin,
           count(*) AS attempts,
           sum(tokens_used) AS tokens_used,
           max(attempt) > 1 AS retried,
           bool_or(attempt = 1 AND status = 'failed') AND bool_or(attempt > 1 AND status = 'ok') AS recovered,
           bool_or(status = 'ok') AS succeeded
    FROM traces
    GROUP BY run_id, contract, agent, prompt_version, schema_version""",
    """CREATE OR REPLACE VIEW daily_run_rates AS
    SELECT contract, agent, prompt_version, schema_version, day,
           count(*) AS runs,
           sum(attempts) AS attempts,
           count(*) FILTER (WHERE retried) AS retried,
           count(*) FILTER (WHERE recovered) AS recovered,
           count(*) FILTER (WHERE retried) / count(*) AS retry_rate,
           count(*) FILTER (WHERE recovered) / count(*) AS recovered_rate
    FROM run_indicators
    GROUP BY ALL""",
)

VIEWS_STAMP = hashlib.sha256("\n;\n".join(VIEWS).encode()).hexdigest()[:16]


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | dict[str, Any] | None = None) -> Any:
    """The single value ``sql`` returns. Fetches the whole result: DuckDB refuses further work on a connection
    whose last result was only partly fetched."""
    rows = con.execute(sql, params).fetchall()
    return rows[0][0] if rows else None


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The store's applied schema version; 0 for a new, empty database."""
    try:  # asking directly: binding information_schema costs a read-only open (the gate's) about 8 ms
        version = scalar(con, "SELECT max(version) FROM main.schema_version")
    except duckdb.CatalogException:
        return 0
    return int(version) if version is not None else 0


def migrate(con: duckdb.DuckDBPyConnection, display: str) -> None:
    """Apply the migrations the store lacks, each in its own transaction, then refresh the views if stale."""
    con.execute(_SCHEMA_VERSION_TABLE)
    current = schema_version(con)
    if current > LATEST_VERSION:
        raise StoreError(
            f"{display}: store schema version {current} is newer than this promptops knows ({LATEST_VERSION}); "
            "upgrade promptops"
        )
    for migration in MIGRATIONS:
        if migration.version <= current:
            continue
        con.execute("BEGIN TRANSACTION")
        try:
            for statement in migration.statements:
                con.execute(statement)
            con.execute(
                "INSERT INTO schema_version VALUES (?, ?, now()::TIMESTAMP)", [migration.version, migration.name]
            )
            con.execute("COMMIT")
        except duckdb.Error:
            con.execute("ROLLBACK")
            raise
    if views_stamp(con) != VIEWS_STAMP:
        con.execute("BEGIN TRANSACTION")
        for statement in VIEWS:
            con.execute(statement)
        con.execute("DELETE FROM store_meta WHERE key = 'views'")
        con.execute("INSERT INTO store_meta VALUES ('views', ?)", [VIEWS_STAMP])
        con.execute("COMMIT")


def views_stamp(con: duckdb.DuckDBPyConnection) -> str | None:
    stamp = scalar(con, "SELECT max(value) FROM store_meta WHERE key = 'views'")
    return None if stamp is None else str(stamp)


def is_current(con: duckdb.DuckDBPyConnection) -> bool:
    """True when the tables and views match this code (a read-only open needs nothing written)."""
    return schema_version(con) == LATEST_VERSION and views_stamp(con) == VIEWS_STAMP


def create_views(con: duckdb.DuckDBPyConnection) -> None:
    """The rate views over whatever ``responses``, ``diagnostics`` and ``traces`` are in ``con`` (tables or
    Parquet views)."""
    for statement in VIEWS:
        con.execute(statement)
