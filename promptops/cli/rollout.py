"""``promptops rollout``: staged rollouts of a contract's prompt and schema versions (README "Rollouts")."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from promptops.cli import exits
from promptops.cli.project import Project, format_option, pass_project
from promptops.cli.store_options import lock_timeout_option, parse_now, read_connection, store_option
from promptops.files import write_atomic
from promptops.rollout.assign import assign, routes
from promptops.rollout.gate import GateResult, Purpose
from promptops.rollout.plan import Plan, load_plan
from promptops.rollout.session import RolloutRefused, plan_at_step, promote, rollback, run_gate, status
from promptops.spark.options import engine_options

F = TypeVar("F", bound=Callable[..., Any])

PLAN_FILE = click.Path(dir_okay=False, path_type=Path)


@click.group()
def rollout() -> None:
    """Plan, assign, gate and promote staged rollouts (rollout/<contract>/<id>.yaml)."""


def read_plan(project: Project, path: Path) -> Plan:
    return load_plan(path, project.relative(path))


@rollout.command("plan")
@click.argument("plan_file", type=PLAN_FILE)
@format_option()
@pass_project
def plan_command(project: Project, plan_file: Path, output_format: str) -> int:
    """Print each step of PLAN_FILE with the responses it needs before it can decide."""
    plan = read_plan(project, plan_file)
    from promptops.rollout.sizing import plan_needs

    needs = plan_needs(plan)
    if output_format == "json":
        click.echo(
            json.dumps(
                {
                    "rollout": plan.rollout_id,
                    "contract": plan.contract,
                    "alpha": plan.alpha,
                    "current_step": plan.step,
                    "steps": [n.to_dict() for n in needs],
                },
                indent=2,
            )
        )
        return exits.OK
    click.echo(
        f"{plan.rollout_id} ({plan.contract}): {plan.baseline.prompt_version} -> {plan.candidate.prompt_version}, "
        f"unit {plan.unit}, alpha {plan.alpha}"
    )
    for metric in needs[0].metrics:
        margin = f", {metric.per_arm:,} per arm for its margin" if metric.per_arm is not None else ""
        click.echo(
            f"  {metric.metric} <= {metric.slo:g} ({metric.severity}): {metric.zero_failure:,} clean responses"
            f" to pass{margin}"
        )
    for need in needs:
        marker = "*" if need.index == plan.step else " "
        duration = f", at least {_hours(need.min_duration_seconds)}" if need.min_duration_seconds else ""
        if need.weight == 0:
            detail = "parser stage: ship read support for the candidate first; no candidate traffic"
        else:
            detail = f"candidate {need.candidate_needed:,} responses"
            if need.baseline_needed:
                detail += f", baseline {need.baseline_needed:,}"
        click.echo(f"{marker} step {need.index} {need.name}: weight {need.weight:.0%}: {detail}{duration}")
    return exits.OK


@rollout.command("assign")
@click.argument("plan_file", type=PLAN_FILE)
@click.argument("unit")
@format_option()
@pass_project
def assign_command(project: Project, plan_file: Path, unit: str, output_format: str) -> int:
    """Which arm UNIT gets now, and the prompt and schema versions to render and parse for it."""
    chosen = assign(read_plan(project, plan_file), unit)
    if output_format == "json":
        click.echo(json.dumps(chosen.to_dict()))
    else:
        click.echo(
            f"{unit}: {chosen.arm} (prompt {chosen.versions.prompt_version}, schema "
            f"{chosen.versions.schema_version}; bucket {chosen.bucket:.6f} vs weight {chosen.weight:g})"
        )
    return exits.OK


@rollout.command("routes")
@click.argument("plan_file", type=PLAN_FILE)
@pass_project
def routes_command(project: Project, plan_file: Path) -> int:
    """The current routing as JSON, for services that do not embed Python."""
    click.echo(json.dumps(routes(read_plan(project, plan_file)), indent=2))
    return exits.OK


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:g}h" if seconds % 86400 else f"{seconds / 86400:g}d"


def _store_options(function: F) -> F:
    function = store_option("Diagnostics store (a DuckDB file, or a Parquet directory from promptops export)")(function)
    function = lock_timeout_option()(function)
    return click.option(
        "--now", "now_text", metavar="ISO", help="Judge as of this time (UTC; default: now). For replays and demos."
    )(function)


def _who(by: str | None) -> str:
    """Who acts: --by, else git's user.name, else the login name (read here, in the adapter)."""
    if by:
        return by
    import getpass
    import subprocess

    try:
        name = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True, check=False).stdout
    except OSError:
        name = ""
    return name.strip() or getpass.getuser()


