"""Values from files and records, made safe to print: the one escaping every formatter uses.

A template's name, a log record's field or a plan's step name comes from whoever wrote the file, and a pull
request writes files. Printed raw, a newline in one starts a line of its choosing: in a CI log a line that
starts with ``::`` is a workflow command (``::error``, ``::add-mask``, ``::stop-commands``), ANSI escapes
repaint a terminal, and an extra line in ``$GITHUB_OUTPUT`` sets an output. ``one_line`` makes any value one
line that is never a command: every character that is not printable (controls, ANSI escapes, line and
paragraph separators, bidirectional overrides, lone surrogates) is written as its Python escape (``\\n``,
``\\x1b``, ``\\u2028``), a leading ``::`` becomes ``\\x3a:``, and ``##[`` (the runner's older command prefix,
honoured anywhere in a line) becomes ``#\\x23[``. Printable text, non-ASCII letters included, is unchanged, so
an ordinary name prints as itself.
"""

from __future__ import annotations

import re

# Lines the GitHub Actions runner reads as commands: "::name ...::" after leading whitespace, "##[name]" anywhere.
_COMMAND_START = re.compile(r"^(\s*):(?=:)")
_OLD_COMMAND = "##["


def one_line(value: object) -> str:
    """``value`` as text on one line that no CI runner or terminal takes for a command (see the module)."""
    text = value if isinstance(value, str) else str(value)
    if not (text.isprintable() and _OLD_COMMAND not in text and not _COMMAND_START.match(text)):
        text = "".join(ch if ch.isprintable() else _escape(ch) for ch in text)
        text = _COMMAND_START.sub(r"\1\\x3a", text, count=1).replace(_OLD_COMMAND, "#\\x23[")
    return text


def unreadable(problem: BaseException, limit: int = 200) -> str:
    """Why one record could not be read: ``could not be read: Type: message``, whitespace folded, cut to
    ``limit`` characters."""
    text = " ".join(f"{type(problem).__name__}: {problem}".split())
    return f"could not be read: {text if len(text) <= limit else text[: limit - 3] + '...'}"


def _escape(ch: str) -> str:
    if "\ud800" <= ch <= "\udfff":  # a lone surrogate (from surrogateescape-decoded bytes) cannot be encoded
        return f"\\u{ord(ch):04x}"
    return ch.encode("unicode_escape").decode("ascii")


def one_line_cell(value: object) -> str:
    """``one_line`` for Markdown (a table cell, a heading, a job summary line): the characters Markdown acts on
    (``|`` cell borders, backticks, emphasis, links, HTML's ``<``) are backslash-escaped, so the value renders
    as the text it is."""
    return _MARKDOWN.sub(r"\\\g<0>", one_line(value))


_MARKDOWN = re.compile(r"[\\`*_\[\]<>|~&]")
