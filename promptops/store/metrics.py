"""Rates over a store: per-response indicators, per-finding rates, the top reasons behind them, and the
re-ask loop's per-run rates.

Every query reads only the views of ``promptops.store.ddl`` (``response_indicators``, ``diagnostic_facts``,
``run_indicators``), so it runs unchanged on a DuckDB file and on a Parquet export (``promptops.store.parquet``).
Counts always travel with their rates: a rate without its denominator cannot be gated on.

Responses and re-ask runs are counted apart (the loop's traces are not linked to response rows) and meet in
one group per --by key. Runs carry no rollout, arm, model or parser policy: under those keys they form the
null group, and ``--rollout`` selects none of them (a rollout's groups hold responses only).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from promptops.store import catalogue
from promptops.store.filters import window_clause

if TYPE_CHECKING:  # only annotations: the CLI reads GROUP_COLUMNS for its help without the store extra
    import duckdb

# --by names -> view columns.
GROUP_COLUMNS: dict[str, str] = {
    "prompt_version": "prompt_version",
    "schema_version": "schema_version",
    "arm": "arm",
    "day": "day",
    "rollout": "rollout_id",
    "model": "model",
    "schema_floor": "schema_floor",
    "prompt_pin": "prompt_pin",
}

# Per-response indicators (view columns), in report order: the catalogue's metrics, then two stored flags.
PER_RESPONSE = (*(metric.column for metric in catalogue.per_response()), "extracted", "truncated")

# Per-run indicators of the re-ask loop (run_indicators columns), in report order. Each is counted over all runs.
PER_RUN = (
    "retried",  # needed more than one attempt
    "recovered",  # the first attempt failed and a later one succeeded
)


@dataclass(frozen=True)
class RatesQuery:
    contract: str
    by: tuple[str, ...] = ()
    since: datetime | None = None  # UTC, naive
    until: datetime | None = None  # UTC, naive, inclusive: a replay as of this time sees nothing later
    rollout_id: str | None = None
    top: int = 5

    def __post_init__(self) -> None:
        unknown = [name for name in self.by if name not in GROUP_COLUMNS]
        if unknown:
            raise ValueError(f"cannot group by {unknown[0]!r} (choose from {', '.join(GROUP_COLUMNS)})")
        if len(set(self.by)) != len(self.by):
            raise ValueError("a --by name is repeated")


@dataclass(frozen=True)
class Rate:
    count: int
    total: int

    @property
    def rate(self) -> float | None:
        return self.count / self.total if self.total else None

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "total": self.total, "rate": self.rate}


@dataclass(frozen=True)
class GroupRates:
    key: dict[str, str | None]
    responses: int = 0  # none in a group of re-ask runs alone; per_finding's rates are over findings seen
    accepted: int = 0
    per_response: dict[str, Rate] = field(default_factory=lambda: {name: Rate(0, 0) for name in PER_RESPONSE})
    per_finding: dict[str, Rate] = field(default_factory=lambda: {"dropped": Rate(0, 0), "coerced": Rate(0, 0)})
    top_drop_reasons: list[tuple[str, int]] = field(default_factory=list)
    top_coerced_fields: list[tuple[str, int]] = field(default_factory=list)
    top_reject_reasons: list[tuple[str, int]] = field(default_factory=list)
    runs: int = 0  # re-ask runs (one per Asker.ask)
    attempts: int = 0  # their trace steps
    per_run: dict[str, Rate] = field(default_factory=lambda: {name: Rate(0, 0) for name in PER_RUN})

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "responses": self.responses,
            "accepted": self.accepted,
            "per_response": {name: rate.to_dict() for name, rate in self.per_response.items()},
            "per_finding": {name: rate.to_dict() for name, rate in self.per_finding.items()},
            "top_drop_reasons": [{"code": code, "count": n} for code, n in self.top_drop_reasons],
            "top_coerced_fields": [{"field": name, "count": n} for name, n in self.top_coerced_fields],
            "top_reject_reasons": [{"code": code, "count": n} for code, n in self.top_reject_reasons],
            "runs": self.runs,
            "attempts": self.attempts,
            "per_run": {name: rate.to_dict() for name, rate in self.per_run.items()},
        }


@dataclass(frozen=True)
class RatesReport:
    query: RatesQuery
    groups: list[GroupRates]

    def to_dict(self) -> dict[str, Any]:
        since = self.query.since
        return {
            "contract": self.query.contract,
            "by": list(self.query.by),
            "since": None if since is None else since.isoformat(),
            "rollout": self.query.rollout_id,
            "groups": [group.to_dict() for group in self.groups],
        }


def rates(con: duckdb.DuckDBPyConnection, query: RatesQuery) -> RatesReport:
    """The rates of ``query`` over the views in ``con``, one GroupRates per distinct --by key of its
    responses or its re-ask runs."""
    columns = [GROUP_COLUMNS[name] for name in query.by]
    where, params = window_filter(query)
    keys = ", ".join(columns)
    order = ", ".join(f"{column} NULLS FIRST" for column in columns)
    select_keys = f"{keys}, " if columns else ""
    indicator_counts = ", ".join(f"count(*) FILTER (WHERE {name})" for name in PER_RESPONSE)
    rows = con.execute(
        f"SELECT {select_keys}count(*), count(*) FILTER (WHERE accepted), {indicator_counts}, "
        "coalesce(sum(findings_seen), 0), coalesce(sum(findings_dropped), 0), coalesce(sum(findings_coerced), 0) "
        f"FROM response_indicators WHERE {where}"
        + (f" GROUP BY {keys} ORDER BY {order}" if columns else " HAVING count(*) > 0"),
        params,
    ).fetchall()
    tops = _tops(con, columns, where, params, query.top)
    runs = _runs(con, columns, where, params)
    groups: list[GroupRates] = []
    width = len(columns)
    for row in rows:
        key = tuple(row[:width])
        counts = row[width:]
        total = int(counts[0])
        seen = int(counts[2 + len(PER_RESPONSE)])
        finding_counts = counts[3 + len(PER_RESPONSE) :]
        found = tops.get(key, {})
        groups.append(
            GroupRates(
                key={name: _key_text(value) for name, value in zip(query.by, key, strict=True)},
                responses=total,
                accepted=int(counts[1]),
                per_response={name: Rate(int(counts[2 + i]), total) for i, name in enumerate(PER_RESPONSE)},
                per_finding={
                    "dropped": Rate(int(finding_counts[0]), seen),
                    "coerced": Rate(int(finding_counts[1]), seen),
                },
                top_drop_reasons=found.get("drop", []),
                top_coerced_fields=found.get("coercion", []),
                top_reject_reasons=found.get("reject", []),
                **runs.pop(key, {}),
            )
        )
    # Keys only runs have (a version no response declared, the null arm...): groups without responses.
    groups.extend(GroupRates(dict(zip(query.by, map(_key_text, key), strict=True)), **f) for key, f in runs.items())
    if runs and columns:  # the SQL order of the response groups, now over both: NULLS FIRST, then ascending
        groups.sort(key=lambda g: [(value is not None, value or "") for value in g.key.values()])
    return RatesReport(query, groups)


def _runs(
    con: duckdb.DuckDBPyConnection, columns: list[str], where: str, params: dict[str, Any]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """runs, attempts and per_run rates per --by key, from the re-ask loop's run_indicators."""
    keys = ", ".join(columns)
    select_keys = f"{keys}, " if columns else ""
    counts = ", ".join(f"count(*) FILTER (WHERE {name})" for name in PER_RUN)
    rows = con.execute(
        f"SELECT {select_keys}count(*), sum(attempts), {counts} FROM run_indicators WHERE {where}"
        + (f" GROUP BY {keys}" if columns else " HAVING count(*) > 0"),
        params,
    ).fetchall()
    width = len(columns)
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    for row in rows:
        total = int(row[width])
        found[tuple(row[:width])] = {
            "runs": total,
            "attempts": int(row[width + 1]),
            "per_run": {name: Rate(int(row[width + 2 + i]), total) for i, name in enumerate(PER_RUN)},
        }
    return found


