"""Whether a commit's unified diff changes a range of lines, and where the range lands when it does not."""

from __future__ import annotations

import re
from dataclasses import dataclass

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass(frozen=True)
class Lines:
    """An inclusive range of line numbers in one version of a file."""

    start: int
    end: int


def follow(patch: str, lines: Lines) -> Lines | None:
    """None when the patch removes or replaces a line of ``lines`` or inserts a line inside the range;
    otherwise the range's line numbers after the patch (moved by the lines added or removed above it)."""
    shift = 0
    old = new = 0
    for text in patch.splitlines():
        header = _HUNK.match(text)
        if header:
            old, new = int(header.group(1)), int(header.group(3))
            if header.group(2) == "0":  # a pure insertion's header names the line it follows
                old += 1
            continue
        if not old:
            continue  # text before the first hunk header
        if text.startswith("-"):
            if lines.start <= old <= lines.end:
                return None
            if old < lines.start:
                shift -= 1
            old += 1
        elif text.startswith("+"):
            if lines.start < old <= lines.end:
                return None
            if old <= lines.start:
                shift += 1
            new += 1
        elif not text.startswith("\\"):  # "\ No newline at end of file" is no line
            old += 1
            new += 1
    return Lines(lines.start + shift, lines.end + shift)
