"""The store's questions as a typed interface: what the gate, the report, the Prometheus export and ``rates`` ask.

``RatesSource`` is how rollout/, report/ and cli/ reach stored responses (the gate needs only ``CountsSource``).
``SqlSource`` answers each question with one statement over the rate views on any connection that speaks DuckDB
SQL: a store file, a Parquet export, or the Spark lake (``promptops.spark.views`` translates). A new question is
a method here and on the protocol; a new catalogue metric reaches every count without either. No duckdb import.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

from promptops.core.errors import PromptopsError
from promptops.core.lazy import lazy_names
from promptops.store import catalogue
from promptops.store.filters import window_clause

# What only rates (its report classes) or a usefulness metric (feedback) needs loads when asked, not with
# every gate (docs/performance.md, start-up); ArmFeedback, the usefulness gate's input, is re-exported.
if TYPE_CHECKING:
    from promptops.store.feedback_units import ArmFeedback as ArmFeedback
    from promptops.store.metrics import RatesQuery, RatesReport

__getattr__ = lazy_names(__name__, {"ArmFeedback": "promptops.store.feedback_units"})

Bucket = Literal["hour", "day", "week", "month"]
TEXT_LIMIT = 300  # characters kept of a model-controlled string in an example (message, path, finding id)


# NamedTuples, not dataclasses (copy one with ``_replace``): every gate defines them at start-up, and a frozen
# dataclass costs five times as much to define (docs/performance.md, start-up).
class Window(NamedTuple):
    """Which responses a question counts: a contract's, maybe one rollout's, in [since, until] (naive UTC), maybe
    one arm's (None: every arm; a caller that needs one arm's counts asks for it, so the others are not grouped)."""

    contract: str
    rollout_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    arm: str | None = None


class ArmCounts(NamedTuple):
    """Responses of one arm (and bucket) in a window, and how many tripped each catalogue metric."""

    n: int
    hits: dict[str, int]
    first: datetime | None = None
    last: datetime | None = None


class TrafficRow(NamedTuple):
    """Counts of one (rollout, arm, prompt version, schema version) slice of the contract's responses."""

    rollout: str | None
    arm: str | None
    prompt_version: str | None
    schema_version: str | None
    responses: int
    accepted: int
    findings_seen: int
    findings_dropped: int
    findings_coerced: int
    coercions: int
    rejects: dict[str, int]  # reject reason -> responses

    @property
    def rejected(self) -> int:
        return self.responses - self.accepted

    def to_dict(self) -> dict[str, Any]:
        data = self._asdict() | {"rejects": dict(self.rejects)}  # in field order; rejected follows accepted
        return {**{key: data.pop(key) for key in list(data)[:6]}, "rejected": self.rejected, **data}


class Example(NamedTuple):
    """A recent diagnostic that lost something (a dropped finding or a rejected response), as stored.

    ``path``, ``finding_id`` and ``message`` carry model text, cut to TEXT_LIMIT: every renderer escapes them.
    """

    ts: datetime
    kind: str  # drop or reject
    code: str
    path: str | None
    finding_id: str | None
    message: str
    response_id: str
    rollout: str | None
    arm: str | None

    def to_dict(self) -> dict[str, Any]:
        return {**self._asdict(), "ts": self.ts.isoformat()}


class CountsSource(Protocol):
    """What the gate asks: per arm (None: responses without one), counts of every catalogue metric, in the
    whole window (its verdict) and per hour (its looks)."""

    def counts(self, window: Window) -> dict[str | None, ArmCounts]: ...

    # How many of the window's responses tripped catalogue metric ``metric`` (a name of ``per_response``): one
    # number, where the readiness check needs the candidate's incompatible versions and nothing else.
    def hits(self, window: Window, metric: str) -> int: ...

    # Counts per (bucket start, arm), by time then arm; a start is naive UTC (a date for whole days).
    def series(self, window: Window, bucket: Bucket) -> list[tuple[date, str | None, ArmCounts]]: ...

    # Per arm of ``window.rollout_id``, the findings of its responses in the window and their feedback as of
    # ``now`` (naive UTC): what the usefulness metrics judge (catalogue unit ``pull_request``).
    def feedback(self, window: Window, now: datetime) -> dict[str, ArmFeedback]: ...


class RatesSource(CountsSource, Protocol):
    """Everything promptops asks of stored responses (docs/design.md, "The store's interface")."""

    # Rates per --by group with their top drop, coercion and reject reasons (``promptops rates``).
    def rates(self, query: RatesQuery) -> RatesReport: ...

    # The window's responses per rollout, arm and declared versions, with their reject reasons.
    def traffic(self, window: Window) -> tuple[TrafficRow, ...]: ...

    # The ``limit`` latest drop and reject diagnostics, newest first.
    def examples(self, window: Window, limit: int) -> tuple[Example, ...]: ...

    # Whether any stored response has ``value`` in ``column`` (an unknown name is a typo, not "no data").
    def holds(self, column: Literal["contract", "rollout_id"], value: str) -> bool: ...


def _filter(window: Window) -> tuple[str, dict[str, Any]]:
    return window_clause(window.contract, window.since, window.until, window.rollout_id, window.arm)


