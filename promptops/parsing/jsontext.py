"""From raw model text to one JSON value, strictly (DESIGN.md §3.1-3.4 and §3.10).

``read_document`` is the parser's slow path for text: it is only reached when the typed fast path could not
take the response as is. In order it
1. ignores surrounding whitespace and a leading BOM, and parses the whole text as RFC 8259 JSON;
2. failing that, removes ``<think>`` blocks and looks for balanced objects among fences and prose: exactly one
   that parses strictly is extracted, two or more reject the response (``multiple_json_values``);
3. failing that, if the text ends inside an object, salvages the members and findings that were complete;
4. never repairs tokens (trailing commas, quotes, comments, NaN...): that is ``invalid_json``.
Duplicate keys are located exactly, so the validator can reject or drop instead of letting the last one win.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from promptops.parsing import paths
from promptops.parsing.diagnostics import Code
from promptops.parsing.duplicates import duplicates_in
from promptops.parsing.duplicates import first_duplicate_in as first_duplicate_in  # itemwise reads it here
from promptops.parsing.scan import native, native_span_end
from promptops.parsing.thinking import drop_thinking
from promptops.parsing.typed import DECODE_ERRORS
from promptops.parsing.walks import _CUT, SHALLOW, _string_end

# The walks' references and C twins, where the parser and the tests read them (explicit re-exports).
from promptops.parsing.walks import _deeper_than as _deeper_than
from promptops.parsing.walks import _span as _span
from promptops.parsing.walks import _span_end as _span_end
from promptops.parsing.walks import brackets_at_most as brackets_at_most
from promptops.parsing.walks import native_brackets as native_brackets
from promptops.parsing.walks import native_span as native_span

_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_SCALAR_PREFIX = re.compile(
    r"-?[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]*)?\Z|t(?:r(?:ue?)?)?\Z|f(?:a(?:l(?:se?)?)?)?\Z|n(?:u(?:ll?)?)?\Z"
)
_JSON_OBJECT_START = re.compile(r'\{[ \t\n\r]*(?:"|\}|\Z)')
_JSON_WS = " \t\n\r"
_WS_RUN = re.compile(r"[ \t\n\r]*")
_SpanEnd = Callable[[str, int], int]
# Given a cut response's salvaged top level: the typed decoder of one finding, when its declared versions are
# read exactly by a typed reader (see _salvage); None otherwise.
TypedItems = Callable[[dict[str, Any]], "Callable[[str], Any] | None"]
_BYTES = (bytes, bytearray, memoryview)
_NOT_A_VALUE = -2  # positions: no JSON value starts here
_BAD: Any = object()  # values: not strict JSON
UNREAD: Any = object()  # Document.value of an extracted span not decoded yet (see read_span)
_DEEP: Any = object()
_UNDECODED: Any = object()  # values: strict JSON, not decoded yet
TRAILING = "JSON is malformed: trailing characters"  # msgspec's complaint about a value followed by more


@dataclass(frozen=True)
class Rejection:
    code: Code
    message: str


@dataclass
class Truncation:
    """Where a cut-off response ended and what was lost."""

    cut_member: str | None = None  # top-level member whose value was cut (treated as absent)
    cut_item: int | None = None  # index of the finding that was cut off mid-way
    items_complete: bool = True  # False when the findings array itself never closed


@dataclass
class Document:
    value: Any
    extracted: bool = False
    truncation: Truncation | None = None
    top_duplicates: list[str] = field(default_factory=list)  # keys repeated in the top-level object
    member_duplicates: dict[str, str] = field(default_factory=dict)  # top-level key -> path of a nested repeat
    item_duplicates: dict[int, str] = field(default_factory=dict)  # finding index -> path of the repeat
    span: str | None = None  # the extracted object's text, when it came from a wrapper
    span_error: str | None = None  # with value UNREAD: the strict decoder's complaint about the whole text
    # Set by the itemwise reader when the typed envelope already proved the top level valid as written: the
    # declared (schema, prompt) versions. Findings that are not typed Structs then failed typed decoding.
    checked_versions: tuple[str, str] | None = None


def decode_text(raw: str | bytes) -> str | Rejection:
    """The text of ``raw`` with surrounding whitespace and a leading BOM removed."""
    if isinstance(raw, _BYTES):  # a tuple: a union would be built anew on every call
        try:
            text = bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            return Rejection(Code.INVALID_JSON, f"response is not valid UTF-8 (byte {exc.start})")
    else:
        text = raw
    text = text.strip()
    if text.startswith("\ufeff"):
        text = text[1:].strip()
    return text


def read_document(
    text: str,
    items_field: str,
    max_depth: int,
    *,
    speedups: bool = True,
    typed_items: TypedItems | None = None,
    not_one_value: bool = False,
) -> Document | Rejection:
    """Read ``text`` (from decode_text) into one JSON value, or say why it cannot be read.

    ``speedups=False`` finds span ends with the pure-Python scanner instead of the C one (same results). An
    object extracted from a wrapper may come back UNREAD: ``read_span`` decodes it (or rejects the response).
    ``not_one_value``: a typed decoder read the raw text as far as its end inside a value, or to more after one.
    """
    first = None
    if text.startswith("{") and (not_one_value or not text.endswith("}")):  # maybe an object cut or followed
        first = native_span(text, 0) if speedups and native_span is not None else _span(text, 0)
    # Nesting this shallow cannot exhaust the decoder's recursion; then the strict decoder need not read the
    # whole text only to complain (its complaint is asked for only if it is needed):
    if first is not None and first[1] <= SHALLOW:
        complaint = functools.partial(_complaint, text)
        if first[0] < 0:  # the text ends inside the object it opens, so it is no JSON value
            return _extract(text, items_field, max_depth, speedups, complaint, typed_items, first, False)
        if not_one_value and first[0] < len(text):
            # The typed decoder read that object whole (strict JSON, which the generic decoder takes as well)
            # and found more after it: the decoder would complain of trailing characters.
            return _extract(text, items_field, max_depth, speedups, complaint, typed_items, first, True)
    try:
        value = msgspec.json.decode(text)
    except RecursionError:
        return _too_deep(max_depth)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        message = str(exc)
        return _extract(text, items_field, max_depth, speedups, lambda: message, typed_items, first, False)
    shallow = speedups and native_brackets is not None and native_brackets(text, max_depth)
    if not shallow and _deeper_than(text, 0, len(text), max_depth):
        return _too_deep(max_depth)
    return _with_duplicates(Document(value), text, items_field)


def _complaint(text: str) -> str:
    """The strict decoder's complaint about ``text``, one known not to be JSON nor too deep for it."""
    try:
        msgspec.json.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return str(exc)
    raise AssertionError("a text cut off inside its object decoded")  # pragma: no cover


