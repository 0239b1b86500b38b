"""What the walk (``diff``) shares with the comparisons it hands object models and combinators to (``objects``,
``combinators``).

Those comparisons recurse through the walk, so they take it as a parameter typed by ``Walk`` instead of
importing ``diff``, which imports them: the dependency runs one way, diff -> objects/combinators -> walk.
Also here: ``ANY``, the stand-in for an absent subschema (recognized by identity), paths to properties, and
the differences of count bounds, which every keyword family reports the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Protocol

from promptops.compat.difference import Difference, Kind
from promptops.compat.node import Node

ANY = Node(label="(any)")  # stands in for an absent subschema

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class Walk(Protocol):
    """The walk as the comparisons it delegates to see it (``diff.Differ``)."""

    def compare(self, old: Node, new: Node, path: str) -> list[Difference]:
        """The differences between two nodes at ``path``, recursing as deep as they go."""
        ...

    def derived(self, node: Node, key: str, build: Callable[[], Node]) -> Node:
        """A node computed from ``node`` (an effective property schema...), built once per walk."""
        ...


def member(path: str, name: str) -> str:
    if _IDENTIFIER.match(name):
        return f"{path}.{name}"
    return f"{path}[{json.dumps(name)}]"


def widening(kind: Kind, path: str, message: str, shown: tuple[Any, Any] = (None, None)) -> Difference:
    """The new schema accepts more here: backward compatible, forward (even tolerant) not."""
    return Difference(kind, path, True, False, False, message, *shown)


def narrowing(kind: Kind, path: str, message: str, shown: tuple[Any, Any] = (None, None)) -> Difference:
    """The new schema accepts less here: forward compatible, backward not."""
    return Difference(kind, path, False, True, True, message, *shown)


def incompatible(kind: Kind, path: str, message: str, shown: tuple[Any, Any] = (None, None)) -> Difference:
    """The two schemas accept different documents here: compatible neither way."""
    return Difference(kind, path, False, False, False, message, *shown)


def keyword_kind(base: str, verb: str) -> Kind:
    return Kind(f"{base}_{verb}")


def _keyword(base: str) -> str:
    head, *rest = base.split("_")
    return head + "".join(word.capitalize() for word in rest)


def least(base: str, before: int, after: int, path: str) -> list[Difference]:
    """A lower count bound (minLength, minItems, minProperties), where 0 means absent."""
    if before == after:
        return []
    name = _keyword(base)
    if after < before:
        verb = "removed" if after == 0 else "decreased"
        return [widening(keyword_kind(base, verb), path, f"{name} {before} -> {after}", (before, after))]
    verb = "added" if before == 0 else "increased"
    return [narrowing(keyword_kind(base, verb), path, f"{name} {before} -> {after}", (before, after))]


def most(base: str, before: int | None, after: int | None, path: str) -> list[Difference]:
    """An upper count bound (maxLength, maxItems, maxProperties), where None means absent."""
    if before == after:
        return []
    name = _keyword(base)
    if after is None or (before is not None and after > before):
        verb = "removed" if after is None else "increased"
        return [widening(keyword_kind(base, verb), path, f"{name} {before} -> {after}", (before, after))]
    verb = "added" if before is None else "decreased"
    return [narrowing(keyword_kind(base, verb), path, f"{name} {before} -> {after}", (before, after))]
