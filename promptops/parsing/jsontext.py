"""From raw model text to one JSON value, strictly: the diagnostic path's reader.

``read_document`` reads the text of every response the fast path declined. In order it
1. ignores surrounding whitespace and a leading BOM, and parses the whole text as RFC 8259 JSON;
2. failing that, removes ``<think>`` blocks and looks for balanced objects among fences and prose: exactly one
   that parses strictly is extracted, two or more reject the response (``multiple_json_values``);
3. failing that, if the text ends inside an object, salvages the members and findings that were complete;
4. never repairs tokens (trailing commas, quotes, comments, NaN...): that is ``invalid_json``.
Duplicate keys are located exactly, so the validator can reject or drop instead of letting the last one win.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from promptops.parsing import paths
from promptops.parsing.diagnostics import Code
from promptops.parsing.duplicates import duplicates_in, first_duplicate_in
from promptops.parsing.thinking import drop_thinking
from promptops.parsing.walks import CUT, deeper_than, span, span_end, string_end

_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null")
_SCALAR_PREFIX = re.compile(
    r"-?[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]*)?\Z|t(?:r(?:ue?)?)?\Z|f(?:a(?:l(?:se?)?)?)?\Z|n(?:u(?:ll?)?)?\Z"
)
_JSON_OBJECT_START = re.compile(r'\{[ \t\n\r]*(?:"|\}|\Z)')
_JSON_WS = " \t\n\r"
_WS_RUN = re.compile(r"[ \t\n\r]*")
_NOT_A_VALUE = -2  # positions: no JSON value starts here
_BAD: Any = object()  # values: not strict JSON
_DEEP: Any = object()


@dataclass(frozen=True)
class Rejection:
    code: Code
    message: str


@dataclass
class Truncation:
    """Where a cut-off response ended and what was lost."""

    cut_member: str | None = None  # top-level member whose value was cut (treated as absent)
    cut_item: int | None = None  # index of the finding that was cut off mid-way
    cut_text: str = ""  # what was read of that finding
    items_complete: bool = True  # False when the findings array itself never closed


@dataclass
class Document:
    value: Any
    extracted: bool = False
    truncation: Truncation | None = None
    top_duplicates: list[str] = field(default_factory=list)  # keys repeated in the top-level object
    member_duplicates: dict[str, str] = field(default_factory=dict)  # top-level key -> path of a nested repeat
    item_duplicates: dict[int, str] = field(default_factory=dict)  # finding index -> path of the repeat


def decode_text(data: bytes) -> str | Rejection:
    """The text of ``data`` (UTF-8) with surrounding whitespace and a leading BOM removed."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = _line_column(
            data[: exc.start].decode("utf-8", "replace"), len(data[: exc.start].decode("utf-8", "replace"))
        )
        return Rejection(Code.INVALID_JSON, f"response is not valid UTF-8 at {where} (byte {exc.start})")
    text = text.strip()
    if not text or text == "\ufeff":
        return Rejection(Code.INVALID_JSON, "response is empty")
    if text.startswith("\ufeff"):
        text = text[1:].strip()
    return text


def read_document(
    text: str, items_field: str, max_depth: int, max_findings: int, plain: Callable[[str], bool] | None = None
) -> Document | Rejection:
    """Read ``text`` (from decode_text) into one JSON value, or say why it cannot be read.

    ``plain``, when given, is a quick test that a JSON text repeats no key and nests no deeper than
    ``max_depth`` (True only when sure): such a text needs neither walk.
    """
    try:
        value = msgspec.json.decode(text)
    except RecursionError:
        return _too_deep(max_depth)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return _extract(text, items_field, max_depth, max_findings, str(exc))
    if plain is not None and plain(text):
        return Document(value)
    if deeper_than(text, max_depth):
        return _too_deep(max_depth)
    return _with_duplicates(Document(value), text, items_field)