def window_filter(query: RatesQuery) -> tuple[str, dict[str, Any]]:
    """The query's contract, time window and rollout as a WHERE clause over a rate view, with its parameters."""
    return window_clause(query.contract, query.since, query.until, query.rollout_id)


def _tops(
    con: duckdb.DuckDBPyConnection, columns: list[str], where: str, params: dict[str, Any], top: int
) -> dict[tuple[Any, ...], dict[str, list[tuple[str, int]]]]:
    """Top drop codes and coerced fields (from diagnostics) and reject reasons (from responses) per group."""
    keys = "".join(f"{c}, " for c in columns)
    partition = ", ".join([*columns, "kind"])
    sql = f"""
        WITH counted AS (
            SELECT {keys}kind, CASE WHEN kind = 'coercion' THEN field ELSE code END AS label, count(*) AS n
            FROM diagnostic_facts WHERE {where} AND kind IN ('drop', 'coercion')
            GROUP BY {keys}kind, label
            UNION ALL
            SELECT {keys}'reject' AS kind, reason AS label, count(*) AS n
            FROM response_indicators WHERE {where} AND reason IS NOT NULL
            GROUP BY {keys}kind, label
        )
        SELECT {keys}kind, label, n FROM counted
        QUALIFY row_number() OVER (PARTITION BY {partition} ORDER BY n DESC, label) <= $top
        ORDER BY {keys}kind, n DESC, label"""
    found: dict[tuple[Any, ...], dict[str, list[tuple[str, int]]]] = {}
    width = len(columns)
    for row in con.execute(sql, {**params, "top": top}).fetchall():
        key = tuple(row[:width])
        kind, label, count = row[width:]
        found.setdefault(key, {}).setdefault(kind, []).append((str(label), int(count)))
    return found


def _key_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, date):
        return value.isoformat()
    return str(value)
