"""``promptops rates``: per-response, per-finding and re-ask (per-run) rates from the store or a Parquet export.

Exit codes: 0 rates printed (an empty selection prints no groups and a notice on stderr); 3 the store is
missing, locked past --lock-timeout, damaged or unreadable, a flag is invalid, or the contract or rollout id is
unknown (to the project and to the store).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click

from promptops.cli.project import Project, echo_lines, format_option, pass_project
from promptops.cli.store_options import lock_timeout_option, read_source, store_location, store_option
from promptops.core.contract import list_contracts
from promptops.core.errors import PromptopsError
from promptops.core.outcomes import ExitCode
from promptops.core.wording import count
from promptops.rollout.plan import plan_path
from promptops.spark.options import engine_options
from promptops.store.metrics import (
    GROUP_COLUMNS,
    PER_RESPONSE,
    PER_RUN,
    GroupRates,
    Rate,
    RatesQuery,
    RatesReport,
)
from promptops.store.source import RatesSource


@click.command("rates")
@click.option("--contract", "contract_name", required=True, help="Contract name.")
@click.option(
    "--by",
    "by_text",
    default="",
    metavar="NAMES",
    help=f"Comma-separated grouping: {', '.join(GROUP_COLUMNS)}.",
)
@click.option("--since", metavar="ISO", help="Only responses at or after this time (ISO 8601; UTC when no offset).")
@click.option("--rollout", "rollout_id", metavar="ID", help="Only responses of this rollout.")
@click.option("--top", type=click.IntRange(min=0), default=5, show_default=True, help="Reasons and fields listed.")
@store_option("DuckDB file, or a directory written by promptops export")
@lock_timeout_option()
@engine_options()
@format_option()
@pass_project
def rates_command(
    project: Project,
    contract_name: str,
    by_text: str,
    since: str | None,
    rollout_id: str | None,
    top: int,
    store_path: Path | None,
    lock_timeout: float,
    engine: str,
    spark_master: str | None,
    output_format: str,
) -> int:
    """Rates of dropped findings, coercions, incompatible versions, rejects and more, with their counts, and
    the re-ask loop's retry and recovered-after-retry rates per run.

    Exit codes: 0 rates printed; 3 tool failure (no store, store locked or unreadable, bad flags).
    """
    by = tuple(name.strip() for name in by_text.split(",") if name.strip())
    try:
        query = RatesQuery(contract_name, by=by, since=_parse_since(since), rollout_id=rollout_id, top=top)
    except ValueError as problem:
        raise click.BadParameter(str(problem), param_hint="--by") from None
    _, display = store_location(project, store_path)
    with read_source(project, store_path, lock_timeout, engine, spark_master) as source:
        check_known(project, source, display, query)
        report = source.rates(query)
    if not report.groups:
        echo_lines(f"promptops: no responses or re-ask runs of contract {contract_name} match in {display}", err=True)
    if output_format == "json":
        click.echo(json.dumps({"store": display, **report.to_dict()}, indent=2))
    else:
        echo_lines(*_text(display, report))
    return ExitCode.OK


def check_known(project: Project, source: RatesSource, display: str, query: RatesQuery) -> None:
    """Refuse a contract or rollout id that neither the project nor the store knows: a typo must not read as
    "no data". (A contract removed from versions/ whose responses are stored is still known.)"""
    if query.contract not in list_contracts(project.root) and not source.holds("contract", query.contract):
        raise PromptopsError(
            f"unknown contract {query.contract!r}: no versions/{query.contract}/ and no responses of it in {display}"
        )
    rollout = query.rollout_id
    if (
        rollout is not None
        and not plan_path(project.root, query.contract, rollout).is_file()
        and not source.holds("rollout_id", rollout)
    ):
        raise PromptopsError(
            f"unknown rollout {rollout!r}: no rollout/{query.contract}/{rollout}.yaml and no responses of it "
            f"in {display}"
        )


def _parse_since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an ISO 8601 date or time", param_hint="--since") from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _text(display: str, report: RatesReport) -> list[str]:
    query = report.query
    scope = [f"contract {query.contract}"]
    if query.rollout_id is not None:
        scope.append(f"rollout {query.rollout_id}")
    if query.since is not None:
        scope.append(f"since {query.since.isoformat()} UTC")
    lines = [f"{display}: {', '.join(scope)}"]
    for group in report.groups:
        lines.extend(_group_text(group))
    return lines


def _group_text(group: GroupRates) -> list[str]:
    key = " ".join(f"{name}={'-' if value is None else value}" for name, value in group.key.items())
    head = f"{key or 'all responses'}: {count(group.responses, 'response')}, {group.accepted:,} accepted"
    if group.runs:
        head += f", {count(group.runs, 're-ask run')}"
    lines = ["", head]
    if group.responses:
        lines.append("  per response")
        lines.extend(_rate_line(name, group.per_response[name]) for name in PER_RESPONSE)
        lines.append("  per finding (of findings seen)")
        lines.extend(_rate_line(name, rate) for name, rate in group.per_finding.items())
    if group.runs:
        lines.append(f"  per re-ask run ({group.attempts:,} attempts)")
        lines.extend(_rate_line(_RUN_LABELS[name], group.per_run[name]) for name in PER_RUN)
    for title, items in (
        ("top drop reasons", group.top_drop_reasons),
        ("top coerced fields", group.top_coerced_fields),
        ("top reject reasons", group.top_reject_reasons),
    ):
        if items:
            lines.append(f"  {title}: " + ", ".join(f"{label} {count:,}" for label, count in items))
    return lines


_RUN_LABELS = {"retried": "retried", "recovered": "recovered after retry"}


def _rate_line(name: str, rate: Rate) -> str:
    value = "-" if rate.rate is None else f"{rate.rate:.2%}"
    return f"    {name.replace('_', ' '):<24}{value:>9}  {rate.count:>12,} / {rate.total:,}"
