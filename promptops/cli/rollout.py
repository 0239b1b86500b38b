"""``promptops rollout``: staged rollouts of a contract's prompt and schema versions (docs/rollouts.md).

Exit codes: 0 done; 1 warnings with --strict-warnings (gate); 2 the gate failed or held, or a transition was
refused; 3 a broken plan, store or flag (one line naming the file and field).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from promptops.cli import completion
from promptops.cli.project import Project, echo_lines, format_option, pass_project
from promptops.cli.rollout_common import PLAN_FILE, read_plan, who
from promptops.cli.store_options import lock_timeout_option, parse_now, read_source, store_option
from promptops.core.escape import one_line
from promptops.core.outcomes import ExitCode
from promptops.rollout.gate import GateResult, MetricResult, Purpose
from promptops.rollout.plan import Plan
from promptops.rollout.session import RolloutRefused, plan_at_step, promote, run_gate, status
from promptops.spark.options import engine_options
from promptops.store import catalogue

F = TypeVar("F", bound=Callable[..., Any])


# Subcommands kept in modules of their own load when run, so the gate does not import them at start-up.
LAZY_COMMANDS = {
    "rollback": "promptops.cli.rollout_moves:rollback_command",
    "resume": "promptops.cli.rollout_moves:resume_command",
    "retarget": "promptops.cli.rollout_moves:retarget_command",
    "retire": "promptops.cli.rollout_moves:retire_command",
    "simulate": "promptops.cli.rollout_simulate:simulate_command",
    "new": "promptops.cli.rollout_new:rollout_new",
}


class _RolloutGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = LAZY_COMMANDS.get(cmd_name)
        if target is not None and cmd_name not in self.commands:
            module_name, attribute = target.split(":")
            command = getattr(importlib.import_module(module_name), attribute)
            assert isinstance(command, click.Command)
            self.add_command(completion.attach(command), cmd_name)
        return super().get_command(ctx, cmd_name)


@click.group(cls=_RolloutGroup)
def rollout() -> None:
    """Plan, assign, gate and promote staged rollouts (rollout/<contract>/<id>.yaml)."""


@rollout.command("plan")
@click.argument("plan_file", type=PLAN_FILE)
@format_option()
@pass_project
def plan_command(project: Project, plan_file: Path, output_format: str) -> int:
    """Print each step of PLAN_FILE with the responses it needs before it can decide.

    Refuses (exit 3) a plan without critical `rejected` and `all_findings_dropped` SLOs, as the gate does.
    """
    plan = read_plan(project, plan_file)
    from promptops.rollout.plan import require_guards
    from promptops.rollout.sizing import plan_needs

    require_guards(plan)

    needs = plan_needs(plan)
    if output_format == "json":
        click.echo(
            json.dumps(
                {
                    "rollout": plan.rollout_id,
                    "contract": plan.contract,
                    "alpha": plan.alpha,
                    "statistics": plan.statistics,
                    "current_step": plan.step,
                    "steps": [n.to_dict() for n in needs],
                },
                indent=2,
            )
        )
        return ExitCode.OK
    echo_lines(
        f"{plan.rollout_id} ({plan.contract}): {plan.baseline.prompt_version} -> {plan.candidate.prompt_version}, "
        f"unit {plan.unit}, alpha {plan.alpha}, statistics {plan.statistics} ({_valid_for(plan.statistics)})"
    )
    for metric in needs[0].metrics:
        margin = f", {metric.per_arm:,} per arm for its margin" if metric.per_arm is not None else ""
        echo_lines(
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
        echo_lines(f"{marker} step {need.index} {need.name}: weight {need.weight:.0%}: {detail}{duration}")
    return ExitCode.OK


@rollout.command("assign")
@click.argument("plan_file", type=PLAN_FILE)
@click.argument("unit")
@format_option()
@pass_project
def assign_command(project: Project, plan_file: Path, unit: str, output_format: str) -> int:
    """Which arm UNIT gets now, and the prompt and schema versions to render and parse for it.

    A unit is never sent to a candidate the parser cannot read yet (not released in the lock, or a schema the
    parser does not accept): it gets the baseline, and the output says why ("held").
    """
    plan = read_plan(project, plan_file)
    from promptops.rollout.assign import assign

    chosen = assign(plan, unit, unreadable=_unreadable(project, plan))
    if output_format == "json":
        click.echo(json.dumps(chosen.to_dict()))
    else:
        held = f"; held: {chosen.held}" if chosen.held is not None else ""
        echo_lines(
            f"{unit}: {chosen.arm} (prompt {chosen.versions.prompt_version}, schema "
            f"{chosen.versions.schema_version}; bucket {chosen.bucket:.6f} vs weight {chosen.weight:g}{held})"
        )
    return ExitCode.OK


def _unreadable(project: Project, plan: Plan) -> str | None:
    """Why the parser cannot read the plan's candidate yet, from the project's contract and release lock."""
    from promptops.core.contract import load_contract
    from promptops.core.lock import load_lock
    from promptops.rollout.policies import candidate_unreadable

    contract = load_contract(project.root, plan.contract)
    return candidate_unreadable(contract, load_lock(project.root, plan.contract), plan)


@rollout.command("routes")
@click.argument("plan_file", type=PLAN_FILE)
@pass_project
def routes_command(project: Project, plan_file: Path) -> int:
    """The current routing as JSON, for services that do not embed Python."""
    plan = read_plan(project, plan_file)
    from promptops.rollout.assign import routes

    click.echo(json.dumps(routes(plan, unreadable=_unreadable(project, plan)), indent=2))
    return ExitCode.OK


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:g}h" if seconds % 86400 else f"{seconds / 86400:g}d"


def _store_options(function: F) -> F:
    function = store_option("Diagnostics store (a DuckDB file, or a Parquet directory from promptops export)")(function)
    function = lock_timeout_option()(function)
    return click.option(
        "--now", "now_text", metavar="ISO", help="Judge as of this time (UTC; default: now). For replays and demos."
    )(function)


def _valid_for(method: str) -> str:
    return "valid for a single look" if method == "fixed" else "valid at every look"


def _gate_text(result: GateResult) -> list[str]:
    lines = [
        f"{result.rollout} step {result.step} ({result.step_name}, candidate weight {result.weight:.0%}): "
        f"{result.verdict}" + (f" [{result.reason}]" if result.reason else ""),
        result.sentence,
    ]
    if result.metrics and result.statistics:
        looks = result.statistics["looks"]
        lines.append(
            f"  statistics {result.statistics['method']}, valid for {result.statistics['valid_for']}; "
            f"{looks} look{'s' if looks != 1 else ''} so far (the step's hours with responses, then now)"
        )
    for metric in result.metrics:
        if metric.pending is not None:
            lines.append(_usefulness_text(metric))
            continue
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
    return [one_line(line) for line in lines]


def _usefulness_text(metric: MetricResult) -> str:
    """A usefulness metric: on decided findings, a floor shown as ``>=``, and the findings still pending."""
    per_pr = metric.metric == "acted_on_per_pr"

    def show(value: float) -> str:
        return f"{value:.2f}" if per_pr else f"{value:.2%}"

    floor = ">= " if catalogue.metric(metric.metric).direction == "higher_is_better" else ""
    parts = [
        f"{arm} {e.x}/{e.n} {'pull requests' if per_pr else 'decided'} = {show(e.rate or 0.0)} "
        f"[{show(e.low)}, {show(e.high)}]"
        for arm, e in metric.arms.items()
    ]
    waiting = ", ".join(f"{arm} {n:,}" for arm, n in (metric.pending or {}).items())
    margin = f", margin {show(metric.margin)}" if metric.margin is not None else ""
    return (
        f"  {metric.metric} (SLO {floor}{show(metric.slo)}{margin}, {metric.severity}, on decided findings): "
        f"{metric.status}; " + "; ".join([*parts, f"pending {waiting}"])
    )


@rollout.command("gate")
@click.argument("plan_file", type=PLAN_FILE)
@click.option("--step", type=int, help="Judge this step (default: the current one).")
@click.option(
    "--purpose",
    type=click.Choice([p.value for p in Purpose]),
    default=Purpose.MONITOR.value,
    show_default=True,
    help="monitor: an inconclusive result warns, no data skips; promote: either holds (exit 2).",
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

    With no responses in the step, monitoring is Skipped and --purpose promote holds (Escalate). A missing or
    unreadable store, or a plan without critical `rejected` and `all_findings_dropped` SLOs, is an error.

    Exit codes (those of the review gate): 0 Passed, PassedWithWarnings or Skipped; 1 PassedWithWarnings with
    --strict-warnings; 2 Failed or Escalate (hold), or Skipped with --strict-artifacts; 3 broken or unguarded
    plan, missing or unreadable store.
    """
    plan = read_plan(project, plan_file)
    if step is not None:
        plan = plan_at_step(plan, step)
    contract = project.contract(plan.contract, check_schemas=False)
    with read_source(project, store_path, lock_timeout, engine, spark_master) as source:
        result = run_gate(
            project.root,
            plan,
            contract,
            source,
            parse_now(now_text),
            Purpose(purpose),
            strict_warnings=strict_warnings,
            strict_artifacts=strict_artifacts,
        )
    click.echo(result.dumps() if output_format == "json" else "\n".join(_gate_text(result)))
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
    """Where PLAN_FILE stands: step, weights, the latest verdict and what is still needed.

    Exit codes: 0 shown; 3 broken or unguarded plan, missing or unreadable store.
    """
    plan = read_plan(project, plan_file)
    with read_source(project, store_path, lock_timeout) as source:
        report = status(
            project.root, plan, project.contract(plan.contract, check_schemas=False), source, parse_now(now_text)
        )
    if output_format == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
        return ExitCode.OK
    data = report.to_dict()
    echo_lines(
        f"{plan.rollout_id}: step {plan.step} ({data['step_name']}), candidate {plan.weight:.0%}"
        + (" (rolled back)" if plan.rolled_back else "")
    )
    held = " (the gate that held it, at the rollback)" if plan.rolled_back else ""
    echo_lines(f"  latest verdict{held}: {data['verdict']}: {data['sentence']}")
    if plan.rolled_back:
        echo_lines("  next: `rollout resume` once the cause is fixed, or `rollout retarget --candidate X.Y.Z`")
    needed = data["still_needed"]
    if any(needed["responses"].values()) or needed["seconds"]:
        hours = needed["seconds"] / 3600
        echo_lines(
            f"  still needed: {needed['responses']['candidate']:,} candidate and "
            f"{needed['responses']['baseline']:,} baseline responses, {hours:.1f}h"
        )
    if report.legacy_note:
        echo_lines(f"  {report.legacy_note}")
    for transition in plan.history[-5:]:
        forced = " (forced)" if transition.forced else ""
        if transition.candidate is not None and transition.previous is not None:
            forced += f" (prompt {transition.previous.prompt_version} -> {transition.candidate.prompt_version})"
        echo_lines(
            f"  {transition.at.isoformat()} {transition.by}: {transition.action} {transition.from_step}->"
            f"{transition.to_step} {transition.verdict}{forced}: {transition.reason}"
        )
    return ExitCode.OK


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

    Exit codes: 0 promoted; 2 refused (the gate failed, held or had no data); 3 broken or unguarded plan,
    missing or unreadable store.
    """
    if force and not (reason and reason.strip()):
        raise click.UsageError("--force needs --reason: an override is recorded with why")
    plan = read_plan(project, plan_file)
    now = parse_now(now_text)
    with read_source(project, store_path, lock_timeout) as source:
        result = run_gate(
            project.root, plan, project.contract(plan.contract, check_schemas=False), source, now, Purpose.PROMOTE
        )
    try:
        moved = promote(plan_file, plan, result, by=who(by), now=now, force_reason=reason if force else None)
    except RolloutRefused as refused:
        click.echo(result.dumps() if output_format == "json" else "\n".join(_gate_text(result)))
        echo_lines(f"promptops: {refused}", err=True)
        return ExitCode.FAILED
    if output_format == "json":
        click.echo(
            json.dumps(
                {"rollout": moved.rollout_id, "step": moved.step, "weight": moved.weight, "gate": result.to_dict()},
                indent=2,
            )
        )
    else:
        echo_lines(
            f"{moved.rollout_id}: promoted to step {moved.step} ({moved.steps[moved.step].name}), "
            f"candidate {moved.weight:.0%}; gate {result.verdict}: {result.sentence}"
        )
    return ExitCode.OK
