"""``promptops lake compact``: rewrite a Spark lake's closed partitions into a few large sorted files.

Exit codes: 0 compacted (or nothing to do); 3 the lake is missing or busy (another compaction holds it), a flag
is invalid, or the Spark job failed (nothing read changes: the lake reads as before).
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import click

from promptops.cli.project import Project, echo_lines, format_option, pass_project
from promptops.core.errors import PromptopsError
from promptops.core.outcomes import ExitCode
from promptops.core.wording import count

_UNITS = {"": 1, "B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "KIB": 1024, "MIB": 1024**2, "GIB": 1024**3}
_SIZES = (1000**2, 4 * 1024**3)  # what --target-size accepts: 1 MB to 4 GiB


@click.group("lake")
def lake_group() -> None:
    """Maintain a Parquet lake written by `promptops ingest --engine spark` (docs/spark.md)."""


@lake_group.command("compact")
@click.option("--store", "store_path", required=True, metavar="LAKE", help="The lake: a directory or s3a:// URL.")
@click.option("--target-size", default="512MB", show_default=True, metavar="SIZE",
              help="Size each compacted file aims at (1MB to 4GiB; units B, KB, MB, GB, KiB, MiB, GiB).")  # fmt: skip
@click.option("--before", "before_text", metavar="DATE",
              help="Compact partitions of days before DATE (YYYY-MM-DD; default: today, UTC).")  # fmt: skip
@click.option("--spark-master", metavar="URL", default=None, help="Spark master (default: local[*]).")
@format_option()
@pass_project
def compact_command(
    project: Project,
    store_path: str,
    target_size: str,
    before_text: str | None,
    spark_master: str | None,
    output_format: str,
) -> int:
    """Compact the lake's closed partitions: each becomes ceil(size / SIZE) files sorted by rollout and time,
    committed by one marker. Idempotent; a crash at any point leaves a lake that reads as before.
    Exit codes: 0 done; 3 tool failure."""
    target = _size(target_size)
    before = _date(before_text) if before_text else datetime.now(UTC).date()
    from promptops.spark.compact import compact
    from promptops.spark.options import lake_uri
    from promptops.spark.session import job_errors, spark_session
    from promptops.store import lake_files

    uri = lake_uri(store_path)
    display = store_path if "://" in store_path else project.relative(Path(store_path))
    fs, base = lake_files.filesystem(uri)
    if not lake_files.is_lake(fs, base):
        raise PromptopsError(f"{display}: not a promptops lake (no _segments/ directory)")
    spark = spark_session(spark_master)
    with job_errors(f"compacting {display}"):
        report = compact(spark, uri, before=before, target_bytes=target)
    if output_format == "json":
        click.echo(json.dumps({"lake": display, "before": before.isoformat(), **report.to_dict()}))
        return ExitCode.OK
    replaced = sum(item.replaced for item in report.compacted)
    written = sum(item.files for item in report.compacted)
    summary = (
        f"{count(len(report.compacted), 'partition')} compacted ({count(replaced, 'file')} into {written})"
        if report.compacted
        else "nothing to compact"
    )
    echo_lines(f"{display}: {summary}; {count(report.removed, 'leftover file')} removed")
    return ExitCode.OK


def _size(text: str) -> int:
    number = text.strip().upper().rstrip("S")
    digits = number.rstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    unit = number[len(digits) :]
    try:
        value = int(float(digits) * _UNITS[unit])
    except (KeyError, ValueError):
        message = f"{text!r}: expected a size such as 512MB or 1GiB"
        raise click.BadParameter(message, param_hint="--target-size") from None
    if not _SIZES[0] <= value <= _SIZES[1]:
        raise click.BadParameter(f"{text!r}: expected a size from 1MB to 4GiB", param_hint="--target-size")
    return value


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected a date YYYY-MM-DD", param_hint="--before") from None
