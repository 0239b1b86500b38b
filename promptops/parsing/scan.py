"""The fast path's gate for what typed decoding cannot see: strings with whitespace at their edges, and
objects that repeat a key.

Two implementations answer the same question. ``native`` is the optional C speedup (``_scan.c``): one pass
over the raw text. ``python_clean`` is the reference, used when the extension is not built: it strips every
decoded string, and compares the colons of the raw text with those of the canonical re-encoding (each member
of a JSON text contributes exactly one colon outside strings, so members lost to a repeated key show up as
missing colons). Both are conservative: False only sends the response down the diagnostic path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import msgspec

native: Callable[[object], bool] | None
native_span_end: Callable[[str, int], int] | None
native_placed: Callable[..., int] | None  # the references are TypedShape.placed and TypedShape.marks
native_marks: Callable[..., list[Any]] | None
try:
    from promptops.parsing._scan import clean as native
except ImportError:  # no compiler at install time: the reference implementations do the same job
    native = None
try:
    from promptops.parsing._span import span_end as native_span_end
except ImportError:
    native_span_end = None
native_members: Callable[[bytes | str], int] | None
native_decoded_members: Callable[..., int] | None  # the reference is TypedShape.members
native_checked: Callable[..., int] | None  # decoded_members and placed in one call
native_outcome: Callable[..., Any] | None  # the reference is ParseOutcome.clean (with the class first)
native_accept: Callable[..., Any] | None  # FastPath.parse's accepted route in one call (FastPath.accept_reference)
native_itemwise: Callable[..., tuple[dict[str, Any], list[Any], int] | None] | None  # itemwise._python_read
try:
    from promptops.parsing._place import accept as native_accept
    from promptops.parsing._place import checked as native_checked
    from promptops.parsing._place import clean_outcome as native_outcome
    from promptops.parsing._place import decoded_members as native_decoded_members
    from promptops.parsing._place import itemwise as native_itemwise
    from promptops.parsing._place import marks as native_marks
    from promptops.parsing._place import placed as native_placed
except ImportError:
    native_placed = native_marks = native_decoded_members = native_checked = native_outcome = native_accept = None
    native_itemwise = None
try:
    from promptops.parsing._scan import members as native_members
except ImportError:
    native_members = None
# The fast path's gate when both halves are built: the colons outside strings of the text (-1 when a string has
# whitespace at an edge), compared after decoding with the members decoded (a repeated key loses one).
native_count = native_members if native_decoded_members is not None else None
_encode = msgspec.json.Encoder().encode
_strip = str.strip


def strings_clean(strings: Iterable[Any]) -> bool:
    """No string in ``strings`` has surrounding whitespace (UNSET, None and "" are skipped)."""
    present = tuple(filter(None, strings))
    return tuple(map(_strip, present)) == present  # strip returns the same object when nothing changes


def python_clean(data: bytes | str, decoded: Any, strings: Iterable[Any]) -> bool:
    """Reference gate: ``strings`` are the decoded strings the schema types as free text."""
    if not strings_clean(strings):
        return False
    if isinstance(data, bytes):
        colons, escaped = data.count(b":"), b"\\u003" in data
    else:
        colons, escaped = data.count(":"), "\\u003" in data
    return not escaped and colons == _encode(decoded).count(b":")
