"""How lint reads a rendered prompt: which statements state a field's status, type and enum set.

Lint does not look for fixed English labels. It knows the schema's field names and enum values (a
``Vocabulary``) and reads the rendered text's structure around them:

- A *field statement* is a line about one field: a list item, a table row or a line whose first words
  name the field (in backticks, quotes or bold, or bare before a colon or as a table cell), at most four
  words in ("The `severity` field ..."). Lines indented under it (continuations, a sub-list) belong to it.
- Its *status* (required or optional) comes from, in order: a status column of its table ("Required:
  yes"), a strong word in the statement's own first sentence ("required", "mandatory", "optional", "not
  required"...; a description after it does not count), a strong word in its *label* (the nearest line
  above that is not a statement: a heading or a sentence such as "Each vulnerability must carry:"), then
  weaker words ("always", "must" / "may", "if
  known", "when available") in the statement, then in the label.
- Consecutive statements under one label form a *group*. Its *level* (the top-level object or each item of
  the items array) is the level most of its field names belong to, so "each vulnerability" and "each
  finding" read alike; a name of the other level listed in a group is misplaced and states nothing. A
  dotted name (``findings[].severity``) states its level itself.
- An *enum statement* is a field statement holding a run of values of that field's enum set: quoted
  tokens (or bare words in a table cell or after a colon) separated only by commas, slashes, pipes, "or"
  or line breaks, at least half of them (and at least two, unless the set has one value) in the set.
  Its other values are compared as written, so a misspelling is an extra value.
- Instruction rules read *sentences*: text split at blank lines, list items and sentence ends.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import TYPE_CHECKING, Literal, NamedTuple

from promptops.render import regexes

if TYPE_CHECKING:
    from promptops.core.shape import OutputShape

Status = Literal["required", "optional"]
Scope = Literal["top", "item"]

_ITEM = regexes.lazy(r"[ \t]*(?:[-*+•]|\d+[.)])[ \t]+")
_HEADING = regexes.lazy(r"[ \t]*#")
_TABLE_RULE = regexes.lazy(r"[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*\Z")
_QUOTED = regexes.lazy(r"`([^`\n]+)`|\"([^\"\n]+)\"|\*\*([^*\n]+)\*\*|'([^'\n\s]+)'")
_WORD = regexes.lazy(r"[\w][\w.\-\[\]*]*")
_SENTENCE_END = regexes.lazy(r"(?<=[.!?])[ \t]+(?=\S)")
_DELIMITER = regexes.lazy(r"\A(?:[\s,;/|]|\bor\b|\band\b|:|\.(?=\s*\Z))*\Z", re.IGNORECASE)

_STRONG_REQUIRED = regexes.lazy(r"\b(required|mandatory|not optional)\b", re.IGNORECASE)
_STRONG_OPTIONAL = regexes.lazy(
    r"\b(optional|(?:not|never|isn't|is not) (?:required|mandatory)|not always (?:required|present))\b",
    re.IGNORECASE,
)
_WEAK_REQUIRED = regexes.lazy(r"\b(always|must(?! not)|every (?:one|time)|never (?:omit|leave out))\b", re.IGNORECASE)
_WEAK_OPTIONAL = regexes.lazy(
    r"\b(may|can be (?:omitted|left out)|omit(?:ted)?|leave (?:it )?out|"
    r"(?:if|when|only when|where) (?:known|any|applicable|available|relevant|present|you have|there is))\b",
    re.IGNORECASE,
)
_STATUS_HEADER = regexes.lazy(
    r"\b(required|mandatory|optional|status|presen(?:t|ce)|needed|must|always|req\.?)(?!\w)", re.IGNORECASE
)
_CELL = regexes.lazy(r"[^|]+")
_BARE_NAME = regexes.lazy(r"([\w.\[\]*]+)[ \t]*(?::|\(|\u2014|\u2013| - )")
_FIRST_STOP = regexes.lazy(r"[.!?](?:\s|\Z)")
_PARENTHESES = regexes.lazy(r"[ \t*]*\(([^()\n]*)\)")
_VALUE_SEPARATOR = regexes.lazy(r",|/|\bor\b")
_VALUE = regexes.lazy(r"[\w.\-]+")
_FIRST_WORD_END = regexes.lazy(r"[\s:;,.(]")
_YES = frozenset({"yes", "y", "true", "✓", "✔", "x", "required", "mandatory", "always", "must"})
_NO = frozenset({"no", "n", "false", "-", "\u2014", "\u2013", "", "optional", "may", "never"})


class Vocabulary(NamedTuple):
    """What the reader looks for: the schema's field names per level, the items array and the enum sets."""

    top: frozenset[str]
    item: frozenset[str]
    items_field: str
    enums: tuple[tuple[str, tuple[str, ...]], ...]  # field name -> enum values (as a prompt writes them)

    def level_of(self, name: str) -> Scope | None:
        """The level a name belongs to when it belongs to exactly one."""
        top, item = name in self.top, name in self.item
        return "top" if top and not item else "item" if item and not top else None


