"""``promptops render``: render a contract's prompt (thin shell over promptops.render.renderer)."""

from __future__ import annotations

import json
from typing import IO

import click

from promptops.changes import read_changed_files
from promptops.cli.inputs import InputText
from promptops.cli.project import Project, format_option, jinja_bytecode_cache, pass_project
from promptops.core.errors import VersionError
from promptops.core.outcomes import ExitCode
from promptops.core.versioning import PromptVersion
from promptops.render.renderer import Renderer


def _variable(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise click.BadParameter(f"{item!r} is not key=value with an identifier key", ctx, param)
        out[key] = value
    return out


@click.command()
@click.option("--contract", "contract_name", required=True, help="Contract name (a directory under versions/).")
@click.option(
    "--version",
    "version_text",
    metavar="X.Y.Z",
    help="Render this released prompt (its frozen snapshot), or the head template if it pins X.Y.Z.",
)
@click.option("--changed-file", "changed", multiple=True, metavar="PATH", help="A changed file (repeatable).")
@click.option(
    "--changed-files-from",
    type=InputText(),
    metavar="FILE",
    help="File listing changed files, one per line.",
)
@click.option(
    "--diff",
    "diff_file",
    type=InputText(),
    metavar="FILE",
    help="The diff under review (- for standard input); rendered as data, never as template code.",
)
@click.option(
    "--var",
    "variables",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_variable,
    help="An extra template variable (repeatable).",
)
@format_option()
@pass_project
def render(
    project: Project,
    contract_name: str,
    version_text: str | None,
    changed: tuple[str, ...],
    changed_files_from: IO[str] | None,
    diff_file: IO[str] | None,
    variables: dict[str, str],
    output_format: str,
) -> int:
    """Render the prompt of a contract with the given changed files, diff and variables.

    Prints the prompt exactly (text), or an object with contract, template, prompt_version, schema_version,
    changed_files and text (json). Exit codes: 0 rendered, 3 the template or the inputs are wrong (a missing
    variable is named with its template line).
    """
    try:
        version = PromptVersion.parse(version_text) if version_text is not None else None
    except VersionError as exc:
        raise click.BadParameter(str(exc), param_hint="--version") from None
    files = list(changed)
    if changed_files_from is not None:
        files += read_changed_files(changed_files_from.read())
    contract = project.contract(contract_name, check_schemas=False)
    prompt = Renderer(project.root, jinja_bytecode_cache()).render(
        contract,
        version=version,
        changed_files=files,
        diff=diff_file.read() if diff_file else "",
        variables=variables,
    )
    if output_format == "json":
        click.echo(json.dumps(prompt.to_dict(), ensure_ascii=False))
    else:
        click.echo(prompt.text, nl=False)
    return ExitCode.OK
