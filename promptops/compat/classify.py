"""The semver class of a schema change (docs/compat.md), against one earlier version or a whole major line.

``classify(old, new)`` compares two schemas; ``classify_against(history, new)`` compares the new schema with
every earlier version of a major line and keeps the largest class, so a change that is minor against the
latest release but breaks an older minor (add ``b: string``, remove it, add ``b: integer``) is still major.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from promptops.compat.diff import diff
from promptops.compat.difference import Change, Difference, flags
from promptops.compat.normalize import Schema, normalize
from promptops.compat.policy import DEFAULT_POLICY, CompatPolicy
from promptops.core.versioning import SchemaVersion

SchemaLike = Schema | Mapping[str, Any] | bool


@dataclass(frozen=True)
class Comparison:
    """The differences between two schemas and the verdicts they add up to."""

    differences: tuple[Difference, ...]
    backward_compatible: bool
    forward_compatible: bool  # strict: the old schema as written
    forward_compatible_tolerant: bool  # the old schema reading tolerantly (unknown properties ignored)

    @property
    def change(self) -> Change:
        return Change.of(self.backward_compatible, self.forward_compatible, self.forward_compatible_tolerant)

    @property
    def forcing(self) -> tuple[Difference, ...]:
        """The differences that force the class (none for a patch)."""
        if self.change is Change.PATCH:
            return ()
        return tuple(d for d in self.differences if d.change is self.change)

    def to_dict(self) -> dict[str, Any]:
        """Exactly the ``promptops compat diff --format json`` object (docs/compat.md)."""
        return {
            "change": str(self.change),
            "backward_compatible": self.backward_compatible,
            "forward_compatible": self.forward_compatible,
            "differences": [d.to_dict() for d in self.differences],
        }


@dataclass(frozen=True)
class TransitiveComparison:
    """A new schema compared with every earlier version of one major line (oldest first)."""

    comparisons: tuple[tuple[SchemaVersion, Comparison], ...]

    @property
    def change(self) -> Change:
        return max((c.change for _, c in self.comparisons), key=lambda change: change.rank)

    @property
    def forcing(self) -> tuple[tuple[SchemaVersion, Difference], ...]:
        """(earlier version, difference) pairs that force the class."""
        change = self.change
        return tuple((v, d) for v, c in self.comparisons if c.change is change for d in c.forcing)


def classify(old: SchemaLike, new: SchemaLike, *, policy: CompatPolicy = DEFAULT_POLICY) -> Comparison:
    """Compare two schemas (decoded JSON or already normalized) and classify the change."""
    old_schema, new_schema = normalize(old, source="old"), normalize(new, source="new")
    differences = tuple(diff(old_schema.root, new_schema.root, policy))
    return Comparison(differences, *flags(differences))


def classify_against(
    history: Mapping[SchemaVersion, SchemaLike],
    new: SchemaLike,
    *,
    major: int | None = None,
    policy: CompatPolicy = DEFAULT_POLICY,
) -> TransitiveComparison:
    """Classify ``new`` against every version of ``history`` in major line ``major`` (default: the newest).

    Pass normalized ``Schema`` objects to reuse them across calls. Raises ValueError when the line is empty.
    """
    line = major if major is not None else max((v.major for v in history), default=None)
    earlier = sorted(v for v in history if v.major == line)
    if not earlier:
        raise ValueError(f"no earlier schema version in major line {line}")
    target = normalize(new, source="new")
    return TransitiveComparison(tuple((v, classify(history[v], target, policy=policy)) for v in earlier))
