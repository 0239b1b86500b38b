"""The one error the compatibility engine raises: a schema it cannot read."""

from __future__ import annotations

from promptops.core.errors import PromptopsError


class SchemaInputError(PromptopsError):
    """A schema file is unreadable, not JSON, not a valid JSON Schema, or has a ``$ref`` that points nowhere.

    The message is one line and starts with the file name (and line/column for JSON syntax errors).
    """

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"{source}: {problem}")