def _extract(original: str, items_field: str, max_depth: int, max_findings: int, error: str) -> Document | Rejection:
    """Look for the one JSON object in ``original``, a text that is not JSON as a whole (``error`` says why)."""
    text = drop_thinking(original)
    wrapper_removed = text != original
    spans, cut_start, cut_depth = _spans(text)
    whole = (0, len(text)) if text is original else None  # that span was decoded already: it is no candidate
    complete: list[tuple[int, int, int, Any]] = []
    for start, end, depth in spans:
        value = _BAD if (start, end) == whole else _decode(text[start:end])
        if value is _DEEP:
            return _too_deep(max_depth)
        if value is not _BAD:
            complete.append((start, end, depth, value))
    if len(complete) > 1 or (complete and cut_start is not None):
        starts = ", ".join(str(c[0]) for c in complete) + (f", {cut_start} (cut off)" if cut_start is not None else "")
        return Rejection(Code.MULTIPLE_JSON_VALUES, f"response holds several JSON objects (at characters {starts})")
    if complete:
        start, end, depth, value = complete[0]
        if depth > max_depth:
            return _too_deep(max_depth)
        return _with_duplicates(Document(value, extracted=True), text[start:end], items_field)
    if cut_start is not None:
        extracted = wrapper_removed or bool(text[:cut_start].strip())
        if cut_depth > max_depth:
            return _too_deep(max_depth)
        return _salvage(text, cut_start, items_field, extracted, max_findings)
    if not spans and error == "JSON is malformed: invalid character (byte 0)":
        return Rejection(Code.INVALID_JSON, f"response holds no JSON object: {_show_start(text)}")
    if len(spans) == 1 and text is original and (spans[0][0] > 0 or spans[0][1] < len(text)):
        start, end = spans[0][:2]  # the one object in the text is broken: say where
        try:
            msgspec.json.decode(text[start:end])
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return Rejection(Code.INVALID_JSON, f"response is not valid JSON: {_explain(text, str(exc), start)}")
    return Rejection(Code.INVALID_JSON, f"response is not valid JSON: {_explain(original, error)}")


def sole_object(original: str, max_depth: int) -> str | None:
    """The text of the one object that ``_extract`` would look at in ``original`` (from decode_text, a text that
    is not JSON as a whole), when there is exactly one candidate, none cut off, and it nests no deeper than
    ``max_depth``; else None. Whether it is extracted depends on whether it reads: the caller decides."""
    text = drop_thinking(original)
    spans, cut_start, _ = _spans(text)
    if cut_start is not None or len(spans) != 1:
        return None
    start, end, depth = spans[0]
    if depth > max_depth or (text is original and (start, end) == (0, len(text))):
        return None
    return text[start:end]


def _spans(text: str) -> tuple[list[tuple[int, int, int]], int | None, int]:
    """The balanced objects in ``text`` (start, end, deepest nesting), then where an object the text ends inside
    starts (or None) and how deep it nests."""
    spans: list[tuple[int, int, int]] = []
    pos = 0
    while (found := _JSON_OBJECT_START.search(text, pos)) is not None:  # prose such as "{x}" is no object start
        start = found.start()
        end, depth = span(text, start)
        if end < 0:
            return spans, start, depth
        spans.append((start, end, depth))
        pos = end  # a broken object is not a candidate, and neither is anything inside it
    return spans, None, 0


def _salvage(text: str, start: int, items_field: str, extracted: bool, max_findings: int) -> Document | Rejection:
    """Keep what was complete in an object the text ends inside, one no deeper than allowed: its complete
    members and complete findings; the first syntax error in the text rejects the response. Reading stops after
    one finding more than ``max_findings`` (the validator rejects such a response as too large)."""
    members: dict[str, Any] = {}
    document = Document(members, extracted=extracted, truncation=Truncation())
    pending: list[tuple[list[Any], int, int]] = []  # each complete finding: its array, start and end
    error = _salvage_members(text, start + 1, items_field, document, pending, max_findings)
    for items, pos, end in pending:
        item_span = text[pos:end]
        value = _decode(item_span)
        if value is _BAD or value is _DEEP:
            return _syntax_error(text, pos)  # before any error further on
        duplicate = first_duplicate_in(item_span, value, "")
        if duplicate is not None:
            document.item_duplicates[len(items)] = duplicate
        items.append(value)
    return document if error is None else _syntax_error(text, error)