def _extract(
    original: str,
    items_field: str,
    max_depth: int,
    speedups: bool,
    error: Callable[[], str],
    typed_items: TypedItems | None,
    first: tuple[int, int] | None,
    trailing: bool,
) -> Document | Rejection:
    """``error()`` is the strict decoder's complaint about the whole of ``original``; ``first``, when not None,
    the walk of the object ``original`` opens at 0; ``trailing``: that complaint is known to be of trailing
    characters."""
    walk, ends = (native_span, native_span_end) if speedups else (_span, _span_end)
    if walk is None or ends is None:
        walk, ends = _span, _span_end
    text = drop_thinking(original)
    wrapper_removed = text != original
    spans: list[tuple[int, int, int]] = []  # start, end, deepest nesting (measured by the walk that found the end)
    cut_start: int | None = None
    cut_depth = 0
    pos = 0
    while (start := text.find("{", pos)) >= 0:
        if not _JSON_OBJECT_START.match(text, start):
            pos = start + 1  # prose such as "{x}" or "use {" : look further
            continue
        end, depth = first if start == 0 and first is not None and text is original else walk(text, start)
        if end < 0:
            cut_start, cut_depth = start, depth
            break
        spans.append((start, end, depth))
        pos = end  # a broken object is not a candidate, and neither is anything inside it
    whole = (0, len(text)) if text is original else None  # that span was decoded already: it is no candidate
    if len(spans) == 1 and cut_start is None and spans[0][:2] != whole:
        start, end, depth = spans[0]
        if depth <= max_depth:
            # The one candidate: whether it is strict JSON is asked when it is read (read_span), after the
            # typed readers had a go at it (they only take strict JSON).
            return Document(UNREAD, extracted=True, span=text[start:end], span_error=error())
    # A whole text that is one object followed by more is strict JSON up to the end of that object: its first
    # span is a candidate, decoded only if it turns out to be the only one.
    leading = text is original and bool(spans) and spans[0][0] == 0 and (trailing or error().startswith(TRAILING))
    complete: list[tuple[int, int, int, Any]] = []
    for start, end, depth in spans:
        value = _BAD if (start, end) == whole else _UNDECODED if leading and start == 0 else _decode(text[start:end])
        if value is _DEEP:
            return _too_deep(max_depth)
        if value is not _BAD:
            complete.append((start, end, depth, value))
    if len(complete) == 1 and complete[0][3] is _UNDECODED:
        start, end, depth, _ = complete[0]
        complete[0] = (start, end, depth, _decode(text[start:end]))
    if len(complete) > 1 or (complete and cut_start is not None):
        starts = ", ".join(str(c[0]) for c in complete) + (f", {cut_start} (cut off)" if cut_start is not None else "")
        return Rejection(Code.MULTIPLE_JSON_VALUES, f"response holds several JSON objects (at characters {starts})")
    if complete:
        start, end, depth, value = complete[0]
        if depth > max_depth:
            return _too_deep(max_depth)
        # Repeated keys are looked for only if the typed readers decline the span (see with_duplicates).
        return Document(value, extracted=True, span=text[start:end])
    if cut_start is not None:
        extracted = wrapper_removed or bool(text[:cut_start].strip())
        if cut_depth > max_depth:
            return _too_deep(max_depth)
        return _salvage(text, cut_start, items_field, extracted, ends, typed_items)
    return Rejection(Code.INVALID_JSON, f"response is not valid JSON: {error()}")


