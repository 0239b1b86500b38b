"""Suppression comments: ``{# promptops: noqa PO004 -- reason #}`` and ``{# promptops: noqa-file ... #}``.

Comments are found with Jinja's own lexer, so text inside ``{% raw %}`` or string literals is never read as a
suppression. The line form covers the lines the comment spans and the line right after it (a comment usually
sits above what it excuses, or starts the line: at a line's end, trim_blocks would also remove the newline);
the file form covers the whole file. Codes must be named (no blanket noqa) and a
reason must follow ``--``. A malformed suppression is ignored and reported as PO900, as is one that
suppresses nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from jinja2 import Environment, TemplateSyntaxError

from promptops.core.findings import Finding, Span
from promptops.render import regexes

_ANY = regexes.lazy(r"\{#[-+]?\s*promptops\s*:")  # cheap pre-check: most files have no suppression at all
_DIRECTIVE = regexes.lazy(r"\s*promptops\s*:\s*(.*)", re.DOTALL)
_KIND = regexes.lazy(r"(noqa-file|noqa)\b(.*)", re.DOTALL)
_CODE = regexes.lazy(r"PO\d{3}")
_SEPARATOR = regexes.lazy(r"[\s,]+")


class Suppression(NamedTuple):
    codes: tuple[str, ...]
    file_level: bool
    first_line: int
    last_line: int  # inclusive
    span: Span  # the comment's opening, where PO900 points
    reason: str
    used: set[str]  # the codes that suppressed a finding (filled in by ``apply``)

    def covers(self, finding: Finding) -> bool:
        if finding.code not in self.codes:
            return False
        return self.file_level or self.first_line <= finding.span.line <= self.last_line


class Problem(NamedTuple):
    span: Span
    message: str


def read(
    source: str, env: Environment, known: Iterable[str], unsuppressible: Iterable[str]
) -> tuple[list[Suppression], list[Problem]]:
    """The suppressions in ``source``, and the malformed ones (reported as PO900, never applied)."""
    known_codes, never = set(known), set(unsuppressible)
    found: list[Suppression] = []
    problems: list[Problem] = []
    if "promptops" not in source or not _ANY.search(source):  # the str test spares most files the pattern
        return found, problems
    for span, text, end_line in _comments(source, env):
        directive = _DIRECTIVE.match(text)
        if directive is None:
            continue
        kind = _KIND.match(directive[1].strip())
        if kind is None:
            problems.append(
                Problem(
                    span,
                    f"unknown promptops directive {directive[1].strip().split()[:1]!r}: expected 'noqa' or 'noqa-file'",
                )
            )
            continue
        codes_text, separator, reason = kind[2].partition("--")
        tokens = [t for t in _SEPARATOR.split(codes_text.strip()) if t]
        reason = " ".join(reason.split())
        bad = [t for t in tokens if not _CODE.fullmatch(t) or t not in known_codes]
        if not tokens:
            problems.append(Problem(span, "blanket noqa is not allowed: name the rule codes it suppresses"))
        elif bad:
            problems.append(Problem(span, f"unknown rule code {bad[0]!r} in suppression"))
        elif never & set(tokens):
            problems.append(Problem(span, f"{sorted(never & set(tokens))[0]} cannot be suppressed: fix the template"))
        elif not separator or not reason:
            problems.append(
                Problem(
                    span,
                    f"suppression of {', '.join(tokens)} has no reason: "
                    f"write {{# promptops: {kind[1]} {' '.join(tokens)} -- why #}}",
                )
            )
        else:
            found.append(
                Suppression(
                    tuple(dict.fromkeys(tokens)),
                    kind[1] == "noqa-file",
                    span.line,
                    end_line + 1,
                    span,
                    reason,
                    set(),
                )
            )
    return found, problems


def apply(findings: Sequence[Finding], suppressions: Sequence[Suppression]) -> tuple[list[Finding], int]:
    """The findings no suppression covers, and how many were suppressed; marks which codes were used."""
    kept: list[Finding] = []
    suppressed = 0
    for finding in findings:
        covering = [s for s in suppressions if s.covers(finding)]
        for suppression in covering:
            suppression.used.add(finding.code)
        if covering:
            suppressed += 1
        else:
            kept.append(finding)
    return kept, suppressed


def _comments(source: str, env: Environment) -> Iterable[tuple[Span, str, int]]:
    """(span of the comment opening, comment text, line the comment ends on) for each Jinja comment."""
    cursor = 0
    opening: tuple[Span, int] | None = None
    text = ""
    try:
        for lineno, token, value in env.lex(source):
            position = source.find(value, cursor) if value else -1
            if position >= 0:
                cursor = position + len(value)
            if token == "comment_begin" and position >= 0:
                line_start = source.rfind("\n", 0, position) + 1
                column = position - line_start + 1
                opening = (Span(lineno, column, lineno, column + len(value)), lineno)
                text = ""
            elif token == "comment" and opening is not None:
                text = value
            elif token == "comment_end" and opening is not None:
                yield opening[0], text, lineno
                opening = None
    except TemplateSyntaxError:
        return  # the lexer stops at the error; PO000 reports it, and the comments before it still count
