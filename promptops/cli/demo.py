"""``promptops demo``: the whole release lifecycle in a workspace (promptops.demo.lifecycle), or, with
``--examples``, the bundled example responses through the parser."""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import click

from promptops.cli.project import Project, format_option, pass_project
from promptops.core.outcomes import ExitCode
from promptops.parsing import ChangedFiles, Parser
from promptops.parsing.diagnostics import INFO


def load_examples(contract: str) -> list[dict[str, Any]]:
    """The bundled example responses for ``contract`` (records with response_id, description, raw...)."""
    text = resources.files("promptops.demo").joinpath(f"{contract}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@click.command()
@click.option(
    "--workspace",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run in this new or empty directory (default: a new temporary directory, kept for you to explore).",
)
@click.option("--regression", is_flag=True, help="The candidate drops many findings: the gate fails and holds.")
@click.option(
    "--useless",
    is_flag=True,
    help="The candidate parses perfectly but its findings are mostly dismissed: the usefulness gate holds it.",
)
@click.option("--examples", is_flag=True, help="Only run the bundled example responses through the parser.")
@format_option()
@pass_project
def demo(
    project: Project, workspace: Path | None, regression: bool, useless: bool, examples: bool, output_format: str
) -> int:
    """The release lifecycle end to end on an embedded DuckDB store, narrated.

    Lints the templates, replays the review-result releases (diffing the schema and refusing a too-small
    bump), then rolls the latest release out through rollout/review-result/review-1.1.yaml with simulated
    reviewer traffic: gate, promote or hold, and write the dashboard. Nothing in the project is changed.
    With --useless the plan also gates on the acted-on rate and simulated developer feedback dismisses most of
    the candidate's findings. Exit codes: 0 the demo ran (a held rollout with --regression or --useless is part
    of the story); 3 it could not run.
    """
    if examples:
        return _examples(project, output_format)
    from promptops.demo.lifecycle import run  # DuckDB, the simulator and the release machinery load here

    target = workspace if workspace is not None else Path(tempfile.mkdtemp(prefix="promptops-demo-"))
    stages = []
    for stage in run(project.root, target, datetime.now(UTC), regression=regression, useless=useless):
        stages.append(stage)
        if output_format != "json":
            _print_stage(stage)
    if output_format == "json":
        body = {
            "workspace": str(target),
            "regression": regression,
            "useless": useless,
            "stages": [s.to_dict() for s in stages],
        }
        click.echo(json.dumps(body, indent=2))
        return ExitCode.OK
    click.echo(f"\nWorkspace: {target}")
    for stage in stages:
        if "dashboard" in stage.data:
            click.echo(f"Dashboard: {target / stage.data['dashboard']}")
    click.echo(f"Explore: promptops --root {target} rollout status {target}/rollout/review-result/review-1.1.yaml")
    return ExitCode.OK


def _print_stage(stage: Any) -> None:
    mark = click.style("==", fg="green" if stage.ok else "yellow")
    click.echo(f"\n{mark} {click.style(stage.title, bold=True)}")
    click.echo(click.style(f"   $ {stage.command}", dim=True))
    for line in stage.lines:
        click.echo(f"   {line}")


def _examples(project: Project, output_format: str) -> int:
    """Run the bundled review-result examples through the parser and summarize the outcomes."""
    contract = project.contract("review-result")
    parser = Parser(contract)
    rows = []
    for example in load_examples(contract.name):
        outcome = parser.parse(example["raw"], ChangedFiles(example["changed_files"]))
        notes = Counter(str(d.code) for d in outcome.diagnostics if d.level != INFO or outcome.accepted)
        rows.append(
            {
                "response_id": example["response_id"],
                "description": example["description"],
                "outcome": outcome.outcome,
                "reason": None if outcome.reason is None else str(outcome.reason),
                "findings_seen": outcome.findings_seen,
                "findings_kept": outcome.findings_kept,
                "diagnostics": dict(notes),
            }
        )
    accepted = sum(1 for row in rows if row["outcome"] == "accepted")
    if output_format == "json":
        body = {"contract": contract.name, "responses": rows, "accepted": accepted, "rejected": len(rows) - accepted}
        click.echo(json.dumps(body, indent=2))
        return ExitCode.OK
    click.echo(
        f"promptops demo: {len(rows)} example responses through the {contract.name} parser "
        f"(schema floor {parser.policy.schema_floor}, prompt {parser.policy.prompt_version})\n"
    )
    width = max(len(row["response_id"]) for row in rows)
    for row in rows:
        verdict = (
            f"kept {row['findings_kept']}/{row['findings_seen']}"
            if row["outcome"] == "accepted"
            else f"REJECTED {row['reason']}"
        )
        codes = ", ".join(
            f"{code}" + (f" x{n}" if n > 1 else "") for code, n in row["diagnostics"].items() if code != row["reason"]
        )
        click.echo(f"  {row['response_id']:<{width}}  {verdict:<32} {codes}")
        click.echo(f"  {'':<{width}}  {click.style(row['description'], dim=True)}")
    seen = sum(row["findings_seen"] for row in rows)
    kept = sum(row["findings_kept"] for row in rows)
    click.echo(
        f"\n{accepted} accepted, {len(rows) - accepted} rejected; {kept} of {seen} findings kept. "
        f"Try: promptops validate --contract {contract.name} --changed-file src/api/users.py RESPONSE"
    )
    return ExitCode.OK
