"""The rule registry: one class per rule, in code order."""

from __future__ import annotations

from collections.abc import Iterator

from promptops.lint.model import Finding, Level, LintContext, Rule
from promptops.lint.rules.contract import PinnedVersions
from promptops.lint.rules.fields import EnumSets, OptionalFields, RequiredFields
from promptops.lint.rules.instructions import ChangedFilesOnly, OmitUncertain, StrictJson
from promptops.lint.rules.release import NoHeadTemplate, ReleasedArtifactModified
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
    UnusedSuppression(),
)
RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in RULES}
UNSUPPRESSIBLE = frozenset({TemplateUnreadable.code})

__all__ = ["RULES", "RULES_BY_CODE", "UNSUPPRESSIBLE", "UnusedSuppression"]
