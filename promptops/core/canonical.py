"""Canonical text of JSON values: equal under JSON Schema's equality exactly when their texts are equal.

JSON Schema's equality (``shape.json_equal``) says 1 == 1.0 but true != 1 and "1" != 1, and ignores the order
of object members. Comparing n values pairwise is quadratic; hashing their canonical texts is linear, and
str hashes are randomized per process, so crafted values cannot make them collide (int hashes are not: a
set of numbers would be).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable
from typing import Any

_dumps = json.dumps
_NAN_TEXTS = itertools.count()  # NaN equals nothing, itself included: each gets a text of its own


def canonical(value: Any) -> str:
    """The canonical text of a decoded JSON value."""
    if value is None:
        return "n"
    if value is True:
        return "t"
    if value is False:
        return "f"
    if isinstance(value, str):
        return _dumps(value)
    if isinstance(value, int):
        return "i" + hex(value)  # hex: linear in the digits, and no int-to-str digit limit
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return "i" + hex(int(value))  # 1.0 is the integer 1
        return "d" + repr(value) if value == value else f"nan{next(_NAN_TEXTS)}"
    if isinstance(value, list):
        return "[" + ",".join(map(canonical, value)) + "]"
    if isinstance(value, dict):
        members = sorted((_dumps(key), canonical(item)) for key, item in value.items())
        return "{" + ",".join(f"{key}:{item}" for key, item in members) + "}"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def json_unique(values: Iterable[Any]) -> bool:
    """Whether no two of ``values`` are equal as JSON Schema defines it, in time linear in their size."""
    seen: set[str] = set()
    for value in values:
        text = canonical(value)
        if text in seen:
            return False
        seen.add(text)
    return True
