"""``promptops rollout``: staged rollouts of a contract's prompt and schema versions (docs/rollouts.md).

Exit codes: 0 done; 1 warnings with --strict-warnings (gate); 2 the gate failed or held, or a transition was
refused; 3 a broken plan, store or flag (one line naming the file and field).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from promptops.cli import exits
from promptops.cli.numbers import FiniteFloat
from promptops.cli.project import Project, format_option, pass_project
from promptops.cli.store_options import lock_timeout_option, parse_now, read_connection, store_option
from promptops.contract import list_contracts
from promptops.errors import PromptopsError, VersionError
from promptops.files import write_atomic
from promptops.rollout.assign import assign, routes
from promptops.rollout.gate import GateResult, Purpose
from promptops.rollout.plan import ROLLOUT_DIR, Arm, Plan, PlanError, load_plan
from promptops.rollout.session import (
    RolloutRefused,
    plan_at_step,
    promote,
    resume,
    retarget,
    rollback,
    run_gate,
    status,
)
from promptops.versioning import PromptVersion, SchemaVersion

F = TypeVar("F", bound=Callable[..., Any])

PLAN_FILE = click.Path(dir_okay=False, path_type=Path)


@click.group()
def rollout() -> None:
    """Plan, assign, gate and promote staged rollouts (rollout/<contract>/<id>.yaml)."""


def read_plan(project: Project, path: Path) -> Plan:
    """The plan at ``path``, refused (exit 3) when it names a contract the project does not have, or sits
    under ``rollout/<other contract>/``."""
    source = project.relative(path)
    plan = load_plan(path, source)
    known = list_contracts(project.root)
    if plan.contract not in known:
        shown = plan.contract if len(plan.contract) <= 60 else f"{plan.contract[:57]}..."
        raise PlanError(f"{source}: contract: unknown contract {shown!r} (known: {', '.join(known) or 'none'})")
    parts = Path(source).parts
    if len(parts) == 3 and parts[0] == ROLLOUT_DIR and parts[1] != plan.contract:
        raise PlanError(f"{source}: contract: is {plan.contract!r} but the plan is under {ROLLOUT_DIR}/{parts[1]}/")
    return plan


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
    with read_connection(project, store_path, lock_timeout) as con:
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
    held = " (the gate that held it, at the rollback)" if plan.rolled_back else ""
    click.echo(f"  latest verdict{held}: {data['verdict']}: {data['sentence']}")
    if plan.rolled_back:
        click.echo("  next: `rollout resume` once the cause is fixed, or `rollout retarget --candidate X.Y.Z`")
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
        if transition.candidate is not None and transition.previous is not None:
            forced += f" (prompt {transition.previous.prompt_version} -> {transition.candidate.prompt_version})"
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


def _transition_options(function: F) -> F:
    function = click.option("--now", "now_text", metavar="ISO", help="Record this time (UTC; default: now).")(function)
    function = click.option("--by", help="Who acts (default: git user.name).")(function)
    return click.option("--reason", required=True, help="Why (recorded in the plan's history).")(function)


def _moved(plan: Plan, output_format: str, text: str) -> int:
    if output_format == "json":
        click.echo(
            json.dumps(
                {
                    "rollout": plan.rollout_id,
                    "step": plan.step,
                    "weight": plan.weight,
                    "candidate": plan.candidate.to_dict(),
                    "transition": plan.history[-1].to_dict(),
                },
                indent=2,
            )
        )
    else:
        click.echo(text)
    return exits.OK


def _refused(refused: RolloutRefused) -> int:
    click.echo(f"promptops: {refused}", err=True)
    return exits.FAILED


@rollout.command("rollback")
@click.argument("plan_file", type=PLAN_FILE)
@_transition_options
@format_option()
@pass_project
def rollback_command(
    project: Project, plan_file: Path, reason: str, by: str | None, now_text: str | None, output_format: str
) -> int:
    """Send every unit of PLAN_FILE back to the baseline (candidate weight 0), keeping the step."""
    plan = rollback(plan_file, read_plan(project, plan_file), by=_who(by), now=parse_now(now_text), reason=reason)
    return _moved(plan, output_format, f"{plan.rollout_id}: rolled back at step {plan.step}; candidate weight 0")


@rollout.command("resume")
@click.argument("plan_file", type=PLAN_FILE)
@_transition_options
@format_option()
@pass_project
def resume_command(
    project: Project, plan_file: Path, reason: str, by: str | None, now_text: str | None, output_format: str
) -> int:
    """Re-enable the rolled-back candidate of PLAN_FILE at its step, once the cause is fixed.

    The step's window starts afresh: its gate must pass on new responses before the next promotion.
    Exit codes: 0 resumed; 2 refused (not rolled back); 3 broken plan or flags.
    """
    try:
        plan = resume(plan_file, read_plan(project, plan_file), by=_who(by), now=parse_now(now_text), reason=reason)
    except RolloutRefused as refused:
        return _refused(refused)
    step = plan.steps[plan.step]
    return _moved(
        plan,
        output_format,
        f"{plan.rollout_id}: resumed prompt {plan.candidate.prompt_version} at step {plan.step} ({step.name}), "
        f"candidate {plan.weight:.0%}",
    )


@rollout.command("retarget")
@click.argument("plan_file", type=PLAN_FILE)
@click.option("--candidate", "candidate_text", required=True, metavar="X.Y.Z", help="The new candidate prompt.")
@click.option(
    "--schema",
    "schema_text",
    metavar="X.Y",
    help="The schema the new candidate targets (default: the one its release in the lock targets).",
)
@_transition_options
@format_option()
@pass_project
def retarget_command(
    project: Project,
    plan_file: Path,
    candidate_text: str,
    schema_text: str | None,
    reason: str,
    by: str | None,
    now_text: str | None,
    output_format: str,
) -> int:
    """Point the rolled-back PLAN_FILE at a new candidate release; the rollout starts again at its first step.

    Exit codes: 0 retargeted; 2 refused (not rolled back, same candidate); 3 broken plan, lock or flags.
    """
    plan = read_plan(project, plan_file)
    candidate = _candidate(project, plan, candidate_text, schema_text)
    try:
        moved = retarget(plan_file, plan, candidate, by=_who(by), now=parse_now(now_text), reason=reason)
    except RolloutRefused as refused:
        return _refused(refused)
    return _moved(
        moved,
        output_format,
        f"{moved.rollout_id}: candidate is now prompt {candidate.prompt_version} (schema {candidate.schema_version}),"
        f" at step 0 ({moved.steps[0].name}); candidate weight {moved.weight:.0%}",
    )


def _candidate(project: Project, plan: Plan, prompt_text: str, schema_text: str | None) -> Arm:
    try:
        prompt = PromptVersion.parse(prompt_text)
        schema = SchemaVersion.parse(schema_text) if schema_text is not None else None
    except VersionError as problem:
        raise click.BadParameter(str(problem), param_hint="--schema" if schema_text else "--candidate") from None
    if schema is None:
        from promptops.release.lock import load_lock

        release = load_lock(project.root, plan.contract).get(prompt)
        if release is None:
            raise PromptopsError(
                f"prompt {prompt} of {plan.contract} is not in the release lock: cut it first, or give --schema"
            )
        schema = release.schema_version
    return Arm(prompt, schema)


_PROFILES = ("baseline", "candidate", "regression")  # promptops.simulate's ArmProfile constants
MAX_RESPONSES = 10_000_000  # the log is built in memory
MAX_HOURS = 24 * 366 * 10  # ten years
LATEST = datetime(9000, 1, 1, tzinfo=UTC)  # far enough for any rehearsal, far from datetime's end


@rollout.command("simulate")
@click.argument("plan_file", type=PLAN_FILE)
@click.option(
    "--responses",
    type=click.IntRange(min=1, max=MAX_RESPONSES),
    required=True,
    help="How many response records.",
)
@click.option("--start", "start_text", metavar="ISO", help="Time of the window's start (UTC; default: now).")
@click.option(
    "--hours",
    type=FiniteFloat(min=0, min_open=True, max=MAX_HOURS),
    default=1.0,
    show_default=True,
    help="Length of the window the records spread over.",
)
@click.option(
    "--seed", type=click.IntRange(0, 2**63 - 1), default=0, show_default=True, help="Same seed, same records."
)
@click.option("--weight", type=FiniteFloat(0, 1), help="Split traffic at this weight (default: the plan's).")
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
    help="JSONL response log to write (a regular file, replaced atomically).",
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
    Shows progress on stderr when it is a terminal.
    """
    plan = read_plan(project, plan_file)
    start = parse_now(start_text, "--start")
    try:
        end = start + timedelta(hours=hours)
        end.astimezone(UTC)
    except OverflowError:
        end = datetime.max.replace(tzinfo=UTC)
    if end > LATEST:
        raise click.BadParameter(
            f"the window ends after {LATEST.year}: start earlier or use fewer --hours", param_hint="--start/--hours"
        )
    _check_replaceable(project, out_path)
    from promptops import simulate as sim  # the simulator (and rstr) load only for this command

    profiles = {"baseline": sim.BASELINE, "candidate": sim.CANDIDATE, "regression": sim.REGRESSION}
    records = sim.simulate(
        plan,
        project.contract(plan.contract, check_schemas=False),
        responses=responses,
        start=start,
        end=end,
        seed=seed,
        profiles={"baseline": sim.BASELINE, "candidate": profiles[candidate_profile]},
        weight=weight,
    )
    arms: dict[str, int] = {}
    lines = []
    for record in _progress(records, responses, "simulating responses"):
        arms[record["arm"]] = arms.get(record["arm"], 0) + 1
        lines.append(json.dumps(record))
    _check_replaceable(project, out_path)  # again: the path may have changed while simulating
    write_atomic(out_path, ("\n".join(lines) + "\n").encode(), mode=0o644)
    summary = {"log": project.relative(out_path), "responses": responses, "arms": arms}
    if output_format == "json":
        click.echo(json.dumps(summary, indent=2))
    else:
        split = ", ".join(f"{arm} {count:,}" for arm, count in sorted(arms.items()))
        noun = "simulated response" if responses == 1 else "simulated responses"
        click.echo(f"{summary['log']}: {responses:,} {noun} ({split})")
    return exits.OK


def _check_replaceable(project: Project, path: Path) -> None:
    """``--out`` replaces regular files only: a device node, directory, FIFO or symlink stays as it is."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as problem:
        raise PromptopsError(f"{project.relative(path)}: cannot check: {problem.strerror}") from None
    if not stat.S_ISREG(mode):
        kind = "a symlink" if stat.S_ISLNK(mode) else "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise PromptopsError(f"{project.relative(path)}: is {kind}; --out replaces regular files only")


T = TypeVar("T")


def _progress(items: Iterable[T], length: int, label: str) -> Iterator[T]:
    """``items``, with a progress bar on stderr when it is a terminal (quiet in pipes, logs and CI)."""
    if not sys.stderr.isatty():
        yield from items
        return
    with click.progressbar(items, length=length, label=label, file=sys.stderr) as bar:
        yield from bar