def _salvage_members(
    text: str,
    pos: int,
    items_field: str,
    document: Document,
    pending: list[tuple[list[Any], int, int]],
    max_findings: int,
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
        key_end = string_end(text, pos + 1)
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
            pos = _salvage_items(text, pos + 1, items, document, pending, max_findings)
            if pos < 0:
                return -pos
            if not truncation.items_complete:
                break
        else:
            value_end = _value_end(text, pos)
            if value_end == CUT:
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
    max_findings: int,
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
        value_end = _value_end(text, pos)
        if value_end == CUT:
            truncation.items_complete = False
            truncation.cut_item = count
            truncation.cut_text = text[pos:]
            return end_of_text
        if value_end < 0:
            return -pos
        pending.append((items, pos, value_end))
        count += 1
        if count > max_findings:
            truncation.items_complete = False
            return end_of_text
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
    what = f"unexpected {text[pos : pos + 1]!r}"
    if text[pos] in "}]" and text[:pos].rstrip().endswith(","):
        what = f"a trailing comma before {text[pos]!r}"
        pos = _comma_before(text, pos)
    return Rejection(Code.INVALID_JSON, f"response is not valid JSON: {what} at {_line_column(text, pos)}")


def _comma_before(text: str, pos: int) -> int:
    """Where the comma that a closing bracket at ``pos`` follows stands: the fault a reader looks for."""
    return len(text[:pos].rstrip()) - 1


# msgspec's complaints, in the user's terms (JSON texts only: the positions msgspec gives are byte offsets).
_COMPLAINTS = {
    "Input data was truncated": "the text ends before the JSON is complete",
    "trailing characters": "more text follows the JSON value",
    "invalid character": "unexpected character",
    "trailing comma in object": "a trailing comma in an object",
    "trailing comma in array": "a trailing comma in an array",
    "object keys must be strings": "expected a key in double quotes",
    "Number out of range": "a number out of range",
    "Integer value out of range": "an integer out of range",
}
_AT_BYTE = re.compile(r"(?:JSON is malformed: )?(.*?)(?: \(byte ([0-9]+)\))?(?: - at `.*`)?\Z", re.DOTALL)


def _explain(text: str, error: str, start: int = 0) -> str:
    """msgspec's ``error`` about ``text[start:]``, with a line and column instead of a byte offset."""
    found = _AT_BYTE.match(error)
    if found is None:  # pragma: no cover - the pattern matches any text
        return error
    phrase, offset = found.group(1), found.group(2)
    phrase = _COMPLAINTS.get(phrase, phrase)
    if offset is None:
        return phrase if phrase != _COMPLAINTS["Input data was truncated"] else f"{phrase} (at {_end(text)})"
    prefix = text[:start] + text[start:].encode("utf-8", "surrogatepass")[: int(offset)].decode("utf-8", "replace")
    where = _line_column(prefix, len(prefix))
    if phrase.startswith("a trailing comma") and prefix.rstrip().endswith(","):
        # msgspec names the closing bracket; the fault is the comma, which may be lines before it
        where = _line_column(prefix, _comma_before(prefix, len(prefix)))
    if phrase == "unexpected character" and len(prefix) < len(text):
        phrase = f"unexpected character {text[len(prefix)]!r}"
    return f"{phrase} at {where}"


def _end(text: str) -> str:
    return _line_column(text, len(text))


def _line_column(text: str, pos: int) -> str:
    """``pos`` in ``text`` as a 1-based line and column."""
    line = text.count("\n", 0, pos) + 1
    return f"line {line}, column {pos - (text.rfind(chr(10), 0, pos) + 1) + 1}"


def _show_start(text: str) -> str:
    start = text[:40] + ("..." if len(text) > 40 else "")
    return f"the text starts with {start!r}"


def _skip_ws(text: str, pos: int) -> int:
    if pos < len(text) and text[pos] in _JSON_WS:
        # a run, such as a pretty-printed line's indentation: one regex match beats a loop per character
        run = _WS_RUN.match(text, pos)
        return run.end() if run is not None else pos
    return pos


def _value_end(text: str, pos: int) -> int:
    """Index after the value starting at ``pos``; CUT if the text ends inside it, else _NOT_A_VALUE."""
    char = text[pos]
    if char in "{[":
        return span_end(text, pos)
    if char == '"':
        return string_end(text, pos + 1)
    match = _SCALAR.match(text, pos)
    if match is None or match.end() == len(text):
        # A number or literal running into the end of the text may be cut short ("4" of "42").
        return CUT if _SCALAR_PREFIX.match(text, pos) else _NOT_A_VALUE
    return match.end()


def _with_duplicates(document: Document, span: str, items_field: str) -> Document:
    repeats = duplicates_in(document.value, span, items_field)
    if repeats is not None:
        top, members, items = repeats
        document.top_duplicates.extend(top)
        document.member_duplicates.update(members)
        document.item_duplicates.update(items)
    return document
