"""``promptops report``: the contract's dashboard (HTML + JSON summary) or a Prometheus textfile.

Exit codes: 0 written (whatever the verdicts: the report describes gates, it is not one); 3 broken store, plan,
lock or contract, unwritable directory, bad flags (one line on stderr).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from promptops.cli.project import Project, echo_lines, format_option, pass_project
from promptops.cli.store_options import (
    lock_timeout_option,
    parse_now,
    read_source,
    store_location,
    store_option,
)
from promptops.core.errors import PromptopsError
from promptops.core.outcomes import ExitCode
from promptops.spark.options import engine_options


@click.command("report")
@click.option("--contract", "contract_name", required=True, help="Contract name (a directory under versions/).")
@click.option(
    "--rollout", "rollout_id", metavar="ID", help="Only this rollout (default: every plan under rollout/<contract>/)."
)
@store_option("Diagnostics store (a DuckDB file, or a Parquet directory from promptops export)")
@lock_timeout_option()
@click.option("--now", "now_text", metavar="ISO", help="Judge the gates as of this time (UTC; default: now).")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory to write <contract>.html and <contract>.json (or <contract>.prom) into.",
)
@engine_options()
@format_option("text", "json", "prom")
@pass_project
def report_command(
    project: Project,
    contract_name: str,
    rollout_id: str | None,
    store_path: Path | None,
    lock_timeout: float,
    now_text: str | None,
    out_dir: Path,
    engine: str,
    spark_master: str | None,
    output_format: str,
) -> int:
    """Write the dashboard of CONTRACT's rollouts: a self-contained HTML page that opens offline (inline SVG
    charts, no script) and its JSON summary; with --format prom, a Prometheus textfile instead.

    The page shows, per rollout, the step and weights, the gate's verdict (purpose monitor) and reason, per
    metric the candidate and baseline rates over time with one-sided Wilson bands, the SLO, and n against the
    n needed; the top drop reasons and coerced fields, recent example drops, the release history and the
    compatibility matrix. Prints the files written and each rollout's verdict (--format json: as JSON).

    Exit codes: 0 written; 3 missing or broken store, broken or unguarded plan, broken lock or contract, or bad
    flags (nothing is written).
    """
    import duckdb

    from promptops.report.write import write_prom, write_report  # the report package loads only here

    contract = project.contract(contract_name)
    now = parse_now(now_text)
    _, display = store_location(project, store_path)
    with read_source(project, store_path, lock_timeout, engine, spark_master) as source:
        try:
            if output_format == "prom":
                prom, report = write_prom(project.root, contract, source, out_dir, now=now, rollout_id=rollout_id)
                files = {"prom": project.relative(prom)}
            else:
                written = write_report(project.root, contract, source, out_dir, now=now, rollout_id=rollout_id)
                report = written.report
                files = {"html": project.relative(written.html), "json": project.relative(written.json)}
        except duckdb.Error as problem:  # a damaged store or export: one line, no traceback
            first = str(problem).strip().splitlines()[0] if str(problem).strip() else type(problem).__name__
            raise PromptopsError(f"{display}: cannot read the store: {first}") from None
    rollouts = [
        {
            "rollout": r.rollout,
            "step": r.step,
            "step_name": r.step_name,
            "weight": r.weight,
            "verdict": r.verdict,
            "reason": r.gate["reason"],
            "sentence": r.gate["sentence"],
            "exit_code": r.gate["exit_code"],
        }
        for r in report.rollouts
    ]
    if output_format == "json":
        click.echo(json.dumps({"contract": contract.name, "files": files, "rollouts": rollouts}, indent=2))
        return ExitCode.OK
    echo_lines(f"{contract.name}: wrote {', '.join(files.values())}")
    if not rollouts:
        echo_lines(f"  no rollout plans under rollout/{contract.name}/")
    for r in rollouts:
        reason = f" [{r['reason']}]" if r["reason"] else ""
        echo_lines(
            f"  {r['rollout']} step {r['step']} ({r['step_name']}, candidate {r['weight']:.0%}): "
            f"{r['verdict']}{reason}: {r['sentence']}"
        )
    return ExitCode.OK
