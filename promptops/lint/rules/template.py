"""Rules about the template as a Jinja file: it parses and renders (PO000), uses only provided variables
(PO008), and carries no encoding damage (PO010)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from jinja2 import nodes

from promptops.core.findings import FILE_START, Finding, Span
from promptops.lint.model import LintContext, Rule
from promptops.lint.subject import ALL_KINDS, CONTRACT_KINDS, Subject
from promptops.render import regexes


class TemplateUnreadable(Rule):
    """The template cannot be parsed or rendered, so nothing else about it can be checked.

    A file that cannot be linted never passes: a Jinja syntax error, a render that fails for any reason
    other than an undefined variable (PO008), a head template in ``templates/`` named after no contract.
    PO000 cannot be suppressed or ignored.

    Fails::

        {% if changed_files %}
        Review these files.

    Passes::

        {% if changed_files %}
        Review these files.
        {% endif %}
    """

    code = "PO000"
    name = "template-unreadable"
    kinds = ALL_KINDS

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        if subject.syntax_error is not None:
            error = subject.syntax_error
            line = error.lineno if 0 < error.lineno <= len(subject.lines) else len(subject.lines)
            yield self.finding(subject, subject.line_span(line), f"syntax error: {error.message}")
        if subject.problem is not None:
            yield self.finding(subject, FILE_START, subject.problem)
        failure = subject.render_failure
        if failure is not None and not failure.undefined:
            span = subject.line_span(failure.line) if failure.line else FILE_START
            yield self.finding(subject, span, f"the template does not render: {failure.message}")


class UndefinedVariable(Rule):
    """A variable is used that the render context does not provide.

    The context holds ``changed_files``, ``diff``, ``schema`` (the pinned schema's field rules) and
    ``contract``, plus the pins and whatever the template sets itself. Extra inputs must be declared with a
    representative value under ``[tool.promptops.lint.render-context]`` (and passed with ``--var`` when
    rendering). Checked statically on the source and again on the representative render, which also catches
    undefined attributes such as ``schema.item.propertie``.

    Fails::

        Title of the pull request: {{ pr_title }}

    Passes (with ``render-context = { pr_title = "Fix cache race" }`` in pyproject.toml)::

        Title of the pull request: {{ pr_title }}
    """

    code = "PO008"
    name = "undefined-variable"
    kinds = CONTRACT_KINDS

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        if subject.tree is None or subject.contract is None:
            return
        undeclared = sorted(subject.undeclared)
        first_use: dict[str, int] = {}
        for node in subject.tree.find_all(nodes.Name) if undeclared else ():  # a walk of the whole tree
            if node.ctx == "load" and node.name in subject.undeclared:
                first_use.setdefault(node.name, node.lineno)
        for name in undeclared:
            line = first_use.get(name, 1)
            span = subject.find_in_line(line, rf"\b{re.escape(name)}\b")
            yield self.finding(subject, span, f"variable '{name}' is not provided by the render context")
        failure = subject.render_failure
        if (
            failure is not None
            and failure.undefined
            and not any(f"'{n}' is undefined" in failure.message for n in undeclared)
        ):
            span = subject.line_span(failure.line) if failure.line else FILE_START
            yield self.finding(subject, span, failure.message)


# cp1252 renders bytes 0x80-0x9F as these characters (five of the 32 are unassigned and stay C1 controls).
_CP1252_HIGH = bytes(b for b in range(0x80, 0xA0) if b not in (0x81, 0x8D, 0x8F, 0x90, 0x9D)).decode("cp1252")
_MOJIBAKE = regexes.lazy("[\u00c2-\u00f4][\u0080-\u00bf" + _CP1252_HIGH + "]{1,3}")
_DAMAGE = regexes.lazy("[\ufffd\u0080-\u009f]")


def _as_bytes(text: str) -> bytes | None:
    out = bytearray()
    for char in text:
        try:
            out += char.encode("cp1252")
        except UnicodeEncodeError:
            if ord(char) > 0xFF:
                return None
            out.append(ord(char))
    return bytes(out)


def damage(text: str) -> Iterator[tuple[int, str, str]]:
    """(offset, damaged text, problem) for each mojibake sequence, U+FFFD or stray C1 control in ``text``."""
    if text.isascii():  # every character both patterns look for is non-ASCII
        return
    inside: set[int] = set()
    for match in _MOJIBAKE.finditer(text):
        lead = ord(match[0][0])
        need = 1 if lead < 0xE0 else 2 if lead < 0xF0 else 3
        candidate = match[0][: need + 1]
        raw = _as_bytes(candidate) if len(candidate) == need + 1 else None
        try:
            repaired = raw.decode("utf-8") if raw is not None else None
        except UnicodeDecodeError:
            repaired = None
        if repaired is not None:
            inside.update(range(match.start(), match.start() + len(candidate)))
            yield (
                match.start(),
                candidate,
                f"mojibake '{candidate}' (UTF-8 read as cp1252; probably '{repaired}')",
            )
    for match in _DAMAGE.finditer(text):
        if match.start() in inside:
            continue
        if match[0] == "\ufffd":
            yield (
                match.start(),
                match[0],
                "replacement character U+FFFD (text was decoded with errors upstream)",
            )
        else:
            yield match.start(), match[0], f"C1 control character U+{ord(match[0]):04X} (encoding damage)"


class EncodingDamage(Rule):
    """The template, or the text it renders, carries encoding damage.

    Mojibake is UTF-8 that was read as cp1252 or latin-1 somewhere (``â€¦`` for ``…``, ``Ã©`` for ``é``,
    ``Ã—`` for the multiplication sign); U+FFFD replacement characters and stray C1 control characters mean
    text was decoded with errors. Models copy such text into their answers. A file that is not valid UTF-8
    is reported here at its first bad byte and not linted further. Checked on the source and on the
    representative render (schema descriptions reach the prompt through the partials).

    Fails::

        If in doubt, leave it outâ€¦

    Passes::

        If in doubt, leave it out…
    """

    code = "PO010"
    name = "encoding-damage"
    kinds = ALL_KINDS

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        if subject.undecodable is not None:
            span, message = subject.undecodable
            yield self.finding(subject, span, message)
            return
        seen: set[Span] = set()
        for offset, text, problem in damage(subject.source):
            span = subject.span_of_offset(offset, len(text))
            seen.add(span)
            yield self.finding(subject, span, problem)
        if subject.render is not None:
            for offset, text, problem in damage(subject.render.text):
                span = subject.locate(offset, text)
                if span not in seen:
                    seen.add(span)
                    yield self.finding(subject, span, f"the rendered prompt has {problem}")
