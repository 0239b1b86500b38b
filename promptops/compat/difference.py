"""What the diff engine reports: typed differences, each with its three compatibility verdicts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any


class Change(StrEnum):
    """The semver class of a schema change (docs/compat.md), ordered patch < minor < major."""

    PATCH = "patch"
    MINOR = "minor"
    MAJOR = "major"

    @property
    def rank(self) -> int:
        return ("patch", "minor", "major").index(self.value)

    @classmethod
    def of(cls, backward: bool, forward: bool, forward_tolerant: bool) -> Change:
        """patch: the instance set is unchanged; minor: B and F_tol; major: anything else."""
        if backward and forward:
            return cls.PATCH
        if backward and forward_tolerant:
            return cls.MINOR
        return cls.MAJOR


class Kind(StrEnum):
    """Every difference the engine reports. Values are the ``kind`` strings of ``compat diff`` output."""

    SCHEMA_BECAME_EMPTY = "schema_became_empty"
    SCHEMA_BECAME_SATISFIABLE = "schema_became_satisfiable"
    TYPE_WIDENED = "type_widened"
    TYPE_NARROWED = "type_narrowed"
    TYPE_CHANGED = "type_changed"
    ENUM_ADDED = "enum_added"
    ENUM_REMOVED = "enum_removed"
    ENUM_EXTENDED = "enum_extended"
    ENUM_NARROWED = "enum_narrowed"
    ENUM_CHANGED = "enum_changed"
    MINIMUM_ADDED = "minimum_added"
    MINIMUM_REMOVED = "minimum_removed"
    MINIMUM_INCREASED = "minimum_increased"
    MINIMUM_DECREASED = "minimum_decreased"
    MAXIMUM_ADDED = "maximum_added"
    MAXIMUM_REMOVED = "maximum_removed"
    MAXIMUM_INCREASED = "maximum_increased"
    MAXIMUM_DECREASED = "maximum_decreased"
    MULTIPLE_OF_ADDED = "multiple_of_added"
    MULTIPLE_OF_REMOVED = "multiple_of_removed"
    MULTIPLE_OF_REDUCED = "multiple_of_reduced"
    MULTIPLE_OF_EXPANDED = "multiple_of_expanded"
    MULTIPLE_OF_CHANGED = "multiple_of_changed"
    MIN_LENGTH_ADDED = "min_length_added"
    MIN_LENGTH_REMOVED = "min_length_removed"
    MIN_LENGTH_INCREASED = "min_length_increased"
    MIN_LENGTH_DECREASED = "min_length_decreased"
    MAX_LENGTH_ADDED = "max_length_added"
    MAX_LENGTH_REMOVED = "max_length_removed"
    MAX_LENGTH_INCREASED = "max_length_increased"
    MAX_LENGTH_DECREASED = "max_length_decreased"
    PATTERN_ADDED = "pattern_added"
    PATTERN_REMOVED = "pattern_removed"
    PATTERN_CHANGED = "pattern_changed"
    FORMAT_ADDED = "format_added"
    FORMAT_REMOVED = "format_removed"
    FORMAT_CHANGED = "format_changed"
    MIN_ITEMS_ADDED = "min_items_added"
    MIN_ITEMS_REMOVED = "min_items_removed"
    MIN_ITEMS_INCREASED = "min_items_increased"
    MIN_ITEMS_DECREASED = "min_items_decreased"
    MAX_ITEMS_ADDED = "max_items_added"
    MAX_ITEMS_REMOVED = "max_items_removed"
    MAX_ITEMS_INCREASED = "max_items_increased"
    MAX_ITEMS_DECREASED = "max_items_decreased"
    UNIQUE_ITEMS_ADDED = "unique_items_added"
    UNIQUE_ITEMS_REMOVED = "unique_items_removed"
    PROPERTY_ADDED = "property_added"
    PROPERTY_REMOVED = "property_removed"
    REQUIRED_ADDED = "required_added"
    REQUIRED_REMOVED = "required_removed"
    ADDITIONAL_PROPERTIES_WIDENED = "additional_properties_widened"
    ADDITIONAL_PROPERTIES_NARROWED = "additional_properties_narrowed"
    ADDITIONAL_PROPERTIES_CHANGED = "additional_properties_changed"
    PATTERN_PROPERTY_ADDED = "pattern_property_added"
    PATTERN_PROPERTY_REMOVED = "pattern_property_removed"
    MIN_PROPERTIES_ADDED = "min_properties_added"
    MIN_PROPERTIES_REMOVED = "min_properties_removed"
    MIN_PROPERTIES_INCREASED = "min_properties_increased"
    MIN_PROPERTIES_DECREASED = "min_properties_decreased"
    MAX_PROPERTIES_ADDED = "max_properties_added"
    MAX_PROPERTIES_REMOVED = "max_properties_removed"
    MAX_PROPERTIES_INCREASED = "max_properties_increased"
    MAX_PROPERTIES_DECREASED = "max_properties_decreased"
    ANY_OF_ADDED = "any_of_added"
    ANY_OF_REMOVED = "any_of_removed"
    ANY_OF_BRANCH_ADDED = "any_of_branch_added"
    ANY_OF_BRANCH_REMOVED = "any_of_branch_removed"
    ONE_OF_ADDED = "one_of_added"
    ONE_OF_REMOVED = "one_of_removed"
    ONE_OF_BRANCH_ADDED = "one_of_branch_added"
    ONE_OF_BRANCH_REMOVED = "one_of_branch_removed"
    ALL_OF_SCHEMA_ADDED = "all_of_schema_added"
    ALL_OF_SCHEMA_REMOVED = "all_of_schema_removed"
    UNSUPPORTED_KEYWORD = "unsupported_keyword"


@dataclass(frozen=True)
class Difference:
    """One change between two schemas at one place.

    ``path`` is the instance location in JSONPath style: ``$`` the document, ``.name`` (or ``["odd name"]``) a
    property, ``[*]`` every array item, ``[2]`` a tuple position, ``[3:]`` items after a tuple, ``.*`` the
    properties no ``properties``/``patternProperties`` entry names, ``[/regex/]`` the properties a
    ``patternProperties`` regex matches, and ``<anyOf[1]>`` a branch of a combinator at that location.

    ``backward``: the new schema accepts every document the old one accepted, as far as this difference goes.
    ``forward``: the old schema accepts every document the new one accepts. ``forward_tolerant``: the same,
    with the old schema reading tolerantly (unknown properties ignored).
    """

    kind: Kind
    path: str
    backward: bool
    forward: bool
    forward_tolerant: bool
    message: str
    old: Any = None
    new: Any = None

    @property
    def change(self) -> Change:
        """The class this difference alone forces."""
        return Change.of(self.backward, self.forward, self.forward_tolerant)

    @property
    def reason(self) -> str:
        """Why this difference forces its class, in one sentence."""
        if not self.backward:
            return "the new schema rejects documents the old schema accepted (not backward compatible)"
        if not self.forward_tolerant:
            return "old parsers reject documents the new schema allows, even reading tolerantly"
        if not self.forward:
            return "old parsers accept the new documents only by ignoring unknown properties"
        return "no document changes validity"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": str(self.kind),
            "path": self.path,
            "old": self.old,
            "new": self.new,
            "backward_compatible": self.backward,
            "forward_compatible": self.forward,
            "forward_compatible_tolerant": self.forward_tolerant,
            "change": str(self.change),
            "message": self.message,
        }


def flags(differences: Iterable[Difference]) -> tuple[bool, bool, bool]:
    """(backward, forward, forward_tolerant) over a list of differences: each holds only if all hold."""
    backward = forward = tolerant = True
    for difference in differences:
        backward &= difference.backward
        forward &= difference.forward
        tolerant &= difference.forward_tolerant
    return backward, forward, tolerant


def tolerated(differences: list[Difference]) -> list[Difference]:
    """The differences as seen by a tolerant old reader that ignores the property they sit under."""
    return [d if d.forward_tolerant else replace(d, forward_tolerant=True) for d in differences]


def restricted(differences: list[Difference], *, backward: bool = True, forward: bool = True) -> list[Difference]:
    """The differences with backward and/or forward verdicts forced to False where ``False`` is passed."""
    out = []
    for d in differences:
        b, f = d.backward and backward, d.forward and forward
        out.append(replace(d, backward=b, forward=f, forward_tolerant=d.forward_tolerant and forward))
    return out