def _salvage(
    text: str, start: int, items_field: str, extracted: bool, ends: _SpanEnd, typed_items: TypedItems | None
) -> Document | Rejection:
    """Keep what was complete in an object the text ends inside (DESIGN.md §3.3), one no deeper than allowed.

    The complete findings are decoded once the top level is read: with ``typed_items``' decoder when the top
    level declares versions a typed reader takes exactly (clean findings then reach the validator as typed
    Structs, as from the itemwise reader), else as plain values. Either way the first syntax error in the text
    rejects the response.
    """
    members: dict[str, Any] = {}
    document = Document(members, extracted=extracted, truncation=Truncation())
    pending: list[tuple[list[Any], int, int]] = []  # each complete finding: its array, start and end
    error = _salvage_members(text, start + 1, items_field, document, pending, ends)
    decode_item = None
    if error is None and pending and typed_items is not None and native is not None:
        decode_item = typed_items(members)
    for items, pos, end in pending:
        span = text[pos:end]
        value = _UNDECODED
        if decode_item is not None and native is not None and native(span):  # no repeated key, no padded string
            value = _typed(decode_item, span)
        if value is _UNDECODED:
            value = _decode(span)
            if value is _BAD or value is _DEEP:
                return _syntax_error(text, pos)  # before any error further on
            duplicate = first_duplicate_in(span, value, "")
            if duplicate is not None:
                document.item_duplicates[len(items)] = duplicate
        items.append(value)
    return document if error is None else _syntax_error(text, error)


def _typed(decode_item: Callable[[str], Any], span: str) -> Any:
    try:
        return decode_item(span)
    except DECODE_ERRORS:
        return _UNDECODED


def _salvage_members(
    text: str,
    pos: int,
    items_field: str,
    document: Document,
    pending: list[tuple[list[Any], int, int]],
    ends: _SpanEnd,
) -> int | None:
    """Read the members of ``document``'s object from ``pos``; None, or where the first syntax error is."""
    end_of_text = len(text)
    members = document.value
    truncation = document.truncation
    assert truncation is not None
    while True:
        pos = _skip_ws(text, pos)
        if pos >= end_of_text:
            break
        if text[pos] != '"':
            return pos
        key_end = _string_end(text, pos + 1)
        if key_end < 0:
            break
        key = _decode(text[pos:key_end])
        if not isinstance(key, str):
            return pos
        pos = _skip_ws(text, key_end)
        if pos >= end_of_text:
            break
        if text[pos] != ":":
            return pos
        pos = _skip_ws(text, pos + 1)
        if pos >= end_of_text:
            truncation.cut_member = key
            break
        if key in members:
            document.top_duplicates.append(key)
        if key == items_field and text[pos] == "[":
            items: list[Any] = []
            members[key] = items
            pos = _salvage_items(text, pos + 1, items, document, pending, ends)
            if pos < 0:
                return -pos
            if not truncation.items_complete:
                break
        else:
            value_end = _value_end(text, pos, ends)
            if value_end == _CUT:
                truncation.cut_member = key
                members.pop(key, None)
                break
            value = _decode(text[pos:value_end]) if value_end > 0 else _BAD
            if value is _BAD or value is _DEEP:
                return pos
            members[key] = value
            duplicate = first_duplicate_in(text[pos:value_end], value, paths.member(None, key))
            if duplicate is not None:
                document.member_duplicates[key] = duplicate
            pos = value_end
        pos = _skip_ws(text, pos)
        if pos >= end_of_text:
            break
        if text[pos] != ",":
            return pos
        pos += 1
    return None


