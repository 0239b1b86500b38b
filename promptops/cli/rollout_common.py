"""What the ``promptops rollout`` commands share: reading a plan file, who acts, transition options and output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from promptops.cli.project import Project, echo_lines
from promptops.core.contract import list_contracts
from promptops.core.outcomes import ExitCode
from promptops.rollout.plan import ROLLOUT_DIR, Plan, PlanError, load_plan
from promptops.rollout.session import RolloutRefused

F = TypeVar("F", bound=Callable[..., Any])

PLAN_FILE = click.Path(dir_okay=False, path_type=Path)


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


def who(by: str | None) -> str:
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


def transition_options(function: F) -> F:
    function = click.option("--now", "now_text", metavar="ISO", help="Record this time (UTC; default: now).")(function)
    function = click.option("--by", help="Who acts (default: git user.name).")(function)
    return click.option("--reason", required=True, help="Why (recorded in the plan's history).")(function)


def moved(plan: Plan, output_format: str, text: str) -> int:
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
        echo_lines(text)
    return ExitCode.OK


def refused(refused: RolloutRefused) -> int:
    echo_lines(f"promptops: {refused}", err=True)
    return ExitCode.FAILED
