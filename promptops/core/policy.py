"""The parser policy: which versions a parser accepts and how much input it reads.

Policies are plain values. A contract supplies the defaults (``contract.yaml``), a release or a rollout arm may
override them, and the CLI builds one from flags; the library never reads the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, TypeVar

import msgspec

from promptops.core.versioning import PromptVersion, SchemaVersion

V = TypeVar("V", SchemaVersion, PromptVersion)

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
DEFAULT_MAX_DEPTH = 256


class Limits(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Inputs beyond these are rejected (``too_large``, ``too_deep``) before any parsing work (``limits:``)."""

    max_bytes: Annotated[int, msgspec.Meta(ge=1)] = DEFAULT_MAX_BYTES
    max_depth: Annotated[int, msgspec.Meta(ge=1)] = DEFAULT_MAX_DEPTH


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
    limits: Limits = Limits()  # noqa: RUF009  (a frozen Struct: immutable, safe to share)

    def with_overrides(
        self,
        *,
        schema_floor: SchemaVersion | str | None = None,
        prompt_version: PromptVersion | str | None = None,
        allow_prompt_patch_drift: bool | None = None,
    ) -> ParserPolicy:
        """This policy with some values replaced; versions may be given as text (``"2.1.0"``), which is parsed
        (VersionError when malformed). Any other type is a TypeError, never a policy that silently rejects."""
        changes: dict[str, object] = {}
        if schema_floor is not None:
            changes["schema_floor"] = _version(schema_floor, SchemaVersion, "schema_floor")
        if prompt_version is not None:
            changes["prompt_version"] = _version(prompt_version, PromptVersion, "prompt_version")
        if allow_prompt_patch_drift is not None:
            drift: object = allow_prompt_patch_drift  # typed bool, but callers are not always typed
            if not isinstance(drift, bool):
                raise TypeError(f"allow_prompt_patch_drift must be a bool, not {type(drift).__name__}")
            changes["allow_prompt_patch_drift"] = allow_prompt_patch_drift
        return replace(self, **changes)  # type: ignore[arg-type]


def _version(value: object, kind: type[V], name: str) -> V:
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        return kind.parse(value)
    raise TypeError(f"{name} must be a {kind.__name__} or its text (e.g. '2.1.0'), not {type(value).__name__}")
