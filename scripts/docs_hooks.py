"""MkDocs hooks (mkdocs.yml ``hooks:``): pages generated from the code at build time, so they cannot drift.

The ``<!-- lint-rules -->`` marker (in ``lint-rules.md``) becomes the reference of every lint rule, and of the
release check's problems when promptops has them, from the rules' own docstrings (what ``promptops lint
--explain CODE`` prints). The lint package renders its docstrings itself when it offers
``promptops.lint.rules.reference()``; otherwise this hook renders them from the rule classes. The CLI
reference comes from the mkdocs-click extension and the library API from mkdocstrings.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Sequence
from typing import Any

LINT_MARKER = "<!-- lint-rules -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if LINT_MARKER in markdown:
        markdown = markdown.replace(LINT_MARKER, lint_rules_markdown())
    return markdown


def lint_rules_markdown() -> str:
    """A summary table, then one section per rule: code, name, level, then its documentation."""
    from promptops.lint import RULES  # imported at build time: the installed package's rules

    render = _package_reference() or _reference
    parts = ["## Rules", "", _table(RULES), "", render(RULES)]
    check_rules = _release_check_rules()
    if check_rules:
        parts += [
            "",
            "## Release check",
            "",
            "The problems `promptops release check` reports about a head template against the release lock.",
            "",
            _table(check_rules),
            "",
            render(check_rules),
        ]
    return "\n".join(parts) + "\n"


def _package_reference() -> Callable[[Sequence[Any]], str] | None:
    rules = importlib.import_module("promptops.lint.rules")
    reference = getattr(rules, "reference", None)
    return reference if callable(reference) else None


def _release_check_rules() -> Sequence[Any]:
    try:
        release = importlib.import_module("promptops.release")
    except ImportError:
        return ()
    found = getattr(release, "CHECK_RULES", ())
    return tuple(found)


def _table(rules: Sequence[Any]) -> str:
    rows = ["| code | name | level | summary |", "| --- | --- | --- | --- |"]
    rows += [f"| {r.code} | `{r.name}` | {r.level} | {r.summary()} |" for r in rules]
    return "\n".join(rows)


def _reference(rules: Sequence[Any]) -> str:
    sections = []
    for rule in rules:
        level = "" if str(rule.level) == "error" else f" ({rule.level})"
        sections.append(f"### {rule.code} {rule.name}{level}\n\n{rst_to_markdown(rule.doc())}\n")
    return "\n".join(sections)


def rst_to_markdown(text: str) -> str:
    """The few reStructuredText forms the rule docstrings use: ``literal``, and ``Label::`` followed by an
    indented block (a Jinja example)."""
    out: list[str] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.rstrip().endswith("::"):
            out.append(_inline(line.rstrip()[:-1]))
            index += 1
            block: list[str] = []
            while index < len(lines) and (not lines[index].strip() or lines[index].startswith((" ", "\t"))):
                block.append(lines[index])
                index += 1
            while block and not block[-1].strip():
                block.pop()
            while block and not block[0].strip():
                block.pop(0)
            indent = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
            out += ["", "```jinja", *(b[indent:] for b in block), "```", ""]
            continue
        out.append(_inline(line))
        index += 1
    return "\n".join(out)


def _inline(line: str) -> str:
    return re.sub(r"``(.+?)``", r"`\1`", line)