def _gate_text(result: GateResult) -> list[str]:
    lines = [
        f"{result.rollout} step {result.step} ({result.step_name}, candidate weight {result.weight:.0%}): "
        f"{result.verdict}" + (f" [{result.reason}]" if result.reason else ""),
        result.sentence,
    ]
    for metric in result.metrics:
        parts = []
        for arm, estimate in metric.arms.items():
            rate = "-" if estimate.rate is None else f"{estimate.rate:.2%}"
            parts.append(f"{arm} {estimate.x}/{estimate.n} = {rate} [{estimate.low:.2%}, {estimate.high:.2%}]")
        margin = f", margin {metric.margin:.2%}" if metric.margin is not None else ""
        lines.append(
            f"  {metric.metric} (SLO {metric.slo:.2%}{margin}, {metric.severity}, n >= {metric.n_needed}): "
            f"{metric.status}; " + "; ".join(parts)
        )
    if result.srm is not None:
        lines.append(
            f"  traffic split: candidate {result.srm['candidate']:,}, baseline {result.srm['baseline']:,} "
            f"(weight {result.weight:.0%}, chi-square p = {result.srm['p_value']:.3g})"
        )
    return lines


@rollout.command("gate")
@click.argument("plan_file", type=PLAN_FILE)
@click.option("--step", type=int, help="Judge this step (default: the current one).")
@click.option(
    "--purpose",
    type=click.Choice([p.value for p in Purpose]),
    default=Purpose.MONITOR.value,
    show_default=True,
    help="monitor: an inconclusive result warns; promote: it holds (exit 2).",
)
@click.option("--strict-warnings", is_flag=True, help="Exit 1 on PassedWithWarnings.")
@click.option("--strict-artifacts", is_flag=True, help="Exit 2 when there is no data (Skipped).")
@_store_options
@engine_options()
@format_option()
@pass_project
def gate_command(
    project: Project,
    plan_file: Path,
    step: int | None,
    purpose: str,
    strict_warnings: bool,
    strict_artifacts: bool,
    store_path: Path | None,
    lock_timeout: float,
    now_text: str | None,
    engine: str,
    spark_master: str | None,
    output_format: str,
) -> int:
    """Judge the current step of PLAN_FILE against its SLOs.

    Exit codes (seed 003): 0 Passed, PassedWithWarnings or Skipped; 1 PassedWithWarnings with --strict-warnings;
    2 Failed or Escalate (hold), or Skipped with --strict-artifacts; 3 broken plan or store.
    """
    plan = read_plan(project, plan_file)
    if step is not None:
        plan = plan_at_step(plan, step)
    contract = project.contract(plan.contract, check_schemas=False)
    with read_connection(project, store_path, lock_timeout, engine, spark_master) as con:
        result = run_gate(
            project.root,
            plan,
            contract,
            con,
            parse_now(now_text),
            Purpose(purpose),
            strict_warnings=strict_warnings,
            strict_artifacts=strict_artifacts,
        )
    click.echo(result.to_json() if output_format == "json" else "\n".join(_gate_text(result)))
    return result.exit_code


@rollout.command("status")
@click.argument("plan_file", type=PLAN_FILE)
@_store_options
@format_option()
@pass_project
def status_command(
    project: Project,
    plan_file: Path,
    store_path: Path | None,
    lock_timeout: float,
    now_text: str | None,
    output_format: str,
) -> int:
    """Where PLAN_FILE stands: step, weights, the latest verdict and what is still needed."""
    plan = read_plan(project, plan_file)
    with read_connection(project, store_path, lock_timeout) as con:
        report = status(
            project.root, plan, project.contract(plan.contract, check_schemas=False), con, parse_now(now_text)
        )
    if output_format == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
        return exits.OK
    data = report.to_dict()
    click.echo(
        f"{plan.rollout_id}: step {plan.step} ({data['step_name']}), candidate {plan.weight:.0%}"
        + (" (rolled back)" if plan.rolled_back else "")
    )
    click.echo(f"  latest verdict: {data['verdict']}: {data['sentence']}")
    needed = data["still_needed"]
    if any(needed["responses"].values()) or needed["seconds"]:
        hours = needed["seconds"] / 3600
        click.echo(
            f"  still needed: {needed['responses']['candidate']:,} candidate and "
            f"{needed['responses']['baseline']:,} baseline responses, {hours:.1f}h"
        )
    if report.legacy_note:
        click.echo(f"  {report.legacy_note}")
    for transition in plan.history[-5:]:
        forced = " (forced)" if transition.forced else ""
        click.echo(
            f"  {transition.at.isoformat()} {transition.by}: {transition.action} {transition.from_step}->"
            f"{transition.to_step} {transition.verdict}{forced}: {transition.reason}"
        )
    return exits.OK


