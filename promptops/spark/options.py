"""The CLI's engine options (--engine, --spark-master) and the Spark branches of the store commands.

The store commands (ingest, rates, rollout gate/status/promote, report) add ``engine_options()`` and call
``lake_source`` (the store's interface over the lake) or ``run_ingest`` when ``--engine spark`` is given;
everything Spark loads from here on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click

from promptops.core import DISTRIBUTION
from promptops.store.source import SqlSource

F = TypeVar("F", bound=Callable[..., Any])

ENGINES = ("duckdb", "spark")


def engine_options() -> Callable[[F], F]:
    def decorate(function: F) -> F:
        function = click.option(
            "--spark-master",
            metavar="URL",
            default=None,
            help="Spark master for --engine spark (default: the running session's, or local[*]).",
        )(function)
        return click.option(
            "--engine",
            type=click.Choice(ENGINES),
            default="duckdb",
            show_default=True,
            help="Where the store is read or written: DuckDB in this process, or Spark on a Parquet lake "
            f"directory (--store LAKE_DIR; needs {DISTRIBUTION}[spark]).",
        )(function)

    return decorate


def lake_uri(path: Path | str) -> str:
    text = str(path)
    return text if "://" in text else Path(text).resolve().as_posix()


@contextmanager
def lake_source(path: Path, display: str, master: str | None) -> Iterator[SqlSource]:
    """The store's questions over the lake at ``path``, asked on Spark (see ``promptops.spark.views``)."""
    from promptops.spark.session import job_errors, spark_session

    spark = spark_session(master)  # first: without the spark extra, the one-line hint
    from promptops.spark.views import open_lake

    with job_errors(f"reading {display}"):
        connection = open_lake(spark, lake_uri(path), display=display)
        try:
            yield SqlSource(connection)
        finally:
            connection.close()


def require_lake(store_path: Path | None) -> Path:
    if store_path is None:
        raise click.UsageError("--engine spark needs --store LAKE_DIR (a Parquet lake directory)")
    return store_path


def run_ingest(
    root: Path,
    logs: list[str],
    store_path: Path | None,
    master: str | None,
    relative: Callable[[Path], str],
    on_bad: Callable[[Any], None],
) -> Any:
    """The Spark ingest of ``logs`` into the lake at ``lake``: an IngestReport."""
    from promptops.spark.ingest import ingest_to_lake
    from promptops.spark.session import job_errors, require_pyspark, spark_session
    from promptops.spark.setup import ParserSetup

    lake = require_lake(store_path)
    require_pyspark()
    setup = ParserSetup.from_project(root)  # broken contracts fail here, before Spark starts
    spark = spark_session(master)
    with job_errors("ingest"):
        return ingest_to_lake(spark, logs, lake_uri(lake), setup, relative=relative, on_bad=on_bad)
