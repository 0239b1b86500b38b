"""Diagnostic paths: ``schema_version``, ``findings[3].line``, ``meta["odd key"]``."""

from __future__ import annotations

import re

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")


def member(parent: str | None, key: str) -> str:
    """The path of member ``key`` under ``parent`` (None or "" for the top level)."""
    if _IDENTIFIER.match(key):
        return f"{parent}.{key}" if parent else key
    quoted = '["' + key.replace("\\", "\\\\").replace('"', '\\"') + '"]'
    return f"{parent}{quoted}" if parent else quoted


def element(parent: str, index: int) -> str:
    return f"{parent}[{index}]"
