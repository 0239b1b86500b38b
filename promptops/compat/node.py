"""The normalized form of a JSON Schema that the diff engine walks.

A ``Node`` holds one subschema's validation keywords in canonical form: annotations are gone, ``type`` is
a set (``number`` absorbs ``integer``), ``const`` is a one-element ``enum``, draft-04 boolean exclusive bounds
are folded into ``Bound``, numbers are exact ``Fraction`` values, defaults (``minLength: 0``,
``uniqueItems: false``, ``additionalProperties: true``...) are absent. Local ``$ref`` targets become shared
nodes, so a recursive schema is a cyclic graph; nodes compare by identity, never by value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

JSON_TYPES = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})
NUMERIC = frozenset({"integer", "number"})

# Keyword families: the JSON types each group of keywords constrains. A keyword only matters when its family's
# types are allowed, so normalization drops, and the differ skips, keywords of types the schema excludes.
FAMILIES: dict[str, frozenset[str]] = {
    "numeric": NUMERIC,
    "string": frozenset({"string"}),
    "array": frozenset({"array"}),
    "object": frozenset({"object"}),
}


def expand_types(types: frozenset[str] | None) -> frozenset[str]:
    """The concrete type set, with ``number`` spelled out as integer and non-integer numbers."""
    if types is None:
        return JSON_TYPES
    return types | {"integer"} if "number" in types else types


def canonical_types(types: frozenset[str]) -> frozenset[str]:
    return types - {"integer"} if "number" in types else types


def allows(types: frozenset[str] | None, family: str) -> bool:
    return types is None or bool(types & FAMILIES[family])


@dataclass(frozen=True)
class Bound:
    """A numeric bound: ``value`` itself is allowed unless ``exclusive``."""

    value: Fraction
    exclusive: bool = False

    def looser_lower(self, other: Bound) -> bool:
        """As a lower bound, does this one allow strictly more numbers than ``other``?"""
        nudged = self.value == other.value and other.exclusive and not self.exclusive
        return self.value < other.value or nudged

    def looser_upper(self, other: Bound) -> bool:
        nudged = self.value == other.value and other.exclusive and not self.exclusive
        return self.value > other.value or nudged

    def to_dict(self, keyword: str) -> dict[str, Any]:
        """``{"minimum": 3}`` or ``{"exclusiveMinimum": 3}`` for keyword ``minimum`` (draft 6+ spelling)."""
        name = f"exclusive{keyword[0].upper()}{keyword[1:]}" if self.exclusive else keyword
        return {name: number_json(self.value)}


def number_json(value: Fraction) -> int | float:
    return int(value) if value.denominator == 1 else float(value)


def to_fraction(value: Any) -> Fraction:
    """An exact value for a JSON number; floats go through their shortest repr, so 0.1 is 1/10."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"not a number: {value!r}")
    return Fraction(value) if isinstance(value, int) else Fraction(repr(value))


@dataclass(eq=False)
class Node:
    """One normalized subschema. Absent keywords mean "no constraint"; ``never`` means nothing validates."""

    label: str = "#"  # JSON pointer of the subschema in its document (for messages and debugging)
    never: bool = False
    types: frozenset[str] | None = None  # None: every type
    enum: tuple[Any, ...] | None = None  # canonical order; when set, the exact instance set (see simplify)
    # numbers
    minimum: Bound | None = None
    maximum: Bound | None = None
    multiple_of: Fraction | None = None
    # strings
    min_length: int = 0
    max_length: int | None = None
    pattern: str | None = None
    format: str | None = None
    # arrays: prefix[i] constrains position i, items every later position (None: anything)
    prefix: tuple[Node, ...] = ()
    items: Node | None = None
    min_items: int = 0
    max_items: int | None = None
    unique_items: bool = False
    # objects: additional constrains names neither properties nor pattern_properties match (None: anything)
    properties: dict[str, Node] = field(default_factory=dict)
    pattern_properties: dict[str, Node] = field(default_factory=dict)
    additional: Node | None = None
    required: frozenset[str] = frozenset()
    min_properties: int = 0
    max_properties: int | None = None
    # combinators that normalization could not fold into the keywords above
    all_of: tuple[Node, ...] = ()
    any_of: tuple[Node, ...] | None = None
    one_of: tuple[Node, ...] | None = None
    # keywords the engine does not understand, with their raw values
    unknown: dict[str, Any] = field(default_factory=dict)

    def is_any(self) -> bool:
        """True when the node accepts every JSON value (``{}`` or ``true``)."""
        return not (
            self.never
            or self.types is not None
            or self.enum is not None
            or self.unknown
            or self.all_of
            or self.any_of is not None
            or self.one_of is not None
            or self.has_family_keywords("numeric")
            or self.has_family_keywords("string")
            or self.has_family_keywords("array")
            or self.has_family_keywords("object")
        )

    def has_family_keywords(self, family: str) -> bool:
        if family == "numeric":
            return self.minimum is not None or self.maximum is not None or self.multiple_of is not None
        if family == "string":
            return bool(
                self.min_length or self.max_length is not None or self.pattern is not None or self.format is not None
            )
        if family == "array":
            return bool(
                self.prefix
                or self.items is not None
                or self.min_items
                or self.max_items is not None
                or self.unique_items
            )
        return bool(
            self.properties
            or self.pattern_properties
            or self.additional is not None
            or self.required
            or self.min_properties
            or self.max_properties is not None
        )

    def clear_family(self, family: str) -> None:
        if family == "numeric":
            self.minimum = self.maximum = self.multiple_of = None
        elif family == "string":
            self.min_length, self.max_length, self.pattern, self.format = 0, None, None, None
        elif family == "array":
            self.prefix, self.items, self.unique_items = (), None, False
            self.min_items, self.max_items = 0, None
        else:
            self.properties, self.pattern_properties, self.additional = {}, {}, None
            self.required, self.min_properties, self.max_properties = frozenset(), 0, None

    def make_never(self) -> None:
        """Make this node accept nothing, keeping its identity (other nodes may share it)."""
        fresh = Node(label=self.label, never=True)
        self.__dict__.update(fresh.__dict__)

    def shallow_copy(self, **changes: Any) -> Node:
        copy = Node()
        copy.__dict__.update(self.__dict__)
        copy.properties = dict(self.properties)
        copy.pattern_properties = dict(self.pattern_properties)
        copy.unknown = dict(self.unknown)
        copy.__dict__.update(changes)
        return copy


def never_node(label: str = "#") -> Node:
    return Node(label=label, never=True)
