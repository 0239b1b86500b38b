"""Errors of the diagnostics store; each message is one line naming the store, file or flag at fault."""

from __future__ import annotations

from promptops.errors import PromptopsError


class StoreError(PromptopsError):
    """The store cannot be opened, migrated, read or written (the CLI exits 3)."""


class StoreLockedError(StoreError):
    """Another process kept the store locked for longer than the lock timeout."""
