"""Defaults the store commands' ``--help`` shows, in a module of their own so that showing them loads no DuckDB
or Arrow (``store.py`` and ``ingest.py``, which use them, need both)."""

from __future__ import annotations

DEFAULT_LOCK_TIMEOUT = 30.0
DEFAULT_INGEST_BATCH = 125_000  # at least one DuckDB row group (122,880), written straight to the file, not the WAL