def vocabulary(shape: OutputShape) -> Vocabulary:
    """The vocabulary of the schema compiled into ``shape``."""
    enums: dict[str, tuple[str, ...]] = {}
    for level in (shape.top, shape.item):
        for name, rule in level.properties.items():
            if rule.enum_strings is not None:
                enums.setdefault(name, rule.enum_strings)
    return Vocabulary(
        frozenset(shape.top.properties), frozenset(shape.item.properties), shape.items_field, tuple(enums.items())
    )


class FieldStatement(NamedTuple):
    name: str
    level: Scope | None  # the group's level (None: a name both levels have, in a group with no majority)
    status: Status | None
    rule: str | None  # the type-and-bounds text: "(integer, >= 1)" after the name, or a table's next cell
    offset: int  # of the statement's first line in the rendered text
    text: str  # that line
    group: int


class EnumStatement(NamedTuple):
    name: str
    level: Scope | None
    values: tuple[str, ...]
    offset: int
    text: str


class Group(NamedTuple):
    """Consecutive field statements under one label."""

    level: Scope | None
    offset: int  # of the label line, else of the first statement
    text: str


class Reading(NamedTuple):
    fields: tuple[FieldStatement, ...]
    enums: tuple[EnumStatement, ...]
    groups: tuple[Group, ...]
    first: tuple[int, str]  # offset and text of the first non-blank line (where a whole-prompt miss points)


class Sentence(NamedTuple):
    offset: int
    text: str


class _Line(NamedTuple):
    offset: int
    text: str


class _Raw(NamedTuple):
    name: str
    explicit: Scope | None
    own: tuple[Status | None, Status | None]  # strong, weak
    column: Status | None
    rule: str | None
    values: tuple[str, ...]
    line: _Line


def _lines(text: str) -> list[_Line]:
    out: list[_Line] = []
    offset = 0
    for line in text.splitlines(keepends=True):
        out.append(_Line(offset, line.rstrip("\r\n")))
        offset += len(line)
    return out


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def _kind(text: str, required: re.Pattern[str], optional: re.Pattern[str]) -> Status | None:
    """The status the words of ``text`` state: None for none or both. A match inside a longer match of the
    other kind ("required" in "not required") does not count."""
    first_req, first_opt = required.search(text), optional.search(text)
    if first_req is None or first_opt is None:  # the common case: no overlap to resolve
        return "required" if first_req else "optional" if first_opt else None
    req = [m.span() for m in required.finditer(text)]
    opt = [m.span() for m in optional.finditer(text)]

    def inside(span: tuple[int, int], others: list[tuple[int, int]]) -> bool:
        return any(o[0] <= span[0] and span[1] <= o[1] and o != span for o in others)

    has_req = any(not inside(s, opt) for s in req)
    has_opt = any(not inside(s, req) for s in opt)
    if has_req == has_opt:
        return None
    return "required" if has_req else "optional"


def _status(text: str) -> tuple[Status | None, Status | None]:
    """(strong, weak) status the words of ``text`` state."""
    return _kind(text, _STRONG_REQUIRED, _STRONG_OPTIONAL), _kind(text, _WEAK_REQUIRED, _WEAK_OPTIONAL)


def _cells(text: str) -> list[str]:
    inner = text.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [cell.strip() for cell in inner.split("|")]


def _plain(token: str) -> str:
    return token.strip().strip("`\"'*").strip()


def _field_name(token: str, vocabulary: Vocabulary) -> tuple[str, Scope | None] | None:
    """The field a token names, and the level a dotted form (``findings[].severity``) states."""
    if token in vocabulary.top or token in vocabulary.item:
        return token, None
    prefix = regexes.compile(rf"{re.escape(vocabulary.items_field)}(?:\[\*?\])?\.(\w+)\Z").match(token)
    if prefix is not None and prefix[1] in vocabulary.item:
        return prefix[1], "item"
    return None


