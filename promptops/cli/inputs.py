"""Option types for the files a command reads from the user: bounded, regular files (or ``-``, standard
input) only, decoded as UTF-8 with a one-line error naming the file, line and column (``promptops.core.files``)."""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import click

from promptops.core.files import MAX_INPUT_BYTES, InputError, read_text

if TYPE_CHECKING:
    _TextType = click.ParamType[io.StringIO]
else:  # subscripted for the type checker only: not every supported click makes it subscriptable
    _TextType = click.ParamType


class InputText(_TextType):
    """A text file's content, read when the option is parsed, as a StringIO named like the file."""

    name = "file"

    def __init__(self, limit: int = MAX_INPUT_BYTES) -> None:
        self.limit = limit

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> io.StringIO:
        if isinstance(value, io.StringIO):
            return value
        try:
            stream = io.StringIO(read_text(str(value), limit=self.limit))
        except InputError as problem:
            self.fail(str(problem), param, ctx)
        stream.name = str(value)
        return stream
