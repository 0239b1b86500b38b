"""The parser policy: which versions a parser accepts and how much input it reads.

Policies are plain values. A contract supplies the defaults (``contract.yaml``), a release or a rollout arm may
override them, and the CLI builds one from flags; the library never reads the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from promptops.versioning import PromptVersion, SchemaVersion

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_DEPTH = 256


class Limits(NamedTuple):
    """Inputs beyond these are rejected (``too_large``, ``too_deep``) before any parsing work."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_depth: int = DEFAULT_MAX_DEPTH


@dataclass(frozen=True)
class ParserPolicy:
    """Version acceptance (same major, minor >= floor) and limits for one parser.

    ``schema_floor`` is the required schema version P: a response declaring R is accepted iff R has P's major
    and R.minor >= P.minor. ``prompt_version`` is pinned: exact match, or any patch of the same major.minor
    when ``allow_prompt_patch_drift`` is set.
    """

    schema_floor: SchemaVersion
    prompt_version: PromptVersion
    allow_prompt_patch_drift: bool = False
    limits: Limits = Limits()  # noqa: RUF009  (a NamedTuple: immutable, safe to share)

    def with_overrides(
        self,
        *,
        schema_floor: SchemaVersion | None = None,
        prompt_version: PromptVersion | None = None,
        allow_prompt_patch_drift: bool | None = None,
    ) -> ParserPolicy:
        changes: dict[str, object] = {}
        if schema_floor is not None:
            changes["schema_floor"] = schema_floor
        if prompt_version is not None:
            changes["prompt_version"] = prompt_version
        if allow_prompt_patch_drift is not None:
            changes["allow_prompt_patch_drift"] = allow_prompt_patch_drift
        return replace(self, **changes)  # type: ignore[arg-type]
