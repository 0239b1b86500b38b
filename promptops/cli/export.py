"""``promptops export``: the store as hive-partitioned Parquet (docs/store.md, Parquet layout).

Exit codes: 0 exported; 3 the store is missing, locked past --lock-timeout or unreadable, or DIR cannot be
written.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from promptops.cli.project import Project, echo_lines, pass_project
from promptops.cli.store_options import lock_timeout_option, store_location, store_option
from promptops.core.outcomes import ExitCode
from promptops.core.wording import count
from promptops.store.errors import store_error


@click.command("export")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--format",
    "export_format",
    type=click.Choice(["parquet"]),
    default="parquet",
    show_default=True,
    help="File format written.",
)
@click.option("--contract", "contract_name", help="Export only this contract.")
@store_option("DuckDB file to export")
@lock_timeout_option()
@click.option(
    "--report-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Format of the summary printed (--format names the files written).",
)
@pass_project
def export_command(
    project: Project,
    directory: Path,
    export_format: str,
    contract_name: str | None,
    store_path: Path | None,
    lock_timeout: float,
    report_format: str,
) -> int:
    """Write the store to DIRECTORY as Parquet partitioned by contract and day.

    The files carry this store's id: exporting again replaces them, and other stores' files in DIRECTORY
    stay. `promptops rates --store DIRECTORY` reads the export. Exit codes: 0 exported; 3 tool failure.
    """
    import duckdb  # the store extra loads here, never for --help

    from promptops.store import Store, export_parquet

    path, display = store_location(project, store_path)
    try:
        with Store.open(path, display=display, read_only=True, lock_timeout=lock_timeout) as store:
            report = export_parquet(store, directory, display=project.relative(directory), contract=contract_name)
    except duckdb.Error as problem:  # a damaged block met by a query: one line, exit 3
        raise store_error(display, problem, "export failed") from None
    if report_format == "json":
        click.echo(json.dumps({"store": display, "format": export_format, **report.to_dict()}, indent=2))
    else:
        echo_lines(
            f"{display} -> {report.directory}: {count(report.responses, 'response')}, "
            f"{count(report.diagnostics, 'diagnostic')} ({count(report.slices, 'slice')}) and "
            f"{count(report.traces, 'trace step')} in {count(report.files, export_format + ' file')}"
        )
    return ExitCode.OK
