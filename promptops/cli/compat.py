"""``promptops compat``: schema compatibility commands (DESIGN.md §4, §6)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from promptops.cli import exits
from promptops.compat import classify
from promptops.compat.load import load_schema
from promptops.compat.report import render_text


@click.group()
def compat() -> None:
    """Schema compatibility: compute the semver class of a change."""


@compat.command("diff")
@click.argument("old", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("new", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(("text", "json")),
    default="text",
    show_default=True,
    help="Output format.",
)
def diff(old: Path, new: Path, output_format: str) -> int:
    """Compare schema OLD.json with NEW.json and classify the change as patch, minor or major.

    minor means backward compatible and forward compatible for parsers that ignore unknown properties;
    forward_compatible in the JSON output is the strict verdict. Exit codes: 0 when the diff was computed
    (whatever the class), 3 when a file is unreadable, not JSON, or not a valid schema.
    """
    comparison = classify(load_schema(old), load_schema(new))
    if output_format == "json":
        click.echo(json.dumps(comparison.to_json(), indent=2, ensure_ascii=False))
    else:
        click.echo(render_text(comparison, str(old), str(new)))
    return exits.OK
