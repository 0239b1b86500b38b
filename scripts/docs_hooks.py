"""MkDocs hooks (mkdocs.yml ``hooks:``): pages generated from the code at build time, so they cannot drift.

The ``<!-- lint-rules -->`` marker (in ``lint-rules.md``) becomes the reference of every lint rule, from the
rules' own docstrings (what ``promptops lint --explain CODE`` prints). The CLI reference comes from the
mkdocs-click extension and the library API from mkdocstrings; these rules are plain classes, so a hook renders
them.
"""

from __future__ import annotations

import re
from typing import Any

LINT_MARKER = "<!-- lint-rules -->"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if LINT_MARKER in markdown:
        markdown = markdown.replace(LINT_MARKER, lint_rules_markdown())
    return markdown


def lint_rules_markdown() -> str:
    """One section per rule: code, name, level, the file kinds it checks, then its documentation."""
    from promptops.lint import RULES  # imported at build time: the installed package's rules

    rows = ["| code | name | level | summary |", "| --- | --- | --- | --- |"]
    sections = []
    for rule in RULES:
        anchor = rule.code.lower()
        rows.append(f"| [{rule.code}](#{anchor}) | `{rule.name}` | {rule.level} | {rule.summary()} |")
        kinds = ", ".join(sorted(str(kind) for kind in rule.kinds))
        sections.append(
            f"## {rule.code} `{rule.name}` {{#{anchor}}}\n\n"
            f"**Level:** {rule.level} · **checks:** {kinds} templates\n\n{rst_to_markdown(rule.doc())}\n"
        )
    return "\n".join(rows) + "\n\n" + "\n".join(sections)


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
            indent = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
            out += ["", "```jinja", *(b[indent:] for b in block), "```", ""]
            continue
        out.append(_inline(line))
        index += 1
    return "\n".join(out)


def _inline(line: str) -> str:
    return re.sub(r"``(.+?)``", r"`\1`", line)
