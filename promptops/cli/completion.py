"""Shell completion of contract names, rollout plans and lint rule codes.

Click's protocol does the rest (``_PROMPTOPS_COMPLETE=bash_source promptops`` prints the bash script; zsh and
fish likewise, see docs/getting-started.md). ``attach`` gives every command's parameters their completion by
what they hold, in this one place, so a new ``--contract`` option completes without anyone remembering to.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import click
from click.shell_completion import CompletionItem

from promptops.cli.project import find_root

Completer = Callable[[click.Context, click.Parameter, str], list[CompletionItem]]


def _root(ctx: click.Context) -> Path:
    # During completion the group's callback does not run, so ctx.obj is unset: read --root ourselves.
    given = ctx.find_root().params.get("root")
    return Path(given).resolve() if given else find_root(Path.cwd())


def complete_contracts(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from promptops.core.contract import list_contracts

    return [CompletionItem(n) for n in list_contracts(_root(ctx)) if n.startswith(incomplete)]


def complete_builtin_contracts(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from promptops import defaults

    return [CompletionItem(n) for n in defaults.builtin_contracts() if n.startswith(incomplete)]


def complete_plans(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    """The rollout plans (rollout/<contract>/<id>.yaml), as paths from the working directory."""
    base = _root(ctx) / "rollout"
    cwd = Path.cwd()
    found = sorted(base.glob("*/*.yaml")) if base.is_dir() else []
    shown = [os.path.relpath(p, cwd) for p in found]
    return [CompletionItem(s) for s in shown if s.startswith(incomplete)]


def complete_rule_codes(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from promptops.lint.rules import RULES

    prefix = incomplete.upper()
    return [CompletionItem(r.code, help=r.summary()) for r in RULES if r.code.startswith(prefix)]


# Parameter name -> completer; a parameter that completes otherwise already keeps its own.
BY_NAME: dict[str, Completer] = {
    "contract": complete_contracts,
    "contract_name": complete_contracts,
    "start_from": complete_builtin_contracts,
    "plan_file": complete_plans,
    "plan": complete_plans,
    "explain": complete_rule_codes,
}


def attach(command: click.Command) -> click.Command:
    """Give ``command``'s parameters (and its subcommands', for a group) their completers by name."""
    for param in command.params:
        completer = BY_NAME.get(param.name or "")
        if completer is not None and param._custom_shell_complete is None:
            param._custom_shell_complete = completer  # click's slot for a shell_complete= callback
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            attach(sub)
    return command
