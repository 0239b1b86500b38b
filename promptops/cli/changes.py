"""The changed-files options shared by the commands that reconcile findings with a review target."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TypeVar

import click

from promptops.changes import changed_files_from_git, read_changed_files
from promptops.cli.inputs import InputText

_F = TypeVar("_F", bound=Callable[..., Any])

NO_CHANGED_FILES = "no changed files: pass --changed-file, --changed-files-from or --git-diff"

# ``--repo`` for a command whose only use of a repository is --git-diff.
repo_option = click.option(
    "--repo",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=".",
    show_default=True,
    help="Repository for --git-diff.",
)


def changed_files_options(purpose: str = "") -> Callable[[_F], _F]:
    """``--changed-file``, ``--changed-files-from`` and ``--git-diff`` (read in the command's ``--repo``).

    ``purpose`` ends each help text, e.g. ", for reviewer outputs".
    """

    def decorate(function: _F) -> _F:
        function = click.option(
            "--git-diff", "git_range", metavar="BASE...HEAD", help=f"Changed files from git diff in --repo{purpose}."
        )(function)
        function = click.option(
            "--changed-files-from",
            type=InputText(),
            metavar="FILE",
            help=f"File listing changed files, one per line{purpose}.",
        )(function)
        return click.option(
            "--changed-file",
            "changed",
            multiple=True,
            metavar="PATH",
            help=f"A changed file (repeatable){purpose}.",
        )(function)

    return decorate


def gather_changed_files(
    repo: Path, changed: tuple[str, ...], listing: IO[str] | None, git_range: str | None
) -> list[str] | None:
    """The changed files from every source given, in order; None when no source was given at all."""
    if not changed and listing is None and git_range is None:
        return None
    paths = list(changed)
    if listing is not None:
        paths += read_changed_files(listing.read())
    if git_range is not None:
        paths += changed_files_from_git(repo, git_range)
    return paths
