"""``promptops ingest``: response logs into the diagnostics store (README "Diagnostics store").

Exit codes: 0 every record was stored (or was already there); 2 some records were bad (each reported with
file and line; every good record was still stored); 3 the tool could not do its job: the store was locked
past --lock-timeout, a log or the store could not be read, a contract is broken. Whatever was stored before
a failure stays stored, in whole batches, and a re-run completes it.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from promptops.cli import exits
from promptops.cli.project import Project, format_option, pass_project
from promptops.cli.store_options import lock_timeout_option, store_location, store_option
from promptops.rollout.policies import RolloutPolicies
from promptops.spark.options import engine_options
from promptops.store import BadRecord, IngestReport, ParserCache, Store, ingest_logs
from promptops.store.ingest import DEFAULT_INGEST_BATCH, total_bytes

# Below this much input, starting worker processes (about a second each) costs more than it saves.
AUTO_WORKERS_BYTES = 64 << 20
# Bad records printed one per line on stderr; the rest are counted (a whole file of garbage should not
# flood a CI log).
MAX_REPORTED = 100


@click.command("ingest")
@click.argument("logs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@store_option("DuckDB file to write")
@lock_timeout_option()
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    default=DEFAULT_INGEST_BATCH,
    show_default=True,
    help="Responses per transaction.",
)
@click.option("--rescan", is_flag=True, help="Read segments again even if remembered as fully ingested.")
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=None,
    help="Processes that decode and parse (0: this one). Default: one per core when the logs hold at least "
    f"{AUTO_WORKERS_BYTES >> 20} MiB, else 0.",
)
@engine_options()
@format_option()
@pass_project
def ingest_command(
    project: Project,
    logs: tuple[Path, ...],
    store_path: Path | None,
    lock_timeout: float,
    batch_size: int,
    rescan: bool,
    workers: int | None,
    engine: str,
    spark_master: str | None,
    output_format: str,
) -> int:
    """Parse response LOGS (.jsonl, .jsonl.gz, or directories of them) into the diagnostics store.

    Exit codes: 0 all records stored; 2 some records were bad (reported with file:line, the rest stored);
    3 tool failure (store locked past --lock-timeout, unreadable log or store, broken contract).
    """
    path, display = store_location(project, store_path)
    reporter = _BadRecords()
    if engine == "spark":  # the lake directory at --store, written by a Spark job (docs/spark.md)
        from promptops.spark.options import run_ingest

        report = run_ingest(project.root, [str(p) for p in logs], store_path, spark_master, project.relative, reporter)
        return _finish(display, report, reporter, output_format)
    parsers = ParserCache.for_project(project.root, RolloutPolicies(project.root))
    paths = list(logs)
    size = total_bytes(paths)
    if workers is None:
        cores = os.cpu_count() or 1
        workers = cores if cores > 1 and size >= AUTO_WORKERS_BYTES else 0
    with Store.open(path, display=display, lock_timeout=lock_timeout) as store, _progress(size) as progress:
        report = ingest_logs(
            paths,
            store,
            parsers,
            relative=project.relative,
            batch_size=batch_size,
            rescan=rescan,
            on_bad=reporter,
            on_progress=progress,
            processes=workers,
        )
    return _finish(display, report, reporter, output_format)


def _finish(display: str, report: IngestReport, reporter: _BadRecords, output_format: str) -> int:
    reporter.close()
    for failed in report.failed:
        click.echo(f"promptops: error: {failed.error}", err=True)
    code = exits.TOOL_FAILURE if report.failed else exits.FAILED if report.bad_records else exits.OK
    if output_format == "json":
        click.echo(json.dumps({"store": display, **report.to_dict(), "exit_code": code}, indent=2))
    else:
        click.echo(_summary(display, report))
    return code


@contextmanager
def _progress(size: int) -> Iterator[Callable[[int], None] | None]:
    """A progress bar's update function on a terminal; nothing in CI or when stderr is a file."""
    if not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=size, label="ingesting", file=sys.stderr) as bar:
        yield bar.update


class _BadRecords:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, bad: BadRecord) -> None:
        self.count += 1
        if self.count <= MAX_REPORTED:
            click.echo(f"promptops: {bad}", err=True)

    def close(self) -> None:
        if self.count > MAX_REPORTED:
            click.echo(f"promptops: ... and {self.count - MAX_REPORTED} more bad records", err=True)


def _summary(display: str, report: IngestReport) -> str:
    data: dict[str, Any] = report.to_dict()
    skipped = f", {data['segments_skipped']} already ingested" if data["segments_skipped"] else ""
    return (
        f"{display}: {data['inserted']:,} responses stored ({data['diagnostics']:,} diagnostics), "
        f"{data['duplicates']:,} already stored, {data['bad_records']:,} bad records; "
        f"{data['records']:,} records read from {data['segments']} segments{skipped}"
    )
