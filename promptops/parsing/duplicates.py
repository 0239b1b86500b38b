"""Repeated keys in strict JSON text, located exactly: the diagnostic path's one place for them. Decoders keep
the last value of a repeated key, so the reader asks here where a repeat is, for the validator to reject or
drop (never last-wins)."""

from __future__ import annotations

import json
from typing import Any

import msgspec

from promptops.parsing import paths


class _Repeated(dict[str, Any]):
    """A decoded object that had repeated keys (the stdlib decoder keeps the last value, like msgspec)."""

    repeated: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    marked = _Repeated(obj)
    marked.repeated = [k for k, _ in pairs if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
    return marked


def may_have_duplicates(span: str | bytes, value: Any) -> bool:
    """Cheap test, shared by both paths: each member of a JSON text contributes one ':' outside strings.

    The canonical encoding of the decoded value (plain or msgspec Structs) has the same colons inside strings, so
    the counts differ exactly when members were lost to repeated keys (unless a colon was written as an escape,
    which answers "maybe").
    """
    if isinstance(span, str):
        return "\\u003" in span or span.count(":") != _encode(value).count(b":")
    return (b"\\" in span and b"\\u003" in span) or span.count(b":") != _encode(value).count(b":")


_encode = msgspec.json.Encoder().encode


def _shadow(span: str) -> Any:
    """Decode ``span`` (known to be strict JSON) keeping track of repeated keys; numbers are irrelevant."""
    return json.loads(span, object_pairs_hook=_pairs, parse_int=_zero, parse_float=_zero, parse_constant=_zero)


def _zero(_: str) -> int:
    return 0


def first_duplicate_in(span: str, value: Any, base: str) -> str | None:
    """The path (from ``base``) of the first repeated key in ``span``, the strict JSON text of ``value``."""
    if not may_have_duplicates(span, value):
        return None
    return _first_repeat(_shadow(span), base)


def _first_repeat(node: Any, base: str) -> str | None:
    stack: list[tuple[Any, str]] = [(node, base)]
    while stack:
        current, where = stack.pop()
        if isinstance(current, _Repeated):
            return paths.member(where, current.repeated[0])
        if isinstance(current, dict):
            stack.extend((v, paths.member(where, k)) for k, v in reversed(list(current.items())))
        elif isinstance(current, list):
            stack.extend((v, paths.element(where, i)) for i, v in reversed(list(enumerate(current))))
    return None


def duplicates_in(value: Any, span: str, items_field: str) -> tuple[list[str], dict[str, str], dict[int, str]] | None:
    """For a top-level object ``value`` decoded from ``span``: its repeated keys, each member's first nested
    repeat (by key) and each finding's (by index); None when nothing is repeated (or it is no object)."""
    if not isinstance(value, dict) or not may_have_duplicates(span, value):
        return None
    shadow = _shadow(span)
    top = list(shadow.repeated) if isinstance(shadow, _Repeated) else []
    members: dict[str, str] = {}
    items: dict[int, str] = {}
    for key, member in shadow.items():
        if key == items_field and isinstance(member, list):
            for index, item in enumerate(member):
                repeat = _first_repeat(item, "")
                if repeat is not None:
                    items[index] = repeat
        else:
            repeat = _first_repeat(member, paths.member(None, key))
            if repeat is not None:
                members[key] = repeat
    return top, members, items
