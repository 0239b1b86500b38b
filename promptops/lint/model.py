"""The values lint passes around: levels, findings, the rule base class and the lint context (spans: ``spans``).

Value types are NamedTuples rather than frozen dataclasses: lint runs as a short-lived process in pre-commit,
and a NamedTuple class costs a fraction of a frozen dataclass to create at import time.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator, Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from promptops.core.findings import Span
from promptops.core.versioning import PromptVersion, SchemaVersion

if TYPE_CHECKING:  # annotations only: subject loads Jinja and the renderer, which findings never need
    from promptops.core.lock import ReleaseLock
    from promptops.lint.subject import Kind, Subject


class Level(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Finding(NamedTuple):
    code: str
    name: str
    level: Level
    file: str  # repo-relative, "/" separators
    span: Span
    message: str

    def sort_key(self) -> tuple[str, Span, str, str]:
        return (self.file, self.span, self.code, self.message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "level": str(self.level),
            "file": self.file,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "message": self.message,
        }


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


class Rule:
    """One lint rule. Subclasses set ``code``, ``name``, ``level`` and ``kinds``, and implement ``check``.

    The class docstring is the rule's documentation: its first line is the summary shown in SARIF and
    ``promptops lint --explain``, and the rest shows a failing and a passing example.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    level: ClassVar[Level] = Level.ERROR
    kinds: ClassVar[frozenset[Kind]]  # which subjects the rule checks (see Subject.kind)

    @classmethod
    def summary(cls) -> str:
        return cls.doc().split("\n", 1)[0]

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or cls.name)

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        raise NotImplementedError

    def finding(self, subject: Subject, span: Span, message: str) -> Finding:
        return Finding(self.code, self.name, self.level, subject.rel, span, message)
