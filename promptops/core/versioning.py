"""Schema and prompt versions, and version acceptance: same major, minor >= floor
(docs/design.md, Compatibility).

Schema versions are ``MAJOR.MINOR``; prompt versions are ``MAJOR.MINOR[.PATCH]`` with a missing patch read
as 0. Components compare as integers, so ``1.10`` is newer than ``1.2``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from promptops.core.errors import VersionError

_SCHEMA_RE = re.compile(r"([0-9]+)\.([0-9]+)\Z")
_PROMPT_RE = re.compile(r"([0-9]+)\.([0-9]+)(?:\.([0-9]+))?\Z")


class SchemaVersion(NamedTuple):
    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> SchemaVersion:
        match = _SCHEMA_RE.match(text) if isinstance(text, str) else None
        if match is None:
            raise VersionError(f"schema version {text!r} is not MAJOR.MINOR (e.g. 1.0)")
        return cls(int(match[1]), int(match[2]))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


class PromptVersion(NamedTuple):
    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> PromptVersion:
        match = _PROMPT_RE.match(text) if isinstance(text, str) else None
        if match is None:
            raise VersionError(f"prompt version {text!r} is not MAJOR.MINOR[.PATCH] (e.g. 1.0.0)")
        return cls(int(match[1]), int(match[2]), int(match[3] or 0))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


def schema_accepted(floor: SchemaVersion, declared: SchemaVersion) -> bool:
    """Version acceptance: the exact floor or a newer minor in the same major line."""
    return declared.major == floor.major and declared.minor >= floor.minor


def prompt_accepted(pinned: PromptVersion, declared: PromptVersion, *, allow_patch_drift: bool) -> bool:
    """Exact match by default; with patch drift, any patch of the same major.minor."""
    if allow_patch_drift:
        return declared[:2] == pinned[:2]
    return declared == pinned
