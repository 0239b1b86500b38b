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

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from promptops.parsing import paths
from promptops.parsing.diagnostics import Code
from promptops.parsing.scan import native, native_span_end
from promptops.parsing.thinking import drop_thinking

_Span = Callable[[str, int], tuple[int, int]]
native_span: _Span | None
try:
    from promptops.parsing._span import span as native_span
except ImportError:
    native_span = None

_STRUCTURAL = re.compile(r'["{}\[\]]')
_STRING_STOP = re.compile(r'["\\]')
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_SCALAR_PREFIX = re.compile(
    r"-?[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]*)?\Z|t(?:r(?:ue?)?)?\Z|f(?:a(?:l(?:se?)?)?)?\Z|n(?:u(?:ll?)?)?\Z"
)
_JSON_OBJECT_START = re.compile(r'\{[ \t\n\r]*(?:"|\}|\Z)')
_JSON_WS = " \t\n\r"
_WS_RUN = re.compile(r"[ \t\n\r]*")
_SpanEnd = Callable[[str, int], int]
_BYTES = (bytes, bytearray, memoryview)
_CUT = -1  # positions: the text ends inside the value
_NOT_A_VALUE = -2  # positions: no JSON value starts here
_BAD: Any = object()  # values: not strict JSON
UNREAD: Any = object()  # Document.value of an extracted span not decoded yet (see read_span)
_DEEP: Any = object()
_UNDECODED: Any = object()  # values: strict JSON, not decoded yet
_TRAILING = "JSON is malformed: trailing characters"  # msgspec's complaint about a value followed by more


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


def read_document(text: str, items_field: str, max_depth: int, *, speedups: bool = True) -> Document | Rejection:
    """Read ``text`` (from decode_text) into one JSON value, or say why it cannot be read.

    ``speedups=False`` finds span ends with the pure-Python scanner instead of the C one (same results). An
    object extracted from a wrapper may come back UNREAD: ``read_span`` decodes it (or rejects the response).
    """
    try:
        value = msgspec.json.decode(text)
    except RecursionError:
        return _too_deep(max_depth)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return _extract(text, items_field, max_depth, speedups, str(exc))
    if _deeper_than(text, 0, len(text), max_depth):
        return _too_deep(max_depth)
    return _with_duplicates(Document(value), text, items_field)


def _extract(original: str, items_field: str, max_depth: int, speedups: bool, error: str) -> Document | Rejection:
    """``error`` is the strict decoder's complaint about the whole of ``original``."""
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
        end, depth = walk(text, start)
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
            return Document(UNREAD, extracted=True, span=text[start:end], span_error=error)
    # A whole text that is one object followed by more is strict JSON up to the end of that object: its first
    # span is a candidate, decoded only if it turns out to be the only one.
    leading = text is original and error.startswith(_TRAILING) and spans and spans[0][0] == 0
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
        starts = ", ".join(str(c[0]) for c in complete) + (
            f", {cut_start} (cut off)" if cut_start is not None else ""
        )
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
        return _salvage(text, cut_start, items_field, extracted, ends)
    return Rejection(Code.INVALID_JSON, f"response is not valid JSON: {error}")


def _salvage(text: str, start: int, items_field: str, extracted: bool, ends: _SpanEnd) -> Document | Rejection:
    """Keep what was complete in an object the text ends inside (DESIGN.md §3.3), one no deeper than allowed."""
    end_of_text = len(text)
    members: dict[str, Any] = {}
    document = Document(members, extracted=extracted, truncation=Truncation())
    truncation = document.truncation
    assert truncation is not None
    pos = start + 1
    while True:
        pos = _skip_ws(text, pos)
        if pos >= end_of_text:
            break
        if text[pos] != '"':
            return _syntax_error(text, pos)
        key_end = _string_end(text, pos + 1)
        if key_end < 0:
            break
        key = _decode(text[pos:key_end])
        if not isinstance(key, str):
            return _syntax_error(text, pos)
        pos = _skip_ws(text, key_end)
        if pos >= end_of_text:
            break
        if text[pos] != ":":
            return _syntax_error(text, pos)
        pos = _skip_ws(text, pos + 1)
        if pos >= end_of_text:
            truncation.cut_member = key
            break
        if key in members:
            document.top_duplicates.append(key)
        if key == items_field and text[pos] == "[":
            items: list[Any] = []
            members[key] = items
            pos = _salvage_items(text, pos + 1, items, document, ends)
            if pos < 0:
                return _syntax_error(text, -pos)
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
                return _syntax_error(text, pos)
            members[key] = value
            duplicate = first_duplicate_in(text[pos:value_end], value, paths.member(None, key))
            if duplicate is not None:
                document.member_duplicates[key] = duplicate
            pos = value_end
        pos = _skip_ws(text, pos)
        if pos >= end_of_text:
            break
        if text[pos] != ",":
            return _syntax_error(text, pos)
        pos += 1
    return document


