"""Where the changed files of a review target come from: a list, a file, or a real git diff."""

from __future__ import annotations

import subprocess
from pathlib import Path

from promptops.core.errors import PromptopsError


def read_changed_files(text: str) -> list[str]:
    """One repository path per line; blank lines are ignored, surrounding whitespace is not part of a path."""
    return [line.strip() for line in text.splitlines() if line.strip()]


def changed_files_from_git(repo: Path, revision_range: str) -> list[str]:
    """``git diff --name-only`` for ``revision_range`` (e.g. ``main...HEAD``) in the repository at ``repo``.

    Paths come back repo-relative with "/" separators, exactly as git names them (``-z`` keeps unusual names
    intact instead of quoting them).
    """
    if revision_range.startswith("-"):
        raise PromptopsError(f"--git-diff {revision_range!r}: a revision range cannot start with '-'")
    try:
        completed = subprocess.run(
            ["git", "-C", str(repo), "diff", "--name-only", "-z", revision_range, "--"],
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        raise PromptopsError("--git-diff needs git, which is not installed") from None
    if completed.returncode != 0:
        detail = completed.stderr.decode("utf-8", "replace").strip().splitlines()
        raise PromptopsError(f"git diff {revision_range} failed in {repo}: {detail[0] if detail else 'no output'}")
    names = completed.stdout.decode("utf-8", "surrogateescape").split("\0")
    return [name for name in names if name]
