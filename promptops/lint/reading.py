"""How lint reads a rendered prompt: field items, required/optional labels, enum statements and sentences.

The conventions (documented in the README and each rule's docstring):

- A *field item* is a list line (``-``, ``*``, ``+`` or ``1.``) whose first word is a field name in backticks
  or double quotes: ``- `severity` (string): ...``.
- Its *status* is "required" or "optional" when the item itself says so (the first of the two words after the
  name), else the status of its *label*: the nearest line above that is not a list item and says "required" or
  "optional" (not both), such as ``Required fields of each finding:``. Blank lines and indented continuation
  lines keep the label; any other line ends it.
- A label or heading that says "top-level" or "finding" sets the *scope* (top-level object or finding) of the
  items under it; without one, an item may name a field of either level.
- An *enum statement* is a line whose first quoted name is a field and that says "one of" followed by the
  values, each in backticks or double quotes: ``- `confidence` (optional): one of `high`, `medium`, `low```.
- Instruction rules read *sentences*: text split at blank lines, list items and sentence ends.
"""

from __future__ import annotations

import functools
import re
from typing import Literal, NamedTuple

Status = Literal["required", "optional"]
Scope = Literal["top", "item"]

_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])[ \t]+")
_NAME = re.compile(r"`([^`\n]+)`|\"([^\"\n]+)\"")
_FIELD_ITEM = re.compile(r"[ \t]*(?:[-*+]|\d+[.)])[ \t]+(?:\*\*)?(?:`([^`\n]+)`|\"([^\"\n]+)\")")
_STATUS = re.compile(r"\b(required|optional)\b", re.IGNORECASE)
_SCOPE = re.compile(r"\b(top[- ]level|findings?)\b", re.IGNORECASE)
_ONE_OF = re.compile(r"\bone of\b", re.IGNORECASE)
_HEADING = re.compile(r"[ \t]*#")
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+(?=\S)")


class FieldItem(NamedTuple):
    name: str
    status: Status | None
    scope: Scope | None
    offset: int  # of the line in the rendered text
    text: str  # the line


class EnumStatement(NamedTuple):
    name: str
    values: tuple[str, ...]
    offset: int
    text: str


class Sentence(NamedTuple):
    offset: int
    text: str


def _lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        out.append((offset, line.rstrip("\r\n")))
        offset += len(line)
    return out


def _name(match: re.Match[str]) -> str:
    return match[1] if match[1] is not None else match[2]


def _scope_of(text: str) -> Scope | None:
    match = _SCOPE.search(text)
    if match is None:
        return None
    return "top" if match[1].lower().startswith("top") else "item"


@functools.lru_cache(maxsize=4)
def field_items(text: str) -> tuple[FieldItem, ...]:
    items: list[FieldItem] = []
    status: Status | None = None
    scope: Scope | None = None
    for offset, line in _lines(text):
        if not line.strip():
            continue
        item = _FIELD_ITEM.match(line)
        if item is not None:
            own = _STATUS.search(line, item.end())
            own_status: Status | None = None
            if own is not None:
                own_status = "required" if own[1].lower() == "required" else "optional"
            items.append(FieldItem(_name(item), own_status or status, scope, offset, line))
            continue
        if _ITEM.match(line) or line[:1] in (" ", "\t"):
            continue  # another list item or a continuation line: the label still holds
        words = {m.lower() for m in _STATUS.findall(line)}
        status = ("required" if "required" in words else "optional") if len(words) == 1 else None
        line_scope = _scope_of(line)
        if line_scope is not None or _HEADING.match(line):
            scope = line_scope
    return tuple(items)


@functools.lru_cache(maxsize=4)
def enum_statements(text: str) -> tuple[EnumStatement, ...]:
    found: list[EnumStatement] = []
    for offset, line in _lines(text):
        marker = _ONE_OF.search(line)
        if marker is None:
            continue
        first = _NAME.search(line)
        if first is None or first.start() > marker.start():
            continue
        values = tuple(_name(m) for m in _NAME.finditer(line, marker.end()))
        found.append(EnumStatement(_name(first), values, offset, line))
    return tuple(found)


@functools.lru_cache(maxsize=4)
def sentences(text: str) -> tuple[Sentence, ...]:
    """Sentences with their offsets: a paragraph's lines are joined, list items and sentence ends split."""
    out: list[Sentence] = []
    block: list[tuple[int, str]] = []

    def flush() -> None:
        if not block:
            return
        joined = " ".join(line.strip() for _, line in block)
        start = 0
        for end in _SENTENCE_END.finditer(joined):
            out.append(Sentence(_offset_in(block, start), joined[start : end.start()]))
            start = end.end()
        out.append(Sentence(_offset_in(block, start), joined[start:]))
        block.clear()

    for offset, line in _lines(text):
        if not line.strip() or _ITEM.match(line) or _HEADING.match(line):
            flush()
        if line.strip():
            block.append((offset, line))
    flush()
    return tuple(out)


def _offset_in(block: list[tuple[int, str]], position: int) -> int:
    """Map a position in the space-joined paragraph back to an offset in the rendered text."""
    consumed = 0
    for offset, line in block:
        stripped = line.strip()
        if position <= consumed + len(stripped):
            return offset + (len(line) - len(line.lstrip())) + (position - consumed)
        consumed += len(stripped) + 1
    return block[-1][0]