def _clip(column: str) -> str:
    """SQL for ``column`` cut to TEXT_LIMIT characters (with an ellipsis), so a huge model string stays small."""
    return f"CASE WHEN length({column}) > {TEXT_LIMIT} THEN left({column}, {TEXT_LIMIT - 1}) || '…' ELSE {column} END"


class SqlSource:
    """Every question of ``RatesSource`` as DuckDB SQL on ``con`` (a DuckDB connection or a ``SparkLake``)."""

    def __init__(self, con: Any) -> None:
        self.con = con

    def counts(self, window: Window) -> dict[str | None, ArmCounts]:
        return {arm: counts for _, arm, counts in self._counts(window, None)}

    def hits(self, window: Window, metric: str) -> int:
        columns = {m.name: m.column for m in catalogue.per_response()}
        if metric not in columns:
            raise ValueError(f"{metric!r} is not a per-response metric of the catalogue")
        column = columns[metric]
        clause, params = _filter(window)
        sql = f"SELECT count(*) FROM response_indicators WHERE {clause} AND {column}"
        return int(self.con.execute(sql, params).fetchall()[0][0])

    def series(self, window: Window, bucket: Bucket) -> list[tuple[date, str | None, ArmCounts]]:
        return [(start, arm, counts) for start, arm, counts in self._counts(window, bucket)]

    def _counts(self, window: Window, bucket: Bucket | None) -> list[tuple[Any, str | None, ArmCounts]]:
        hits = ", ".join(f"count(*) FILTER (WHERE {m.column})" for m in catalogue.per_response())
        keys = "arm" if bucket is None else f"date_trunc('{bucket}', ts) AS bucket, arm"
        clause, params = _filter(window)
        sql = f"SELECT {keys}, count(*), {hits}, min(ts), max(ts) FROM response_indicators WHERE {clause} GROUP BY ALL"
        found = []
        for row in self.con.execute(sql + (" ORDER BY bucket, arm" if bucket else ""), params).fetchall():
            start, (arm, n, *x, first, last) = (None, row) if bucket is None else (row[0], row[1:])
            by_metric = {m.name: int(count) for m, count in zip(catalogue.per_response(), x, strict=True)}
            found.append((start, arm, ArmCounts(int(n), by_metric, first, last)))
        return found

    def feedback(self, window: Window, now: datetime) -> dict[str, ArmFeedback]:
        if not getattr(self.con, "holds_feedback", True):
            raise PromptopsError("the Spark lake holds no findings or feedback: gate usefulness metrics on a store")
        if window.rollout_id is None:
            raise ValueError("feedback is asked per rollout")
        from promptops.store.feedback_units import arm_feedback

        return arm_feedback(self.con, window.contract, window.rollout_id, window.since, now)

    def rates(self, query: RatesQuery) -> RatesReport:
        from promptops.store import metrics

        return metrics.rates(self.con, query)

    def traffic(self, window: Window) -> tuple[TrafficRow, ...]:
        clause, params = _filter(window)
        # One scan, grouped by the reject reason too (NULL for accepted responses), folded per slice below.
        rows = self.con.execute(
            "SELECT rollout_id, arm, prompt_version, schema_version, reason, count(*), count(*) FILTER (WHERE "
            "accepted), coalesce(sum(findings_seen), 0), coalesce(sum(findings_dropped), 0), coalesce(sum("
            f"findings_coerced), 0), coalesce(sum(coercions), 0) FROM response_indicators WHERE {clause} "
            "GROUP BY ALL ORDER BY ALL NULLS FIRST",
            params,
        ).fetchall()
        slices: dict[tuple[str | None, str | None, str | None, str | None], list[int]] = {}
        rejects: dict[tuple[str | None, str | None, str | None, str | None], dict[str, int]] = {}
        for rollout, arm, prompt, schema, reason, *counts in rows:
            key = (rollout, arm, prompt, schema)
            totals = slices.setdefault(key, [0] * len(counts))
            for i, count in enumerate(counts):
                totals[i] += int(count)
            if reason is not None:
                rejects.setdefault(key, {})[str(reason)] = int(counts[0])
        return tuple(
            TrafficRow(*key, n, accepted, seen, dropped, coerced, coercions, rejects.get(key, {}))
            for key, (n, accepted, seen, dropped, coerced, coercions) in slices.items()
        )

    def examples(self, window: Window, limit: int) -> tuple[Example, ...]:
        clause, params = _filter(window)
        rows = self.con.execute(
            f"SELECT ts, kind, code, {_clip('path')}, {_clip('finding_id')}, {_clip('message')}, "
            f"{_clip('response_id')}, rollout_id, arm FROM diagnostic_facts WHERE {clause} "
            "AND kind IN ('drop', 'reject') ORDER BY ts DESC, response_id, seq LIMIT $limit",
            {**params, "limit": limit},
        ).fetchall()
        return tuple(
            Example(ts, str(kind), str(code), path, finding, str(message), str(response), rollout, arm)
            for ts, kind, code, path, finding, message, response, rollout, arm in rows
        )

    def holds(self, column: Literal["contract", "rollout_id"], value: str) -> bool:
        sql = f"SELECT EXISTS (SELECT 1 FROM responses WHERE {column} = $value)"
        return bool(self.con.execute(sql, {"value": value}).fetchall()[0][0])
