"""Where a lint finding points in a template's source.

Its own module so that ``subject``, which computes spans, does not import ``model``, whose ``Rule`` checks a
``Subject``: the dependency runs one way, model -> subject -> spans.
"""

from __future__ import annotations

from typing import NamedTuple


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
