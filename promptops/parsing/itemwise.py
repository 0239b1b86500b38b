"""The middle path: a typed envelope with the findings left raw, each finding then decoded on its own.

When the whole-document fast path declines, the usual reason is one bad finding among good ones. Decoding the
top level typed (with the findings as raw JSON slices) and then each finding typed on its own keeps the good
findings in C: they arrive at the validator as already-checked Structs, and only the findings that fail their
typed decoding or their scan are handed over as plain JSON values for field-by-field checks. Anything this
reader cannot vouch for exactly (a rejected or tolerantly read version, a repeated key it cannot place, deep
nesting) returns None, and the generic reader in jsontext.py takes the whole document instead.

The work between the versions and the top-level checks (the top-level dict, the per-finding loop, the byte tests
of failing findings and the colon count outside the findings) is one C call when the _place extension is built
(scan.native_itemwise, _itemwise.c); ``_python_read`` is its reference, and runs when the extension is not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from promptops.parsing.fastpath import FastPath
from promptops.parsing.jsontext import Document, first_duplicate_in
from promptops.parsing.scan import native, native_itemwise, strings_clean
from promptops.parsing.typed import DECODE_ERRORS, UNSET, json_depth

_encode = msgspec.json.Encoder().encode
_plain = msgspec.json.decode  # a failing finding's value: valid JSON, the envelope decoded it


def read_itemwise(
    fast: FastPath,
    data: bytes | str,
    max_depth: int,
    request_versions: tuple[str, str] | None,
    whole_clean: bool | None,
) -> Document | None:
    """A Document whose clean findings are typed Structs, or None when the generic reader must decide.

    ``whole_clean`` is the C scanner's verdict on the whole text (None: no scanner, and no itemwise reading).
    """
    typed = fast.typed
    if native is None or whole_clean is None:
        return None  # without the C scanner the generic reader is just as quick
    try:
        envelope = typed.decode_envelope(data)
    except DECODE_ERRORS:
        return None
    if request_versions is None:
        assert typed.versions is not None
        versions = typed.versions(envelope)
    else:
        versions = request_versions
    if not fast.versions_ok(versions):
        return None  # rejections and tolerant reading need the whole document as plain values
    repeats: dict[int, str] = {}
    scan = None if whole_clean else native
    reader = _python_read if native_itemwise is None else native_itemwise
    read = reader(_BOUND, typed.top_fields, envelope, typed.items, typed.decode_item, scan, data, repeats, max_depth)
    if read is None:
        return None
    top, items, outside = read
    # No top-level key (or key of an open member such as meta) was lost to a repeat: the envelope decoder keeps
    # the last of repeated keys, so every member outside the findings must show as one colon, as in the
    # canonical encoding of what was decoded (plus one for the findings member itself).
    if not whole_clean and (outside < 0 or outside != _encode(top).count(b":") + 1):
        return None
    # Only a non-empty open member of the top level can be too deep (the findings were checked above).
    if typed.has_open_objects and any(typed.top_open_values(envelope)) and not typed.shallow(envelope, [], max_depth):
        return None
    top[typed.contract.items] = items
    # A clean scan of the whole text already says no string has edge whitespace (the fast path relies on it).
    top_clean = whole_clean or strings_clean(typed.top_free_strings(envelope))
    return Document(top, item_duplicates=repeats, checked_versions=versions if top_clean else None)


def _python_read(
    bound: tuple[Any, ...],
    fields: list[tuple[str, Callable[[Any], Any]]],
    envelope: Any,
    items_of: Callable[[Any], list[Any]],
    decode: Callable[[Any], Any],
    scan: Callable[[Any], Any] | None,
    data: bytes | str,
    repeats: dict[int, str],
    max_depth: int,
) -> tuple[dict[str, Any], list[Any], int] | None:
    """The envelope's set top-level ``fields`` as a dict; its findings (``items_of``), typed where ``decode``
    takes them, else plain; and ``_outside(data, raws)`` (-1 when ``scan`` is None). None when the generic reader
    must decide.

    ``scan`` is None when the whole text scanned clean, else the scanner each finding must pass before it is
    decoded typed. The reference for scan.native_itemwise, which does this in C with the same calls (``bound`` is
    ``_BOUND``, unused here), and itself only what ``_failing`` and ``_outside`` would compute from the bytes.
    """
    top = {name: value for name, getter in fields if (value := getter(envelope)) is not UNSET}
    raws = items_of(envelope)
    items: list[Any] = []
    append = items.append
    for index, raw in enumerate(raws):
        clean = True if scan is None else scan(raw)
        if clean:
            try:
                append(decode(raw))
                continue
            except DECODE_ERRORS:
                pass
        if not _failing(items, raw, _plain(raw), clean, index, repeats, max_depth):
            return None
    return top, items, -1 if scan is None else _outside(data, raws)


def _failing(
    items: list[Any], raw: Any, value: Any, clean: Any, index: int, repeats: dict[int, str], max_depth: int
) -> bool:
    """Append ``value``, the plain value of a finding that typed decoding (or its scan) refused, noting in
    ``repeats`` the first key it repeats; False when it nests too deeply for this reader."""
    text = bytes(raw)
    if text.count(b"{") + text.count(b"[") + 2 > max_depth and json_depth(value) + 2 > max_depth:
        return False
    # first_duplicate_in's own cheap test, on the bytes: with as many colons as the canonical encoding
    # (and no escaped colon) no member was lost to a repeated key.
    if not clean and (b"\\u003" in text or text.count(b":") != _encode(value).count(b":")):
        repeat = first_duplicate_in(text.decode("utf-8"), value, "")
        if repeat is not None:
            repeats[index] = repeat
    items.append(value)
    return True


def _outside(data: bytes | str, raws: list[Any]) -> int:
    """The colons of the text outside the findings, or -1 when it holds an escaped colon-like sequence."""
    raw_bytes = data if isinstance(data, bytes) else data.encode("utf-8")
    if b"\\u003" in raw_bytes:
        return -1
    return raw_bytes.count(b":") - b"".join(raws).count(b":")  # one count over the findings' joined slices


# What the C loop calls (see _itemwise.c), fixed once.
_BOUND = (_plain, _failing, _encode, _outside, DECODE_ERRORS, UNSET)
