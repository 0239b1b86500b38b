"""``promptops rollout rollback|resume|retarget|retire``: the transitions that take a candidate out and back in,
and the retirement of the old major line after a major rollout."""

from __future__ import annotations

import json
from pathlib import Path

import click

from promptops.cli.project import Project, echo_lines, format_option, pass_project
from promptops.cli.rollout_common import PLAN_FILE, moved, read_plan, refused, transition_options, who
from promptops.cli.store_options import parse_now
from promptops.core.errors import PromptopsError, VersionError
from promptops.core.outcomes import ExitCode
from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.rollout.plan import Arm, Plan
from promptops.rollout.session import RolloutRefused, resume, retarget, rollback


@click.command("rollback")
@click.argument("plan_file", type=PLAN_FILE)
@transition_options
@format_option()
@pass_project
def rollback_command(
    project: Project, plan_file: Path, reason: str, by: str | None, now_text: str | None, output_format: str
) -> int:
    """Send every unit of PLAN_FILE back to the baseline (candidate weight 0), keeping the step."""
    plan = rollback(plan_file, read_plan(project, plan_file), by=who(by), now=parse_now(now_text), reason=reason)
    return moved(plan, output_format, f"{plan.rollout_id}: rolled back at step {plan.step}; candidate weight 0")


@click.command("resume")
@click.argument("plan_file", type=PLAN_FILE)
@transition_options
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
        plan = resume(plan_file, read_plan(project, plan_file), by=who(by), now=parse_now(now_text), reason=reason)
    except RolloutRefused as refusal:
        return refused(refusal)
    step = plan.steps[plan.step]
    return moved(
        plan,
        output_format,
        f"{plan.rollout_id}: resumed prompt {plan.candidate.prompt_version} at step {plan.step} ({step.name}), "
        f"candidate {plan.weight:.0%}",
    )


@click.command("retarget")
@click.argument("plan_file", type=PLAN_FILE)
@click.option("--candidate", "candidate_text", required=True, metavar="X.Y.Z", help="The new candidate prompt.")
@click.option(
    "--schema",
    "schema_text",
    metavar="X.Y",
    help="The schema the new candidate targets (default: the one its release in the lock targets).",
)
@transition_options
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
        changed = retarget(plan_file, plan, candidate, by=who(by), now=parse_now(now_text), reason=reason)
    except RolloutRefused as refusal:
        return refused(refusal)
    return moved(
        changed,
        output_format,
        f"{changed.rollout_id}: candidate is now prompt {candidate.prompt_version} (schema "
        f"{candidate.schema_version}), at step 0 ({changed.steps[0].name}); candidate weight {changed.weight:.0%}",
    )


def _candidate(project: Project, plan: Plan, prompt_text: str, schema_text: str | None) -> Arm:
    try:
        prompt = PromptVersion.parse(prompt_text)
        schema = SchemaVersion.parse(schema_text) if schema_text is not None else None
    except VersionError as problem:
        raise click.BadParameter(str(problem), param_hint="--schema" if schema_text else "--candidate") from None
    if schema is None:
        from promptops.core.lock import load_lock

        release = load_lock(project.root, plan.contract).get(prompt)
        if release is None:
            raise PromptopsError(
                f"prompt {prompt} of {plan.contract} is not in the release lock: cut it first, or give --schema"
            )
        schema = release.schema_version
    return Arm(prompt, schema)


@click.command("retire")
@click.argument("plan_file", type=PLAN_FILE)
@click.option("--dry-run", is_flag=True, help="Say what would change; write nothing.")
@format_option()
@pass_project
def retire_command(project: Project, plan_file: Path, dry_run: bool, output_format: str) -> int:
    """Retire the old major line once PLAN_FILE's major candidate serves every unit.

    Raises policy.schema_floor in the contract's contract.yaml to the candidate's major line and pins
    policy.prompt_version to the candidate (comments and layout kept): answers of the old line are rejected
    from then on. Exit codes: 0 retired; 2 refused (not at full traffic, not a new major line, or the
    candidate is unreadable); 3 broken plan, contract or lock.
    """
    from promptops.core.contract import load_contract
    from promptops.core.lock import load_lock
    from promptops.rollout.retire import RetireRefused, plan_retirement, retire

    plan = read_plan(project, plan_file)
    contract = load_contract(project.root, plan.contract)
    try:
        change = plan_retirement(contract, load_lock(project.root, plan.contract), plan)
    except RetireRefused as refusal:
        echo_lines(f"promptops: {refusal}", err=True)
        return ExitCode.FAILED
    if not dry_run:
        retire(project.root, change)
    if output_format == "json":
        click.echo(json.dumps({"dry_run": dry_run, **change.to_dict()}))
        return ExitCode.OK
    old_floor, new_floor = change.schema_floor
    old_prompt, new_prompt = change.prompt_version
    verb = "would retire" if dry_run else "retired"
    echo_lines(
        f"{change.contract}: {verb} major line {change.retired_major}: in {change.source}, policy.schema_floor "
        f"{old_floor} -> {new_floor}, policy.prompt_version {old_prompt} -> {new_prompt}; answers of major "
        f"{change.retired_major} are rejected from now on (incompatible_version)"
    )
    return ExitCode.OK
