"""``promptops init``, ``promptops contract new`` and ``promptops rollout new``: start a project, a contract
and a rollout (thin shell over promptops.scaffold.plan). Nothing is ever overwritten; ``--dry-run`` lists."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from promptops import __version__
from promptops.cli.completion import complete_builtin_contracts
from promptops.cli.project import Project, format_option, pass_project
from promptops.core.contract import VERSIONS_DIR
from promptops.core.files import WriteError, directory_lock, remove_stray_temps
from promptops.core.outcomes import ExitCode
from promptops.scaffold.plan import (
    PRE_COMMIT_SNIPPET,
    ContractRequest,
    NeedsChoice,
    ScaffoldError,
    Write,
    check_contract,
    plan_contract,
    plan_init,
)
from promptops.scaffold.write import apply_writes, commit_contract, roll_back_dead_contracts

INIT_FILES = ("pyproject.toml", ".gitattributes", ".gitignore")  # the files init rewrites whole

MAX_SCHEMA_BYTES = 4 << 20


def _git_toplevel(start: Path) -> Path:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=start, capture_output=True, text=True, check=False
        )
    except OSError:
        raise ScaffoldError("git is not installed: promptops init works in a git repository") from None
    if done.returncode != 0:
        raise ScaffoldError(f"{start}: not inside a git repository: run `git init` first")
    return Path(done.stdout.strip())


def _report(writes: Sequence[Write], dry_run: bool) -> list[str]:
    verb = {"mkdir": "create", "create": "create", "update": "update", "append": "append to"}
    lines = []
    for w in writes:
        if w.skipped:
            lines.append(f"skip      {w.path}{'/' if w.mode == 'mkdir' else ''} ({w.skipped})")
        else:
            lines.append(f"{'would ' if dry_run else ''}{verb[w.mode]:<9} {w.path}{'/' if w.mode == 'mkdir' else ''}")
    return lines


@click.command("init")
@click.option("--dry-run", is_flag=True, help="List what would be written; write nothing.")
@format_option()
@click.pass_context
def init_command(ctx: click.Context, dry_run: bool, output_format: str) -> int:
    """Make this git repository a promptops project.

    Creates versions/, templates/ and rollout/, adds a [tool.promptops] table to pyproject.toml, a
    `versions/** -text` line to .gitattributes and `.promptops/` to .gitignore, then prints the pre-commit
    configuration and the next command. Never overwrites a file; each file is written whole or not at all,
    so a run that was stopped is completed by running init again. Exit codes: 0 done, 3 not a git repository,
    an unreadable or unwritable file (named), or another init running.
    """
    given = ctx.find_root().params.get("root")
    root = Path(given).resolve() if given else _git_toplevel(Path.cwd())
    if given:
        _git_toplevel(root)
    if dry_run:
        writes = plan_init(root, __version__)
    else:
        with directory_lock(root, ".", wait=False):  # one init at a time; what a killed one left goes first
            remove_stray_temps(root, INIT_FILES)
            writes = plan_init(root, __version__)
            apply_writes(root, writes)
    snippet = PRE_COMMIT_SNIPPET.format(version=__version__)
    next_command = "promptops contract new NAME --schema FILE.json"
    if output_format == "json":
        body = {
            "dry_run": dry_run,
            "writes": [w.to_dict() for w in writes],
            "pre_commit_config": snippet,
            "next": next_command,
        }
        click.echo(json.dumps(body, indent=2))
        return ExitCode.OK
    for line in _report(writes, dry_run):
        click.echo(line)
    click.echo(f"\nAdd to .pre-commit-config.yaml:\n\n{snippet}\nNext: {next_command}")
    return ExitCode.OK


@click.group("contract")
def contract_group() -> None:
    """Create contracts (versions/<name>/)."""


def _read_schema(path: Path) -> Any:
    shown = path.as_posix()
    try:
        if not path.is_file():
            raise ScaffoldError(f"{shown}: not a regular file")
        with path.open("rb") as handle:
            data = handle.read(MAX_SCHEMA_BYTES + 1)
    except OSError as exc:
        raise ScaffoldError(f"{shown}: cannot read: {exc.strerror}") from None
    if len(data) > MAX_SCHEMA_BYTES:
        raise ScaffoldError(f"{shown}: larger than {MAX_SCHEMA_BYTES:,} bytes")
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ScaffoldError(f"{shown}: not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ScaffoldError(f"{shown}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from None
    except RecursionError:
        raise ScaffoldError(f"{shown}: invalid JSON: nested too deeply") from None
    except ValueError:  # what json raises besides: an integer past Python's 4,300-digit conversion limit
        raise ScaffoldError(f"{shown}: invalid JSON: a number of more than 4,300 digits") from None


def _lint_errors(scratch: Path, paths: Sequence[Path]) -> list[str]:
    from promptops.lint import Level, LintConfig, lint

    report = lint(scratch, paths, LintConfig())
    return [f"{f.file}:{f.span.line}: {f.code} {f.message}" for f in report.findings if f.level is Level.ERROR]


def _render(scratch: Path, name: str) -> str:
    from promptops.core.contract import load_contract
    from promptops.render.renderer import Renderer

    return Renderer(scratch).render(load_contract(scratch, name), changed_files=["app/example.py"]).text


def _prove(root: Path, name: str, writes: Sequence[Write]) -> None:
    """Load, lint and render the new contract in a scratch copy with the project's own partials."""
    with tempfile.TemporaryDirectory(prefix="promptops-new-") as scratch_dir:
        scratch = Path(scratch_dir)
        own = root / "templates"
        for partial in own.glob("_*") if own.is_dir() else ():
            if partial.is_dir():
                shutil.copytree(partial, scratch / "templates" / partial.name, symlinks=True)
            elif partial.is_file():
                (scratch / "templates").mkdir(exist_ok=True)
                shutil.copy(partial, scratch / "templates" / partial.name)
        apply_writes(scratch, writes)
        check_contract(scratch, name, _lint_errors, _render)