def _subject(line: str, vocabulary: Vocabulary) -> tuple[str, Scope | None, int] | None:
    """The field a line is about, its explicit level, and where its mention ends; None for other lines."""
    body = _ITEM.sub("", line, count=1) if _ITEM.match(line) else line.lstrip()
    start = len(line) - len(body)
    if body.startswith("|"):
        for cell_match in _CELL.finditer(body):
            cell = cell_match.group()
            if not cell.strip():
                continue
            named = _field_name(_plain(cell), vocabulary)
            return (named[0], named[1], start + cell_match.end()) if named else None
        return None
    for match in _QUOTED.finditer(body):
        words_before = len(_WORD.findall(body[: match.start()]))
        if words_before > 4:
            return None
        token = next(g for g in match.groups() if g is not None)
        named = _field_name(token, vocabulary)
        if named is not None:
            return named[0], named[1], start + match.end()
    bare = _BARE_NAME.match(body)
    if bare is not None:
        named = _field_name(bare[1], vocabulary)
        if named is not None:
            return named[0], named[1], start + bare.end(1)
    return None


def _head(line: str, at: int) -> str:
    """A statement's own claim: up to the end of its first sentence after the field's name, so a description
    that follows ("Required when the finding spans lines.") does not restate the field's status."""
    end = _FIRST_STOP.search(line[at:])
    return line if end is None else line[: at + end.start()]


def _rule(rest: str, table: bool) -> str | None:
    if table:
        cells = _cells(rest)  # ``rest`` starts at the bar after the name's cell
        return " ".join(cells[0].split()) if cells and cells[0] else None
    match = _PARENTHESES.match(rest)
    return " ".join(match[1].split()) if match else None


def _runs(text: str, vocabulary: Vocabulary, allowed: tuple[str, ...], bare: bool) -> tuple[str, ...]:
    """The best run of candidate enum values in ``text`` (see the module docstring), else ()."""
    names = vocabulary.top | vocabulary.item
    tokens: list[tuple[int, int, str]] = []
    for match in _QUOTED.finditer(text):
        value = next(g for g in match.groups() if g is not None)
        if value not in names:
            tokens.append((match.start(), match.end(), value))
    runs: list[list[str]] = []
    previous_end: int | None = None
    for start, end, value in tokens:
        if previous_end is not None and _DELIMITER.match(text[previous_end:start]):
            runs[-1].append(value)
        else:
            runs.append([value])
        previous_end = end
    if bare:
        for cell in text.replace("|", ":").split(":"):  # the cells, and the parts around colons
            words = [w.strip(" .`\"'*") for w in _VALUE_SEPARATOR.split(cell)]
            if len(words) >= 2 and all(_VALUE.fullmatch(w) for w in words if w):
                runs.append([w for w in words if w])
    best: tuple[str, ...] = ()
    best_inside = 0
    need = min(2, len(allowed))
    members = frozenset(allowed)  # a set: an enum of many values must not make this quadratic
    for run in runs:
        unique = tuple(dict.fromkeys(run))
        inside = sum(1 for v in unique if v in members)
        if inside >= need and inside * 2 >= len(unique) and inside > best_inside:
            best, best_inside = unique, inside
    return best


def _table_status(header: list[str] | None, cells: list[str]) -> Status | None:
    if header is None:
        return None
    for index, title in enumerate(header):
        kind = _STATUS_HEADER.search(title)
        if kind is None or index >= len(cells):
            continue
        cell = _plain(cells[index]).lower()
        first = _FIRST_WORD_END.split(cell, maxsplit=1)[0]  # "yes: exactly ..." -> "yes"
        inverted = kind[1].lower() == "optional"
        if first in _YES - {"required", "mandatory"}:
            return "optional" if inverted else "required"
        if first in _NO - {"optional"}:
            return "required" if inverted else "optional"
        strong, _ = _status(cell)
        if strong is not None:
            return strong
    return None


