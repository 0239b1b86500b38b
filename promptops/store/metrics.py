"""Rates over a store: per-response indicators, per-finding rates, and the top reasons behind them.

Every query reads only the views of ``promptops.store.ddl`` (``response_indicators``, ``diagnostic_facts``),
so it runs unchanged on a DuckDB file and on a Parquet export (``promptops.store.parquet``). Counts always
travel with their rates: a rate without its denominator cannot be gated on.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

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

# Per-response indicators (view columns), in report order. Each is counted over all responses.
PER_RESPONSE = (
    "any_drop",
    "any_coercion",
    "incompatible_version",
    "rejected",
    "all_findings_dropped",
    "extracted",
    "truncated",
)


@dataclass(frozen=True)
class RatesQuery:
    contract: str
    by: tuple[str, ...] = ()
    since: datetime | None = None  # UTC, naive
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
    responses: int
    accepted: int
    per_response: dict[str, Rate]
    per_finding: dict[str, Rate]  # "dropped" and "coerced" over findings seen
    top_drop_reasons: list[tuple[str, int]]
    top_coerced_fields: list[tuple[str, int]]
    top_reject_reasons: list[tuple[str, int]]

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
    """The rates of ``query`` over the views in ``con``, one GroupRates per distinct --by key."""
    columns = [GROUP_COLUMNS[name] for name in query.by]
    where, params = _filters(query)
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
    groups = []
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
            )
        )
    return RatesReport(query, groups)


def _filters(query: RatesQuery) -> tuple[str, dict[str, Any]]:
    clauses = ["contract = $contract"]
    params: dict[str, Any] = {"contract": query.contract}
    if query.since is not None:
        clauses.append("ts >= $since")
        params["since"] = query.since
    if query.rollout_id is not None:
        clauses.append("rollout_id = $rollout")
        params["rollout"] = query.rollout_id
    return " AND ".join(clauses), params


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