def _salvage_items(
    text: str,
    pos: int,
    items: list[Any],
    document: Document,
    pending: list[tuple[list[Any], int, int]],
    ends: _SpanEnd,
) -> int:
    """Note the complete findings of the array ``items`` (filled in by _salvage) in ``pending``; return the
    position after the array, or -position on error."""
    truncation = document.truncation
    assert truncation is not None
    end_of_text = len(text)
    count = 0
    while True:
        pos = _skip_ws(text, pos)
        if pos >= end_of_text:
            truncation.items_complete = False
            return pos
        if text[pos] == "]" and not count:
            return pos + 1
        value_end = _value_end(text, pos, ends)
        if value_end == _CUT:
            truncation.items_complete = False
            truncation.cut_item = count
            return end_of_text
        if value_end < 0:
            return -pos
        pending.append((items, pos, value_end))
        count += 1
        pos = _skip_ws(text, value_end)
        if pos >= end_of_text:
            truncation.items_complete = False
            return pos
        if text[pos] == "]":
            return pos + 1
        if text[pos] != ",":
            return -pos
        pos += 1


def _decode(span: str) -> Any:
    """The strict RFC 8259 value of ``span``, or the _BAD / _DEEP sentinels."""
    try:
        return msgspec.json.decode(span)
    except RecursionError:
        return _DEEP
    except (msgspec.DecodeError, msgspec.ValidationError):
        return _BAD


def _too_deep(max_depth: int) -> Rejection:
    return Rejection(Code.TOO_DEEP, f"response nests deeper than {max_depth} levels")


def _syntax_error(text: str, pos: int) -> Rejection:
    return Rejection(
        Code.INVALID_JSON, f"response is not valid JSON: unexpected {text[pos : pos + 1]!r} at character {pos}"
    )


def _skip_ws(text: str, pos: int) -> int:
    if pos < len(text) and text[pos] in _JSON_WS:
        # a run, such as a pretty-printed line's indentation: one regex match beats a loop per character
        run = _WS_RUN.match(text, pos)
        return run.end() if run is not None else pos
    return pos


def _value_end(text: str, pos: int, ends: _SpanEnd) -> int:
    """Index after the value starting at ``pos``; _CUT if the text ends inside it, else _NOT_A_VALUE."""
    char = text[pos]
    if char in "{[":
        return ends(text, pos)
    if char == '"':
        return _string_end(text, pos + 1)
    match = _SCALAR.match(text, pos)
    if match is None or match.end() == len(text):
        # A number or literal running into the end of the text may be cut short ("4" of "42").
        return _CUT if _SCALAR_PREFIX.match(text, pos) else _NOT_A_VALUE
    return match.end()


def read_span(document: Document, max_depth: int) -> Document | Rejection:
    """The Document of an extracted span, decoded now if ``_extract`` left it UNREAD (or why it cannot be)."""
    if document.value is not UNREAD or document.span is None:
        return document
    value = _decode(document.span)
    if value is _DEEP:
        return _too_deep(max_depth)
    if value is _BAD:
        return Rejection(Code.INVALID_JSON, f"response is not valid JSON: {document.span_error}")
    return Document(value, extracted=True, span=document.span)


def with_duplicates(document: Document, items_field: str) -> Document:
    """Locate repeated keys in an extracted document (deferred so typed readers can take clean spans first)."""
    if document.span is None:
        return document
    return _with_duplicates(document, document.span, items_field)


def _with_duplicates(document: Document, span: str, items_field: str) -> Document:
    repeats = duplicates_in(document.value, span, items_field)
    if repeats is not None:
        top, members, items = repeats
        document.top_duplicates.extend(top)
        document.member_duplicates.update(members)
        document.item_duplicates.update(items)
    return document
