"""``promptops ingest``: response logs into the diagnostics store (docs/store.md).

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
from typing import TYPE_CHECKING, Any

import click

from promptops.cli.project import Project, format_option, pass_project, schema_verdicts
from promptops.cli.store_options import lock_timeout_option, store_location, store_option
from promptops.core.escape import one_line
from promptops.core.outcomes import ExitCode
from promptops.core.wording import count
from promptops.rollout.policies import RolloutPolicies, unknown_names
from promptops.spark.options import engine_options
from promptops.store.defaults import DEFAULT_INGEST_BATCH

if TYPE_CHECKING:
    from promptops.store import BadRecord, IngestReport

# Below this much input, starting worker processes (about a second each) costs more than it saves.
AUTO_WORKERS_BYTES = 64 << 20
# Bad records printed one per line on stderr; the rest are counted (a whole file of garbage should not
# flood a CI log).
MAX_REPORTED = 100


@click.command("ingest")
@click.argument("logs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--input-format",
    type=click.Choice(["jsonl", "otlp-json"]),
    default="jsonl",
    show_default=True,
    help="What LOGS hold: response log records, or OpenTelemetry spans as OTLP/JSON lines (the Collector's file "
    "exporter); --format otlp-json says the same.",
)
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
    help="Processes that decode and parse (0: this one). Default: one per core on machines with more than two "
    f"cores when the logs hold at least {AUTO_WORKERS_BYTES >> 20} MiB, else 0.",
)
@engine_options()
@format_option("text", "json", "otlp-json")
@pass_project
def ingest_command(
    project: Project,
    logs: tuple[Path, ...],
    input_format: str,
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

    With --input-format otlp-json, LOGS are OpenTelemetry trace files (OTLP/JSON, one export request a line):
    each model-call span is stored as the response it carries; other spans are skipped and counted.

    Exit codes: 0 all records stored; 2 some records were bad (reported with file:line, the rest stored);
    3 tool failure (store locked past --lock-timeout, unreadable log or store, broken contract).
    """
    # the store extra (DuckDB, Arrow) loads here, never for --help
    from promptops.store import ParserCache, Store, ingest_logs
    from promptops.store.ingest import total_bytes
    from promptops.store.nopandas import skip_pandas_probe

    ingest: Callable[..., IngestReport] = ingest_logs
    measure: Callable[[list[Path]], int] = total_bytes
    if "otlp-json" in (input_format, output_format):
        from promptops.store.otlp import ingest_otlp, otlp_bytes

        ingest, measure, output_format = ingest_otlp, otlp_bytes, output_format.replace("otlp-json", "text")
    path, display = store_location(project, store_path)
    reporter = _BadRecords()
    if engine == "spark":  # the lake directory at --store, written by a Spark job (docs/spark.md)
        from promptops.spark.options import run_ingest

        report = run_ingest(project.root, [str(p) for p in logs], store_path, spark_master, project.relative, reporter)
        return _finish(project, display, report, reporter, output_format)
    skip_pandas_probe()  # the DuckDB store takes Arrow built from Python values: pandas has no part in it
    parsers = ParserCache.for_project(project.root, RolloutPolicies(project.root), schema_verdicts())
    paths = list(logs)
    size = measure(paths)
    if workers is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        # On two cores the workers never paid (they compete with this process's reading and writing).
        workers = cores if cores > 2 and size >= AUTO_WORKERS_BYTES else 0
    with Store.open(path, display=display, lock_timeout=lock_timeout) as store, _progress(size) as progress:
        report = ingest(
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
    return _finish(project, display, report, reporter, output_format)


def _finish(project: Project, display: str, report: IngestReport, reporter: _BadRecords, output_format: str) -> int:
    reporter.close()
    warnings = unknown_names(project.root, report)  # checked after the store is written: a warning, never a stop
    for warning in warnings:
        click.echo(f"promptops: warning: {one_line(warning)}", err=True)
    for failed in report.failed:
        click.echo(f"promptops: error: {one_line(failed.error)}", err=True)
    code = ExitCode.TOOL_FAILURE if report.failed else ExitCode.FAILED if report.bad_records else ExitCode.OK
    if output_format == "json":
        data = {"store": display, **report.to_dict(), "warnings": warnings, "exit_code": code}
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo(one_line(_summary(display, report) + _spans(report)))
    return code


@contextmanager
def _progress(size: int) -> Iterator[Callable[[int], None] | None]:
    """A progress bar's update function on a terminal; nothing in CI or when stderr is a file."""
    if not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=size, label="ingesting", file=sys.stderr) as bar:
        yield bar.update


def _spans(report: IngestReport) -> str:
    """What an OTLP ingest read besides records: its spans, and how many were no model call."""
    data = report.to_dict()
    if "spans_skipped" not in data:
        return ""
    return f"; {data['spans']:,} spans, {data['spans_skipped']:,} not model calls"


class _BadRecords:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self, bad: BadRecord) -> None:
        self.count += 1
        if self.count <= MAX_REPORTED:
            click.echo(f"promptops: {one_line(bad)}", err=True)

    def close(self) -> None:
        if self.count > MAX_REPORTED:
            more = self.count - MAX_REPORTED
            click.echo(
                f"promptops: ... and {count(more, 'more bad record')} (the first {MAX_REPORTED} are shown)", err=True
            )


def _summary(display: str, report: IngestReport) -> str:
    data: dict[str, Any] = report.to_dict()
    skipped = f", {data['segments_skipped']:,} already ingested" if data["segments_skipped"] else ""
    return (
        f"{display}: {count(data['inserted'], 'response')} stored ({count(data['diagnostics'], 'diagnostic')}), "
        f"{data['duplicates']:,} already stored, {count(data['bad_records'], 'bad record')}; "
        f"{count(data['records'], 'record')} read from {count(data['segments'], 'segment')}{skipped}"
    )
