"""Errors of the diagnostics store; each message is one line naming the store, file or flag at fault."""

from __future__ import annotations

import re

from promptops.core.errors import PromptopsError


class StoreError(PromptopsError):
    """The store cannot be opened, migrated, read or written (the CLI exits 3)."""


class StoreLockedError(StoreError):
    """Another process kept the store locked for longer than the lock timeout."""


_CORRUPT = re.compile(r"Corrupt database file.*?location (\d+)", re.S)
_NO_SPACE = ("No space left on device", "Disk full", "disk is full", "File too large", "file size limit")


def describe(problem: BaseException) -> str:
    """A DuckDB error in the user's terms, one line: a damaged file and a full disk are named as such
    (DuckDB says "Corrupt database file: computed checksum..." or, after a failed write, only "cannot
    rollback")."""
    text = str(problem).strip()
    corrupt = _CORRUPT.search(text)
    if corrupt is not None or "Corrupt database file" in text:
        where = f" (a damaged block at byte {int(corrupt.group(1)):,})" if corrupt else ""
        return f"the store file is damaged{where}: restore it from a backup, or ingest the logs into a new store"
    if any(marker.lower() in text.lower() for marker in _NO_SPACE):
        return "no space left on the device holding the store (or a file size limit was reached)"
    return text.splitlines()[0] if text else type(problem).__name__


def store_error(display: str, problem: BaseException, doing: str = "") -> StoreError:
    """``problem`` (a DuckDB error) as a StoreError naming the store and, when given, what was being done."""
    return StoreError(f"{display}: {doing + ': ' if doing else ''}{describe(problem)}")
