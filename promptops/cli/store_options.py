"""Options shared by the commands that read or write the diagnostics store (ingest, rates, export, rollout,
report), and the store (a RatesSource) and --now time they resolve to."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from promptops.cli.numbers import FiniteFloat
from promptops.cli.project import Project
from promptops.store import DEFAULT_STORE
from promptops.store.defaults import DEFAULT_LOCK_TIMEOUT
from promptops.store.source import RatesSource, SqlSource

F = TypeVar("F", bound=Callable[..., Any])


def store_option(help_text: str) -> Callable[[F], F]:
    return click.option(
        "--store",
        "store_path",
        type=click.Path(path_type=Path),
        default=None,
        help=f"{help_text} (default: {DEFAULT_STORE} under the project root).",
    )


def lock_timeout_option() -> Callable[[F], F]:
    return click.option(
        "--lock-timeout",
        type=FiniteFloat(min=0, max=86400),  # NaN or a day-long wait is no timeout
        default=DEFAULT_LOCK_TIMEOUT,
        show_default=True,
        metavar="SECONDS",
        help="How long to wait while another process holds the store, before failing (exit 3).",
    )


def store_location(project: Project, store_path: Path | None) -> tuple[Path, str]:
    """The store's path and its repo-relative display form."""
    path = store_path if store_path is not None else project.root / DEFAULT_STORE
    return path, project.relative(path)


@contextmanager
def read_source(
    project: Project, store_path: Path | None, lock_timeout: float, engine: str = "duckdb", master: str | None = None
) -> Iterator[RatesSource]:
    """The store, read-only. A missing store is an error (exit 3), never "no data": a mistyped --store, or a
    CI checkout without the store, must not let a gate, a report or ``rates`` judge nothing as clean."""
    from promptops.cli import collector_paused

    with collector_paused():
        import duckdb  # loads only for commands that read the store

        from promptops.store import Store
        from promptops.store.errors import StoreError, store_error

    path, display = store_location(project, store_path)
    if engine == "spark":  # the lake at --store, queried on Spark (promptops.spark.views)
        from promptops.spark.options import lake_source, require_lake

        with lake_source(require_lake(store_path), display, master) as source:
            yield source
        return
    try:  # a damaged file or a full disk met by any query of the caller: one line, exit 3
        if path.is_dir():
            from promptops.store import open_parquet  # pyarrow and numpy: only for a Parquet export

            with closing(open_parquet(path, display=display)) as con:
                yield SqlSource(con)
        elif not path.exists():
            raise StoreError(missing_store(display, default=store_path is None))
        else:
            with Store.open(path, display=display, read_only=True, lock_timeout=lock_timeout) as store:
                yield store.source
    except duckdb.Error as problem:
        raise store_error(display, problem, "read failed") from None


def missing_store(display: str, *, default: bool) -> str:
    """The one line for a store path where nothing exists."""
    hint = "create it with promptops ingest, or give --store" if default else "check the path"
    return f"{display}: no diagnostics store here ({hint})"


def parse_now(text: str | None, option: str = "--now") -> datetime:
    """The --now option (or another time ``option``): an ISO 8601 time (UTC when no zone is given), or the
    current time. A time that has no UTC equivalent (year 1 with an eastern offset) is refused."""
    if text is None:
        return datetime.now(UTC)
    try:
        moment = datetime.fromisoformat(text)
        moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise click.BadParameter(f"{text[:60]!r} is not an ISO 8601 time", param_hint=option) from None
    return moment