def _salvage_items(text: str, pos: int, items: list[Any], document: Document, ends: _SpanEnd) -> int:
    """Read complete findings into ``items``; return the position after the array, or -position on error."""
    truncation = document.truncation
    assert truncation is not None
    end_of_text = len(text)
    while True:
        pos = _skip_ws(text, pos)
        if pos >= end_of_text:
            truncation.items_complete = False
            return pos
        if text[pos] == "]" and not items:
            return pos + 1
        value_end = _value_end(text, pos, ends)
        if value_end == _CUT:
            truncation.items_complete = False
            truncation.cut_item = len(items)
            return end_of_text
        value = _decode(text[pos:value_end]) if value_end > 0 else _BAD
        if value is _BAD or value is _DEEP:
            return -pos
        duplicate = first_duplicate_in(text[pos:value_end], value, "")
        if duplicate is not None:
            document.item_duplicates[len(items)] = duplicate
        items.append(value)
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


def _string_end(text: str, pos: int) -> int:
    """Index after the closing quote of a string whose body starts at ``pos``, or _CUT."""
    while True:
        match = _STRING_STOP.search(text, pos)
        if match is None:
            return _CUT
        if match.group() == '"':
            return match.end()
        pos = match.end() + 1  # skip the escaped character
        if pos > len(text):
            return _CUT


def _span_end(text: str, start: int) -> int:
    """Index after the bracket closing the object or array opened at ``start``, or _CUT."""
    depth = 0
    pos = start
    while True:
        match = _STRUCTURAL.search(text, pos)
        if match is None:
            return _CUT
        char = match.group()
        pos = match.end()
        if char == '"':
            pos = _string_end(text, pos)
            if pos < 0:
                return _CUT
        elif char in "{[":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return pos


def _span(text: str, start: int) -> tuple[int, int]:
    """``_span_end`` and the deepest nesting reached on the way (to the end of the text when it is cut)."""
    depth = deepest = 0
    pos = start
    while True:
        match = _STRUCTURAL.search(text, pos)
        if match is None:
            return _CUT, deepest
        char = match.group()
        pos = match.end()
        if char == '"':
            pos = _string_end(text, pos)
            if pos < 0:
                return _CUT, deepest
        elif char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
            if depth == 0:
                return pos, deepest


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


def _deeper_than(text: str, start: int, stop: int, max_depth: int) -> bool:
    """Whether the JSON text in ``text[start:stop]`` nests arrays and objects deeper than ``max_depth``."""
    if text.count("{", start, stop) + text.count("[", start, stop) <= max_depth:
        return False  # cannot nest deeper than the brackets it has: the common case, decided in C
    depth = 0
    pos = start
    while (match := _STRUCTURAL.search(text, pos, stop)) is not None:
        char = match.group()
        pos = match.end()
        if char == '"':
            pos = _string_end(text, pos)
            if pos < 0:
                return False
        elif char in "{[":
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


# ---- duplicate keys --------------------------------------------------------------------------------------


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


def _may_have_duplicates(span: str, value: Any) -> bool:
    """Cheap test: each member of a JSON text contributes one ':' outside strings.

    The canonical encoding of the decoded value has the same colons inside strings, so the counts differ
    exactly when members were lost to repeated keys (unless a colon was written as an escape).
    """
    return "\\u003" in span or span.count(":") != msgspec.json.encode(value).count(b":")


def _shadow(span: str) -> Any:
    """Decode ``span`` (known to be strict JSON) keeping track of repeated keys; numbers are irrelevant."""
    return json.loads(span, object_pairs_hook=_pairs, parse_int=_zero, parse_float=_zero, parse_constant=_zero)


def _zero(_: str) -> int:
    return 0


def first_duplicate_in(span: str, value: Any, base: str) -> str | None:
    if (native is not None and native(span)) or not _may_have_duplicates(span, value):
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
    value = document.value
    if not isinstance(value, dict) or (native is not None and native(span)) or not _may_have_duplicates(span, value):
        return document
    shadow = _shadow(span)
    if isinstance(shadow, _Repeated):
        document.top_duplicates.extend(shadow.repeated)
    for key, member in shadow.items():
        if key == items_field and isinstance(member, list):
            for index, item in enumerate(member):
                repeat = _first_repeat(item, "")
                if repeat is not None:
                    document.item_duplicates[index] = repeat
        else:
            repeat = _first_repeat(member, paths.member(None, key))
            if repeat is not None:
                document.member_duplicates[key] = repeat
    return document
