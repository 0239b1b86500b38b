"""Options shared by the diagnostics store commands (ingest, rates, export)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from promptops.cli.project import Project
from promptops.store import DEFAULT_STORE
from promptops.store.store import DEFAULT_LOCK_TIMEOUT

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
        type=click.FloatRange(min=0),
        default=DEFAULT_LOCK_TIMEOUT,
        show_default=True,
        metavar="SECONDS",
        help="How long to wait while another process holds the store, before failing (exit 3).",
    )


def store_location(project: Project, store_path: Path | None) -> tuple[Path, str]:
    """The store's path and its repo-relative display form."""
    path = store_path if store_path is not None else project.root / DEFAULT_STORE
    return path, project.relative(path)
