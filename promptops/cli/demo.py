"""``promptops demo``: validate the bundled example responses and show what the parser decided."""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from typing import Any

import click

from promptops.cli import exits
from promptops.cli.project import Project, format_option, pass_project
from promptops.parsing import ChangedFiles, Parser
from promptops.parsing.diagnostics import INFO


def load_examples(contract: str) -> list[dict[str, Any]]:
    """The bundled example responses for ``contract`` (records with response_id, description, raw...)."""
    text = resources.files("promptops.demo").joinpath(f"{contract}.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@click.command()
@format_option()
@pass_project
def demo(project: Project, output_format: str) -> int:
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
        click.echo(
            json.dumps(
                {"contract": contract.name, "responses": rows, "accepted": accepted, "rejected": len(rows) - accepted},
                indent=2,
            )
        )
        return exits.OK
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
    return exits.OK
