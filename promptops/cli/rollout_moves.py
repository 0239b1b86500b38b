"""``promptops rollout rollback|resume|retarget``: the transitions that take a candidate out and back in."""

from __future__ import annotations

from pathlib import Path

import click

from promptops.cli.project import Project, format_option, pass_project
from promptops.cli.rollout_common import PLAN_FILE, moved, read_plan, refused, transition_options, who
from promptops.cli.store_options import parse_now
from promptops.errors import PromptopsError, VersionError
from promptops.rollout.plan import Arm, Plan
from promptops.rollout.session import RolloutRefused, resume, retarget, rollback
from promptops.versioning import PromptVersion, SchemaVersion


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
        from promptops.release.lock import load_lock

        release = load_lock(project.root, plan.contract).get(prompt)
        if release is None:
            raise PromptopsError(
                f"prompt {prompt} of {plan.contract} is not in the release lock: cut it first, or give --schema"
            )
        schema = release.schema_version
    return Arm(prompt, schema)
