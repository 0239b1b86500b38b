"""The values lint passes around: the rule base class and the lint context (findings: ``promptops.core.findings``).

Value types are NamedTuples rather than frozen dataclasses: lint runs as a short-lived process in pre-commit,
and a NamedTuple class costs a fraction of a frozen dataclass to create at import time.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from promptops.core.findings import Check, Finding, Span
from promptops.core.versioning import PromptVersion, SchemaVersion

if TYPE_CHECKING:  # annotations only: subject loads Jinja and the renderer, which findings never need
    from promptops.core.lock import ReleaseLock
    from promptops.lint.subject import Kind, Subject


class LintContext(NamedTuple):
    """What lint knows beyond the template itself.

    ``released`` maps a contract to its released prompt versions and the schema each was released with;
    ``locks`` holds each contract's whole release lock (``versions/<contract>/releases.yaml``). ``lint``
    reads both from the project's locks (``released`` given here adds to them); without releases PO001
    checks pins against the contract's current policy only.
    ``variables`` holds representative values for extra variables a template may use (config
    ``render-context``); they count as provided for PO008 and are passed to the lint render.
    """

    released: Mapping[str, Mapping[PromptVersion, SchemaVersion]] = MappingProxyType({})
    variables: Mapping[str, Any] = MappingProxyType({})
    locks: Mapping[str, ReleaseLock] = MappingProxyType({})


class Rule(Check):
    """One lint rule. Subclasses set ``code``, ``name``, ``level`` and ``kinds``, and implement ``check``.

    The class docstring is the rule's documentation: its first line is the summary shown in SARIF and
    ``promptops lint --explain``, and the rest shows a failing and a passing example.
    """

    kinds: ClassVar[frozenset[Kind]]  # which subjects the rule checks (see Subject.kind)

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        raise NotImplementedError

    def finding(self, subject: Subject, span: Span, message: str) -> Finding:
        return Finding(self.code, self.name, self.level, subject.rel, span, message)
