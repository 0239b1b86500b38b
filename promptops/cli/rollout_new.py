"""``promptops rollout new``: write a rollout plan for a contract (thin shell over promptops.scaffold.plan).

Kept apart from the other rollout commands' module and light to import: every ``promptops rollout`` command
loads this one, and the gate must not pay for Jinja.
"""

from __future__ import annotations

import json

import click

from promptops.cli.completion import complete_contracts
from promptops.cli.project import Project, echo_lines, format_option, pass_project
from promptops.core.outcomes import ExitCode


@click.command("new")
@click.argument("contract", shell_complete=complete_contracts)
@click.option("--id", "rollout_id", metavar="ID", help="The rollout id (default: CONTRACT-<candidate version>).")
@click.option("--dry-run", is_flag=True, help="Show the plan; write nothing.")
@format_option()
@pass_project
def rollout_new(project: Project, contract: str, rollout_id: str | None, dry_run: bool, output_format: str) -> int:
    """Write a rollout plan for CONTRACT: the candidate is its head (released), the baseline the latest
    release before it.

    Refuses (exit 3), saying what to cut or change first, when there is no release yet, the head's version is
    not released or is the first release, and when the plan file exists.
    """
    from promptops.render.renderer import Renderer
    from promptops.rollout.plan import load_plan
    from promptops.scaffold.plan import ScaffoldError, plan_rollout

    if not dry_run:
        _remove_dead_temps(project, contract)
    renderer = Renderer(project.root)
    head = renderer.head_template(contract)
    pins = None
    if head is not None:
        found = renderer.pins(head)
        pins = (found.prompt_text, found.schema_text)
    write = plan_rollout(project.root, contract, pins, rollout_id)
    if write.skipped:
        raise ScaffoldError(f"{write.path} exists already: give another --id (nothing is ever overwritten)")
    if not dry_run:
        from promptops.core.files import WriteError, create_atomic
        from promptops.rollout.planfile import plan_lock

        path = project.root / write.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as problem:
            raise WriteError(f"{write.path}: cannot write: {problem.strerror or problem}") from None
        with plan_lock(path, write.path):  # the lock every writer of the contract's plans holds
            create_atomic(path, write.content.encode("utf-8"), shown=write.path)  # whole; never replaces a plan
        load_plan(project.root / write.path, write.path)  # the plan as written loads: prove it
    if output_format == "json":
        click.echo(json.dumps({"dry_run": dry_run, "plan": write.path, "text": write.content}))
    elif dry_run:
        click.echo(write.content, nl=False)
    else:
        echo_lines(f"created {write.path}", "", f"Next: promptops rollout gate {write.path}")
    return ExitCode.OK


def _remove_dead_temps(project: Project, contract: str) -> None:
    """What killed writers left beside the contract's plans, removed first (even when this run refuses)."""
    from promptops.core.contract import check_contract_name
    from promptops.rollout.planfile import plan_lock, remove_dead_temps
    from promptops.scaffold.plan import ROLLOUT_DIR

    directory = project.root / ROLLOUT_DIR / check_contract_name(contract)
    if directory.is_dir():
        with plan_lock(directory / "plan.yaml", f"{ROLLOUT_DIR}/{contract}/"):
            remove_dead_temps(directory)
