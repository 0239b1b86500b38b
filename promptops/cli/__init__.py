"""The ``promptops`` command line: thin click commands over the library.

Commands load lazily (each lives in its own module and is imported only when run), so a quick command such
as ``lint`` in a pre-commit hook never pays for DuckDB or the validator machinery. ``main`` maps every
failure to one line on stderr and a documented exit code (see ``promptops.core.outcomes.ExitCode``).
"""

# ruff: noqa: E402 (the collector is paused before the imports below)
from __future__ import annotations

import gc

# Importing allocates many objects and frees almost none, so the collector's passes while the CLI and a
# command's modules import find nothing to free. It is paused for those imports only (this module's, a
# command's module, the store's modules: ``collector_paused``) and enabled again, if it was, before any
# command does its work; no command's own work runs with it paused. In a process that ``main`` runs, what
# the imports made is then frozen (``gc.freeze``): it lives until the process ends, so no later collection,
# nor the one at exit, need look at it again (together about 60 M instructions of a gate's start-up,
# docs/performance.md). ``run`` alone (tests, in-process callers) freezes nothing: it may run many times.
_collecting = gc.isenabled()
_freeze_imports = False  # set by main
gc.disable()

import importlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from promptops import DISTRIBUTION
from promptops.cli import completion
from promptops.cli.project import Project, find_root
from promptops.core.errors import PromptopsError
from promptops.core.escape import one_line
from promptops.core.outcomes import ExitCode


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while modules import, and what they made frozen when ``main``
    runs the process (see the top of this module)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if _freeze_imports:
            gc.freeze()
        if collecting:
            gc.enable()


# command name -> "module:attribute"; add new commands here.
COMMANDS: dict[str, str] = {
    "validate": "promptops.cli.validate:validate",
    "demo": "promptops.cli.demo:demo",
    "review-gate": "promptops.cli.review_gate:review_gate",
    "lint": "promptops.cli.lint:lint_command",
    "render": "promptops.cli.render:render",
    "merge": "promptops.cli.merge:merge_command",
    "compat": "promptops.cli.compat:compat",
    "release": "promptops.cli.release:release",
    "rollout": "promptops.cli.rollout:rollout",
    "ingest": "promptops.cli.ingest:ingest_command",
    "rates": "promptops.cli.rates:rates_command",
    "export": "promptops.cli.export:export_command",
    "lake": "promptops.cli.lake:lake_group",
    "report": "promptops.cli.report:report_command",
    "init": "promptops.cli.scaffold:init_command",
    "contract": "promptops.cli.scaffold:contract_group",
    "feedback": "promptops.cli.feedback:feedback",
}


# The store extra's modules: a command that needs them, run without them, says how to install them.
STORE_MODULES = ("duckdb", "pyarrow")


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attribute = target.split(":")
        with collector_paused():
            command = getattr(importlib.import_module(module_name), attribute)
        assert isinstance(command, click.Command)
        return completion.attach(command)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    help="Project root holding versions/, templates/ and rollout/ (default: nearest parent of the working "
    "directory that has a versions/ directory).",
)
@click.version_option(package_name=DISTRIBUTION)
@click.pass_context
def cli(ctx: click.Context, root: Path | None) -> None:
    """Release toolchain for LLM code reviewers: contracts, parsing, compatibility, rollouts."""
    ctx.obj = Project(root.resolve() if root is not None else find_root(Path.cwd()))


def main(argv: list[str] | None = None) -> None:
    """Console entry point: run the CLI and exit with its code, never with a traceback."""
    global _freeze_imports
    _freeze_imports = True
    gc.freeze()  # the CLI's own imports (see the top of this module)
    code = run(argv)
    sys.exit(code)


def run(argv: list[str] | None = None) -> int:
    try:
        result: Any = cli.main(args=argv, prog_name="promptops", standalone_mode=False)
    except click.exceptions.Exit as stop:
        return stop.exit_code
    except click.exceptions.NoArgsIsHelpError as bare:  # `promptops` or a group alone: its help, as with --help
        click.echo(bare.ctx.get_help(), color=bare.ctx.color)
        return ExitCode.OK
    except click.ClickException as problem:  # usage errors: bad flags, missing options
        _fail(problem.format_message())
        return ExitCode.TOOL_FAILURE
    except click.Abort:
        _fail("aborted")
        return ExitCode.TOOL_FAILURE
    except PromptopsError as problem:
        _fail(str(problem))
        return ExitCode.TOOL_FAILURE
    except ModuleNotFoundError as problem:
        if problem.name not in STORE_MODULES:
            raise
        _fail(f"this command needs the diagnostics store ({problem.name}): pip install '{DISTRIBUTION}[store]'")
        return ExitCode.TOOL_FAILURE
    except OSError as problem:
        where = f"{problem.filename}: " if problem.filename else ""
        _fail(f"{where}{problem.strerror or problem}")
        return ExitCode.TOOL_FAILURE
    except Exception as problem:  # pragma: no cover - the promise is "no traceback", so keep one escape hatch
        if os.environ.get("PROMPTOPS_DEBUG"):
            raise
        _fail(f"internal error: {type(problem).__name__}: {problem} (set PROMPTOPS_DEBUG=1 for a traceback)")
        return ExitCode.TOOL_FAILURE
    return result if isinstance(result, int) else ExitCode.OK


def _fail(message: str) -> None:
    click.echo(f"promptops: error: {one_line(message)}", err=True)


if _collecting:  # this module's imports are done (see the top)
    gc.enable()
