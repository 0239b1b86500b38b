"""Gathering a report: the plans under ``rollout/<contract>/``, their gates, and aggregates from the store.

Every figure comes from the store's interface (``promptops.store.source.RatesSource``), so a DuckDB file, a
Parquet export and the Spark lake give the same report; each question groups or limits where the data is:
what comes back is bounded by the number of buckets, slices and examples, never by the number of responses.
The gate itself is ``promptops.rollout.session.run_gate`` (purpose monitor), not a copy of its statistics.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from promptops.core.contract import Contract
from promptops.core.errors import PromptopsError
from promptops.report.model import (
    ArmSummary,
    ContractReport,
    Count,
    Example,
    MetricSeries,
    Point,
    RolloutView,
    TrafficRow,
)
from promptops.rollout.gate import ARMS
from promptops.rollout.plan import ROLLOUT_DIR, Plan, load_plan, plan_path
from promptops.rollout.session import current_gate, store_time
from promptops.rollout.sizing import plan_needs
from promptops.rollout.stats import wilson, z_one_sided
from promptops.store import catalogue
from promptops.store.metrics import RatesQuery
from promptops.store.source import Bucket, RatesSource, Window

TOP = 5  # reasons and fields listed per arm
EXAMPLES = 12  # recent drops and rejections shown
TRAFFIC_ROWS = 200  # version slices shown; a noisy model can declare many versions
_ROLLOUT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
# Bucket widths for charts, smallest first, with the longest span each is used for (at most ~100-200 points).
_BUCKETS: tuple[tuple[Bucket, timedelta], ...] = (
    ("hour", timedelta(days=3)),
    ("day", timedelta(days=180)),
    ("week", timedelta(days=4 * 366)),
)


class ReportError(PromptopsError):
    """A report that cannot be built: a plan in the wrong place, an unknown rollout, a lock without schemas."""


def gather_report(
    root: Path,
    contract: Contract,
    source: RatesSource | None,
    now: datetime,
    *,
    rollout_id: str | None = None,
    detail: bool = True,
) -> ContractReport:
    """Everything the report shows for ``contract`` at ``now``; ``source`` is the store (None: no store yet).

    ``detail=False`` skips what only the HTML page needs (time series, examples, release history and the
    compatibility matrix): the Prometheus export needs counters and gates only.
    """
    plans = list_plans(root, contract.name, rollout_id)
    rollouts = tuple(_rollout(root, plan, contract, source, now, detail) for plan in plans)
    notes: list[str] = []
    traffic: tuple[TrafficRow, ...] = ()
    examples: tuple[Example, ...] = ()
    until = store_time(now)  # a report as of ``now`` counts nothing logged after it
    if source is not None:
        window = Window(contract.name, rollout_id, until=until)
        traffic = source.traffic(window)
        if detail and len(traffic) > TRAFFIC_ROWS:
            notes.append(f"traffic: the {TRAFFIC_ROWS} largest of {len(traffic):,} version slices are shown")
            traffic = tuple(sorted(traffic, key=lambda t: -t.responses)[:TRAFFIC_ROWS])
        if detail:
            examples = tuple(e._replace(ts=_utc(e.ts)) for e in source.examples(window, EXAMPLES))
    releases: tuple[dict[str, Any], ...] = ()
    matrix = None
    if detail:
        releases, matrix = _releases(root, contract)
    return ContractReport(
        contract=contract.name,
        now=now,
        rollout_filter=rollout_id,
        has_store=source is not None,
        rollouts=rollouts,
        traffic=traffic,
        examples=examples,
        releases=releases,
        matrix=matrix,
        notes=tuple(notes),
    )


def list_plans(root: Path, contract: str, rollout_id: str | None) -> list[Plan]:
    """The plans of ``contract`` (``rollout/<contract>/*.yaml``, by rollout id), or just ``rollout_id``'s."""
    if rollout_id is not None:
        if not _ROLLOUT_ID.match(rollout_id):
            raise ReportError(f"--rollout {rollout_id!r}: a rollout id is letters, digits, '.', '_' and '-'")
        paths = [plan_path(root, contract, rollout_id)]
    else:
        paths = _plan_files(root / ROLLOUT_DIR / contract, f"{ROLLOUT_DIR}/{contract}/")
    plans = []
    for path in paths:
        plan = load_plan(path, f"{ROLLOUT_DIR}/{contract}/{path.name}")
        if plan.contract != contract:
            raise ReportError(
                f"{plan.source}: contract: is {plan.contract!r} but the plan is under {ROLLOUT_DIR}/{contract}/"
            )
        plans.append(plan)
    return plans


def _plan_files(directory: Path, shown: str) -> list[Path]:
    """The ``*.yaml`` files of the plans directory, by rollout id; none when it does not exist. A directory
    that exists but cannot be listed is an error: a report silently omitting every rollout would lie."""
    try:
        names = [entry.name for entry in os.scandir(directory) if entry.name.endswith(".yaml")]
    except FileNotFoundError:
        return []
    except OSError as problem:
        raise ReportError(f"{shown}: cannot list the rollout plans: {problem.strerror}") from None
    return sorted((directory / name for name in names), key=lambda p: p.stem)


def _rollout(
    root: Path, plan: Plan, contract: Contract, source: RatesSource | None, now: datetime, detail: bool
) -> RolloutView:
    held_at = plan.history[-1].at if plan.rolled_back else None
    gate = current_gate(root, plan, contract, source, now)  # after a rollback: the gate that held it, as status
    needs = plan_needs(plan)
    steps = tuple(
        {
            "index": need.index,
            "name": need.name,
            "weight": need.weight,
            "min_responses": need.min_responses,
            "min_duration_seconds": need.min_duration_seconds,
            "candidate_needed": need.candidate_needed,
            "baseline_needed": need.baseline_needed,
        }
        for need in needs
    )
    history = tuple(t.to_dict() for t in plan.history)
    bucket, series = "day", tuple(MetricSeries(s.metric, s.severity, s.slo, s.margin, {}) for s in plan.slos)
    arms: dict[str, ArmSummary] = {}
    if source is not None:
        until = store_time(now)
        arms = _arm_summaries(source, plan, until)
        if detail:
            bucket, series = _series(source, plan, until)
    return RolloutView(
        rollout=plan.rollout_id,
        plan=plan.source,
        baseline=plan.baseline.to_dict(),
        candidate=plan.candidate.to_dict(),
        step=plan.step,
        step_name=plan.steps[plan.step].name,
        weight=plan.weight,
        rolled_back=plan.rolled_back,
        held_at=held_at,
        alpha=plan.alpha,
        statistics=plan.statistics,
        steps=steps,
        history=history,
        gate=gate.to_dict(),
        bucket=bucket,
        series=series,
        arms=arms,
    )


def _bucket(span: timedelta) -> Bucket:
    for name, longest in _BUCKETS:
        if span <= longest:
            return name
    return "month"


def _series(source: RatesSource, plan: Plan, until: datetime) -> tuple[str, tuple[MetricSeries, ...]]:
    """Per metric of the plan and arm, the rate per bucket with one-sided Wilson bounds at the plan's alpha."""
    window = Window(plan.contract, plan.rollout_id, until=until)
    by_arm = source.counts(window).items()
    times = [t for arm, c in by_arm if arm in ARMS for t in (c.first, c.last) if t is not None]
    bucket = _bucket(max(times) - min(times)) if times else "day"
    metrics = [slo.metric for slo in plan.slos if catalogue.metric(slo.metric).unit == "response"]
    z = z_one_sided(plan.alpha)
    points: dict[str, dict[str, list[Point]]] = {slo.metric: {arm: [] for arm in ARMS} for slo in plan.slos}
    for start, arm, counts in source.series(window, bucket):
        for metric in metrics if arm in ARMS else ():
            interval = wilson(x := counts.hits[metric], counts.n, z)
            points[metric][str(arm)].append(Point(_utc(start), counts.n, x, interval.low, interval.high))
    series = tuple(
        MetricSeries(
            slo.metric,
            slo.severity,
            slo.slo,
            slo.margin,
            {arm: tuple(found) for arm, found in points[slo.metric].items() if found},
        )
        for slo in plan.slos  # a usefulness metric's series stays empty: the gate's figures show it
    )
    return bucket, series


def _arm_summaries(source: RatesSource, plan: Plan, until: datetime) -> dict[str, ArmSummary]:
    """Per arm of the rollout (all steps): responses, accepted, and the top drop, coercion and reject reasons."""
    report = source.rates(RatesQuery(plan.contract, by=("arm",), until=until, rollout_id=plan.rollout_id, top=TOP))
    summaries = {}
    for group in report.groups:
        arm = group.key["arm"]
        if arm not in ARMS:
            continue
        summaries[arm] = ArmSummary(
            responses=group.responses,
            accepted=group.accepted,
            top_drop_reasons=tuple(Count(label, n) for label, n in group.top_drop_reasons),
            top_coerced_fields=tuple(Count(label, n) for label, n in group.top_coerced_fields),
            top_reject_reasons=tuple(Count(label, n) for label, n in group.top_reject_reasons),
        )
    return {arm: summaries[arm] for arm in ARMS if arm in summaries}


def _releases(root: Path, contract: Contract) -> tuple[tuple[dict[str, Any], ...], dict[str, Any] | None]:
    """The release history (oldest first) and the compatibility matrix of its schemas as parser floors."""
    from promptops.core.lock import load_lock
    from promptops.release.matrix import compat_matrix

    lock = load_lock(root, contract.name)
    history = tuple(
        {
            "version": str(r.version),
            "schema_version": str(r.schema_version),
            "class": r.prompt_class,
            "schema_class": r.schema_class,
            "date": r.date,
            "status": r.status,
            "note": r.note,
        }
        for r in lock.releases
    )
    if not lock.releases:
        return history, None
    schemas = {version: shape.schema for version, shape in contract.shapes.items()}
    missing = sorted({r.schema_version for r in lock.releases} - set(schemas))
    if missing:
        raise ReportError(f"{lock.source}: released schema {missing[0]} has no schema file in {contract.directory}")
    matrix = compat_matrix(lock, schemas, contract.default_policy.schema_floor)
    return history, matrix.to_dict()


def _utc(moment: datetime | date) -> datetime:
    """The store keeps naive UTC times (a bucket of days may come back as a date)."""
    if not isinstance(moment, datetime):
        moment = datetime(moment.year, moment.month, moment.day)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