@functools.lru_cache(maxsize=8)
def read(text: str, vocabulary: Vocabulary) -> Reading:
    """Every field statement, enum statement and group of the rendered prompt ``text``."""
    lines = _lines(text)
    enum_sets = dict(vocabulary.enums)
    raws: list[tuple[int, _Raw]] = []  # (group index, statement)
    groups: list[tuple[_Line | None, list[_Raw]]] = []
    label: _Line | None = None
    header: list[str] | None = None
    open_group = False
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.text.strip()
        if not stripped:
            index += 1
            continue
        if _TABLE_RULE.match(line.text) and stripped.count("-") >= 3:
            if index > 0 and lines[index - 1].text.strip().startswith("|"):
                header = _cells(lines[index - 1].text)
            index += 1
            continue
        subject = _subject(line.text, vocabulary)
        if subject is None:
            is_table = stripped.startswith("|")
            if not is_table:
                header = None
            if not is_table and not _ITEM.match(line.text):
                label, open_group = line, False  # a heading or a sentence: the next statements' label
            index += 1
            continue
        # The statement and the lines indented under it (continuations, a sub-list of values).
        end = index + 1
        while end < len(lines) and lines[end].text.strip() and _indent(lines[end].text) > _indent(line.text):
            if _subject(lines[end].text, vocabulary) is not None and _ITEM.match(lines[end].text):
                break  # a nested field list: its own statements
            end += 1
        name, explicit, at = subject
        table = stripped.startswith("|")
        rest = line.text[at:]
        below = [_ITEM.sub("", lines[i].text, count=1).strip() for i in range(index + 1, end)]
        allowed = enum_sets.get(name)
        values = _runs(" , ".join([rest, *below]), vocabulary, allowed, table or ":" in rest) if allowed else ()
        raw = _Raw(
            name,
            explicit,
            _status(line.text if table else _head(line.text, at)),
            _table_status(header, _cells(line.text)) if table else None,
            _rule(rest, table),
            values,
            line,
        )
        if not open_group:
            groups.append((label, []))
            open_group = True
        groups[-1][1].append(raw)
        raws.append((len(groups) - 1, raw))
        index = end
    return _resolve(raws, groups, vocabulary, lines)


def _resolve(
    raws: list[tuple[int, _Raw]],
    groups: list[tuple[_Line | None, list[_Raw]]],
    vocabulary: Vocabulary,
    lines: list[_Line],
) -> Reading:
    levels: list[Scope | None] = []
    out_groups: list[Group] = []
    for label, members in groups:
        votes = Counter(vocabulary.level_of(r.name) if r.explicit is None else r.explicit for r in members)
        votes.pop(None, None)
        ranked = votes.most_common()
        level = ranked[0][0] if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]) else None
        levels.append(level)
        anchor = label if label is not None else members[0].line
        out_groups.append(Group(level, anchor.offset, anchor.text))
    fields: list[FieldStatement] = []
    enums: list[EnumStatement] = []
    label_status = [_status(label.text) if label is not None else (None, None) for label, _ in groups]
    for group, raw in raws:
        label_strong, label_weak = label_status[group]
        own_strong, own_weak = raw.own
        status = raw.column or own_strong or label_strong or own_weak or label_weak
        level = raw.explicit or levels[group] or vocabulary.level_of(raw.name)
        names = vocabulary.top if level == "top" else vocabulary.item if level == "item" else None
        if names is not None and raw.name not in names:
            continue  # listed among the other level's fields: it states nothing about its own level
        fields.append(FieldStatement(raw.name, level, status, raw.rule, raw.line.offset, raw.line.text, group))
        if raw.values:
            enums.append(EnumStatement(raw.name, level, raw.values, raw.line.offset, raw.line.text))
    first = next(((line.offset, line.text) for line in lines if line.text.strip()), (0, ""))
    return Reading(tuple(fields), tuple(enums), tuple(out_groups), first)


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


def contains_token(text: str, token: str, *, words: bool) -> bool:
    """Whether ``token`` occurs in ``text`` on its own: not inside a longer number ("1" in "10", "0.1" or
    "1.5") or, with ``words``, a longer word or version ("1.0" in "1.0.0", "v1.0" or "11.0"). With str
    methods, what ``(?<![\\d.])TOKEN(?![\\d]|\\.\\d)`` (``words``: ``(?<![\\w.])TOKEN(?!\\.?\\d)(?!\\w)``) finds,
    without compiling a pattern per token (``\\d`` is ``str.isdecimal``, ``\\w`` ``str.isalnum`` or ``_``)."""

    def inside(char: str) -> bool:
        return (char.isalnum() or char == "_") if words else char.isdecimal()

    start = text.find(token)
    while start >= 0:
        end = start + len(token)
        before, after = text[start - 1 : start], text[end : end + 1]
        if not (
            before == "." or inside(before) or inside(after) or (after == "." and text[end + 1 : end + 2].isdecimal())
        ):
            return True
        start = text.find(token, start + 1)
    return False
