"""``promptops compat``: schema compatibility commands (docs/compat.md): ``diff`` and ``matrix``."""

from __future__ import annotations

import json
from pathlib import Path

import click

from promptops.cli.project import Project, format_option, pass_project
from promptops.compat import classify
from promptops.compat.load import load_schema
from promptops.compat.report import render_text
from promptops.core.errors import PromptopsError
from promptops.core.lock import load_lock
from promptops.core.outcomes import ExitCode
from promptops.release.matrix import compat_matrix, render_matrix_text


@click.group()
def compat() -> None:
    """Schema compatibility: compute the semver class of a change."""


@compat.command("diff")
@click.argument("old", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("new", type=click.Path(dir_okay=False, path_type=Path))
@format_option()
def diff(old: Path, new: Path, output_format: str) -> int:
    """Compare schema OLD.json with NEW.json and classify the change as patch, minor or major.

    minor means backward compatible and forward compatible for parsers that ignore unknown properties;
    forward_compatible in the JSON output is the strict verdict. Exit codes: 0 when the diff was computed
    (whatever the class), 3 when a file is unreadable, not JSON, or not a valid schema.
    """
    comparison = classify(load_schema(old), load_schema(new))
    if output_format == "json":
        click.echo(json.dumps(comparison.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(render_text(comparison, str(old), str(new)))
    return ExitCode.OK


@compat.command("matrix")
@click.option("--contract", "contract_name", required=True, help="Contract name (a directory under versions/).")
@format_option()
@pass_project
def matrix(project: Project, contract_name: str, output_format: str) -> int:
    """Show which parser floors (schema versions) accept which released prompt/schema pairs.

    Rows are the released schema versions as parser floors, columns the releases. A cell is "exact", "tolerant
    (CLASS)" (a newer minor read with the floor's schema, unknown properties ignored; CLASS is the computed
    class of that schema change) or "rejected" (same major, minor >= floor). Exit codes: 0, or
    3 when the contract or its lock cannot be read.
    """
    contract = project.contract(contract_name)
    lock = load_lock(project.root, contract.name)
    schemas = {version: shape.schema for version, shape in contract.shapes.items()}
    missing = sorted({r.schema_version for r in lock.releases} - set(schemas))
    if missing:
        raise PromptopsError(f"{lock.source}: released schema {missing[0]} has no schema file in {contract.directory}")
    table = compat_matrix(lock, schemas, contract.default_policy.schema_floor)
    if output_format == "json":
        click.echo(json.dumps(table.to_dict(), indent=2))
    else:
        click.echo(render_matrix_text(table), nl=False)
    return ExitCode.OK
