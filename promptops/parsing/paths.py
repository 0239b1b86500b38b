"""Diagnostic paths: ``schema_version``, ``findings[3].line``, ``meta["odd key"]``.

Paths are only built when a diagnostic needs one: checkers pass the parent path and the key along and call
``at`` at the moment they report something.
"""

from __future__ import annotations

import functools
import re

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")


@functools.lru_cache(maxsize=4096)
def _segment(key: str) -> str:
    if _IDENTIFIER.match(key):
        return key
    return '["' + key.replace("\\", "\\\\").replace('"', '\\"') + '"]'


def member(parent: str | None, key: str) -> str:
    """The path of member ``key`` under ``parent`` (None or "" for the top level)."""
    segment = _segment(key)
    if segment[0] == "[":
        return f"{parent}{segment}" if parent else segment
    return f"{parent}.{segment}" if parent else segment


def element(parent: str, index: int) -> str:
    return f"{parent}[{index}]"


def at(parent: str | None, key: str | int) -> str:
    """``member`` for a string key, ``element`` for an index."""
    return element(parent or "", key) if isinstance(key, int) else member(parent, key)