@contract_group.command("new")
@click.argument("name")
@click.option(
    "--schema",
    "schema_file",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE.json",
    help="The JSON Schema of a response.",
)
@click.option("--items", metavar="ARRAY", help="The top-level array that holds the findings.")
@click.option("--id", "id_field", metavar="FIELD", help="The finding field holding its id.")
@click.option("--path", "path_field", metavar="FIELD", help="The finding field holding the file path.")
@click.option("--line", "line_field", metavar="FIELD", help="The finding field holding the line.")
@click.option("--end-line", "end_line_field", metavar="FIELD", help="The finding field holding the end line.")
@click.option(
    "--from",
    "start_from",
    metavar="BUILTIN",
    shell_complete=complete_builtin_contracts,
    help="Start from a built-in contract (review-result, code-review-findings, agent-output, reviewer-finding).",
)
@click.option("--schema-version", metavar="X.Y", help="The schema's version (default: 1.0, or the built-in's).")
@click.option("--prompt-version", default="1.0.0", show_default=True, metavar="X.Y.Z", help="The head's version.")
@click.option("--description", default="", help="One line describing the contract.")
@click.option("--dry-run", is_flag=True, help="List what would be written; write nothing.")
@format_option()
@pass_project
def contract_new(
    project: Project,
    name: str,
    schema_file: Path | None,
    items: str | None,
    id_field: str | None,
    path_field: str | None,
    line_field: str | None,
    end_line_field: str | None,
    start_from: str | None,
    schema_version: str | None,
    prompt_version: str,
    description: str,
    dry_run: bool,
    output_format: str,
) -> int:
    """Create contract NAME: versions/NAME/contract.yaml, versions/NAME/schemas/X.Y.json and a head template
    templates/NAME.j2 built on the packaged partials, which lints clean and renders.

    The findings array and the id/path/line/end-line fields are inferred when the schema makes them obvious;
    otherwise you are asked (in a terminal) or the run stops naming the flag to give. Exit codes: 0 written,
    3 a bad schema, an ambiguous role or an existing file (nothing is written then).
    """
    schema = _read_schema(schema_file) if schema_file is not None else None
    versions = project.root / VERSIONS_DIR
    if not dry_run and versions.is_dir():
        with directory_lock(versions, f"{VERSIONS_DIR}/", wait=False):  # a killed run's leftovers go first
            roll_back_dead_contracts(project.root)
    roles: dict[str, str | None] = {"id": id_field, "path": path_field, "line": line_field, "end_line": end_line_field}
    while True:
        request = ContractRequest(name, schema, schema_version, prompt_version, items, roles, start_from, description)
        try:
            writes = plan_contract(project.root, request)
            break
        except NeedsChoice as choice:
            if not (sys.stdin.isatty() and choice.candidates):
                raise
            picked = click.prompt(f"{choice} ({choice.flag})", type=click.Choice(list(choice.candidates)), err=True)
            if choice.role == "items":
                items = picked
            else:
                roles[choice.role] = picked
    _prove(project.root, name, writes)
    if not dry_run:
        try:
            versions.mkdir(parents=True, exist_ok=True)
        except OSError as problem:
            raise WriteError(f"{VERSIONS_DIR}/: cannot create: {problem.strerror or problem}") from None
        with directory_lock(versions, f"{VERSIONS_DIR}/", wait=False):  # one new contract at a time
            roll_back_dead_contracts(project.root)
            commit_contract(project.root, f"{VERSIONS_DIR}/{name}", writes)
    next_command = f"promptops lint && promptops release cut --contract {name}"
    if output_format == "json":
        click.echo(json.dumps({"dry_run": dry_run, "writes": [w.to_dict() for w in writes], "next": next_command}))
        return ExitCode.OK
    for line in _report(writes, dry_run):
        click.echo(line)
    click.echo(f"\nNext: {next_command}")
    return ExitCode.OK
