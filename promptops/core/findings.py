"""What lint and ``release check`` report: spans in a source, levels, findings and the base of their rules."""

from __future__ import annotations

import inspect
from enum import StrEnum
from typing import Any, ClassVar, NamedTuple


class Span(NamedTuple):
    """A range in the template source: 1-based lines and columns, end column exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    @classmethod
    def point(cls, line: int, column: int = 1, length: int = 1) -> Span:
        return cls(line, column, line, column + max(length, 1))


FILE_START = Span.point(1)


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


class Check:
    """A kind of finding: its code, name and level; the class docstring documents it (first line: the summary
    SARIF and ``--explain`` show). lint's rules and ``release check``'s problems are Checks."""

    code: ClassVar[str]
    name: ClassVar[str]
    level: ClassVar[Level] = Level.ERROR

    @classmethod
    def summary(cls) -> str:
        return cls.doc().split("\n", 1)[0]

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or cls.name)