@rollout.command("promote")
@click.argument("plan_file", type=PLAN_FILE)
@click.option("--force", is_flag=True, help="Promote although the gate does not pass (needs --reason).")
@click.option("--reason", help="Why the override is right (recorded in the plan's history).")
@click.option("--by", help="Who promotes (default: git user.name).")
@_store_options
@format_option()
@pass_project
def promote_command(
    project: Project,
    plan_file: Path,
    force: bool,
    reason: str | None,
    by: str | None,
    store_path: Path | None,
    lock_timeout: float,
    now_text: str | None,
    output_format: str,
) -> int:
    """Advance PLAN_FILE one step when the gate passes; record the transition in the plan's history.

    Exit codes: 0 promoted; 2 refused (the gate failed, held or had no data); 3 broken plan or store.
    """
    if force and not (reason and reason.strip()):
        raise click.UsageError("--force needs --reason: an override is recorded with why")
    plan = read_plan(project, plan_file)
    now = parse_now(now_text)
    with read_connection(project, store_path, lock_timeout) as con:
        result = run_gate(
            project.root, plan, project.contract(plan.contract, check_schemas=False), con, now, Purpose.PROMOTE
        )
    try:
        moved = promote(plan_file, plan, result, by=_who(by), now=now, force_reason=reason if force else None)
    except RolloutRefused as refused:
        click.echo(result.to_json() if output_format == "json" else "\n".join(_gate_text(result)))
        click.echo(f"promptops: {refused}", err=True)
        return exits.FAILED
    if output_format == "json":
        click.echo(
            json.dumps(
                {"rollout": moved.rollout_id, "step": moved.step, "weight": moved.weight, "gate": result.to_dict()},
                indent=2,
            )
        )
    else:
        click.echo(
            f"{moved.rollout_id}: promoted to step {moved.step} ({moved.steps[moved.step].name}), "
            f"candidate {moved.weight:.0%}; gate {result.verdict}: {result.sentence}"
        )
    return exits.OK


@rollout.command("rollback")
@click.argument("plan_file", type=PLAN_FILE)
@click.option("--reason", required=True, help="Why (recorded in the plan's history).")
@click.option("--by", help="Who rolls back (default: git user.name).")
@click.option("--now", "now_text", metavar="ISO", help="Record this time (UTC; default: now).")
@format_option()
@pass_project
def rollback_command(
    project: Project, plan_file: Path, reason: str, by: str | None, now_text: str | None, output_format: str
) -> int:
    """Send every unit of PLAN_FILE back to the baseline (candidate weight 0), keeping the step."""
    plan = rollback(plan_file, read_plan(project, plan_file), by=_who(by), now=parse_now(now_text), reason=reason)
    if output_format == "json":
        click.echo(json.dumps({"rollout": plan.rollout_id, "step": plan.step, "weight": plan.weight}, indent=2))
    else:
        click.echo(f"{plan.rollout_id}: rolled back at step {plan.step}; candidate weight 0")
    return exits.OK


_PROFILES = ("baseline", "candidate", "regression")  # promptops.simulate's ArmProfile constants


@rollout.command("simulate")
@click.argument("plan_file", type=PLAN_FILE)
@click.option("--responses", type=click.IntRange(min=1), required=True, help="How many response records.")
@click.option("--start", "start_text", metavar="ISO", help="Time of the window's start (UTC; default: now).")
@click.option(
    "--hours",
    type=click.FloatRange(min=0, min_open=True),
    default=1.0,
    show_default=True,
    help="Length of the window the records spread over.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Same seed, same records.")
@click.option("--weight", type=click.FloatRange(0, 1), help="Split traffic at this weight (default: the plan's).")
@click.option(
    "--candidate-profile",
    type=click.Choice(_PROFILES),
    default="candidate",
    show_default=True,
    help="Defect rates of the candidate arm (regression: many dropped findings).",
)
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="JSONL response log to write (replaced atomically).",
)
@format_option()
@pass_project
def simulate_command(
    project: Project,
    plan_file: Path,
    responses: int,
    start_text: str | None,
    hours: float,
    seed: int,
    weight: float | None,
    candidate_profile: str,
    out_path: Path,
    output_format: str,
) -> int:
    """Write a response log of simulated reviewer traffic for PLAN_FILE, to rehearse a rollout.

    Each record's arm comes from the plan's real assignment of its unit; defects (drops, coercions, wrappers,
    truncation, malformed JSON) occur at each arm's profile rates. Feed the log to ``promptops ingest``.
    """
    plan = read_plan(project, plan_file)
    start = parse_now(start_text)
    from promptops import simulate as sim  # the simulator (and rstr) load only for this command

    profiles = {"baseline": sim.BASELINE, "candidate": sim.CANDIDATE, "regression": sim.REGRESSION}
    records = sim.simulate(
        plan,
        project.contract(plan.contract, check_schemas=False),
        responses=responses,
        start=start,
        end=start + timedelta(hours=hours),
        seed=seed,
        profiles={"baseline": sim.BASELINE, "candidate": profiles[candidate_profile]},
        weight=weight,
    )
    arms: dict[str, int] = {}
    lines = []
    for record in records:
        arms[record["arm"]] = arms.get(record["arm"], 0) + 1
        lines.append(json.dumps(record))
    write_atomic(out_path, ("\n".join(lines) + "\n").encode())
    summary = {"log": project.relative(out_path), "responses": responses, "arms": arms}
    if output_format == "json":
        click.echo(json.dumps(summary, indent=2))
    else:
        split = ", ".join(f"{arm} {count:,}" for arm, count in sorted(arms.items()))
        click.echo(f"{summary['log']}: {responses:,} simulated responses ({split})")
    return exits.OK
