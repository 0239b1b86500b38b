"""The rule registry: one class per rule, in code order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from promptops.core.findings import Finding, Level
from promptops.lint.model import LintContext, Rule
from promptops.lint.rules.contract import PinnedVersions
from promptops.lint.rules.fields import EnumSets, OptionalFields, RequiredFields, UnstatedConstraints
from promptops.lint.rules.instructions import ChangedFilesOnly, OmitUncertain, StrictJson
from promptops.lint.rules.project import NoHeadTemplate
from promptops.lint.rules.release import ReleasedArtifactModified
from promptops.lint.rules.template import EncodingDamage, TemplateUnreadable, UndefinedVariable
from promptops.lint.subject import ALL_KINDS, Subject


class UnusedSuppression(Rule):
    """A suppression comment that suppresses nothing, or one that is malformed and therefore ignored.

    Line form ``{# promptops: noqa PO004 -- reason #}`` covers the lines of the comment and the line after
    it; file form ``{# promptops: noqa-file PO004 -- reason #}`` covers the whole file. Both must name the
    codes (no blanket noqa) and give a reason after ``--``. A suppression whose code reported nothing there,
    names an unknown code, names PO000 (never suppressible), or lacks a reason is reported here.

    Fails (the template restates every enum set)::

        {# promptops: noqa PO004 -- legacy wording #}
        - `severity` (required): one of `critical`, `high`, `medium`, `low`, `info`

    Passes::

        - `severity` (required): one of `critical`, `high`, `medium`, `low`, `info`
    """

    code = "PO900"
    name = "unused-suppression"
    level = Level.WARNING
    kinds = ALL_KINDS

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        return iter(())  # computed by the engine once every other rule has run (see suppressions.py)


RULES: tuple[Rule, ...] = (
    TemplateUnreadable(),
    PinnedVersions(),
    RequiredFields(),
    OptionalFields(),
    EnumSets(),
    ChangedFilesOnly(),
    OmitUncertain(),
    StrictJson(),
    UndefinedVariable(),
    ReleasedArtifactModified(),
    EncodingDamage(),
    NoHeadTemplate(),
    UnstatedConstraints(),
    UnusedSuppression(),
)
RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in RULES}
UNSUPPRESSIBLE = frozenset({TemplateUnreadable.code})


def reference(rules: Sequence[Rule] = RULES) -> str:
    """The rule reference as Markdown, generated from the rules' docstrings (one section per rule).

    The docstrings are reStructuredText-like: a summary line, paragraphs, and examples introduced by a line
    ending in ``::`` with an indented block; each block becomes a fenced code block. Pass
    ``promptops.release.CHECK_RULES`` for the ``release check`` problems.
    """
    out: list[str] = []
    for rule in rules:
        level = "" if rule.level is Level.ERROR else f" ({rule.level})"
        out += [f"### {rule.code} {rule.name}{level}", ""]
        lines = rule.doc().split("\n")
        index = 0
        while index < len(lines):
            line = lines[index]
            if line.endswith("::"):
                out += [line[:-1].rstrip() if not line.endswith(" ::") else line[:-3], "", "```jinja"]
                index += 1
                block: list[str] = []
                while index < len(lines) and (not lines[index].strip() or lines[index].startswith("    ")):
                    block.append(lines[index][4:])
                    index += 1
                while block and not block[-1].strip():
                    block.pop()
                while block and not block[0].strip():
                    block.pop(0)
                out += [*block, "```", ""]
                continue
            out.append(line)
            index += 1
        while out and not out[-1].strip():
            out.pop()
        out.append("")
    return "\n".join(out)


__all__ = ["RULES", "RULES_BY_CODE", "UNSUPPRESSIBLE", "UnusedSuppression", "reference"]
