"""``promptops rollout``: staged rollouts of a contract's prompt and schema versions (README "Rollouts")."""

from __future__ import annotations

import json
from pathlib import Path

import click

from promptops.cli import exits
from promptops.cli.project import Project, format_option, pass_project
from promptops.rollout.assign import assign, routes
from promptops.rollout.plan import Plan, load_plan
from promptops.rollout.sizing import plan_needs

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
