"""Second normalization pass: fold combinators into plain keywords and canonicalize, preserving meaning.

Every rewrite here keeps the set of valid instances exactly the same, so two schemas that differ only in how
they say something (``allOf`` of pieces vs one object, ``anyOf`` of single types vs a ``type`` array,
``exclusiveMinimum: 0`` vs ``minimum: 1`` on integers, a ``type`` next to an enum) end up as the same node:

- ``allOf`` conjuncts, and single-branch ``anyOf``/``oneOf``, are intersected into their parent when the
  result is expressible as one node (``intersect``); otherwise they stay as combinators.
- ``anyOf``/``oneOf`` whose branches have pairwise disjoint types become one node with a type union.
- integer-only bounds are rounded to integers; keywords of excluded types are dropped; a keyword family that
  can never be satisfied (``minLength > maxLength``...) removes its types; no type left means ``never``.
- an enum is filtered through the rest of its schema and then *is* the instance set, so the other keywords
  are dropped (unless an unknown keyword makes filtering undecidable).

Nodes on the current traversal path (inside a ``$ref`` cycle) are never merged: their meaning is not final.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from promptops.compat.evaluate import accepts, name_matches
from promptops.compat.node import (
    FAMILIES,
    JSON_TYPES,
    NUMERIC,
    Bound,
    Node,
    allows,
    canonical_types,
    expand_types,
    never_node,
)
from promptops.core.shape import json_equal, json_type_of

_FINITE_TYPES: dict[str, tuple[Any, ...]] = {"null": (None,), "boolean": (False, True)}


def simplify(root: Node) -> Node:
    _Simplifier().visit(root)
    return root


def conjoin(parts: list[Node]) -> Node:
    """One node for the intersection of already simplified nodes (an allOf where it cannot be folded)."""
    simplifier = _Simplifier()
    base, kept = parts[0], []
    for part in parts[1:]:
        merged = simplifier.intersect(base, part)
        if merged is None:
            kept.append(part)
        else:
            base = merged
    return base.shallow_copy(all_of=base.all_of + tuple(kept)) if kept else base


class _Simplifier:
    def __init__(self) -> None:
        self._done: set[int] = set()
        self._active: set[int] = set()
        self._meeting: set[tuple[int, int]] = set()  # intersections in progress (recursive schemas)

    def visit(self, node: Node) -> None:
        if id(node) in self._done or id(node) in self._active:
            return
        self._active.add(id(node))
        for child in _children(node):
            self.visit(child)
        self._fold(node)
        self._active.discard(id(node))
        self._done.add(id(node))

    # -- combinators -----------------------------------------------------------------------------------------

    def _fold(self, node: Node) -> None:
        if node.additional is not None and node.additional.is_any():
            node.additional = None
        if node.items is not None and node.items.is_any():
            node.items = None
        conjuncts = list(node.all_of)
        for key in ("any_of", "one_of"):
            branches = getattr(node, key)
            if branches is None:
                continue
            live = [b for b in branches if not b.never]
            if key == "any_of" and any(b.is_any() for b in live):
                setattr(node, key, None)
                continue
            if not live:
                node.make_never()
                return
            union = live[0] if len(live) == 1 else self._union(live)
            if union is not None:
                conjuncts.append(union)
                setattr(node, key, None)
            else:
                setattr(node, key, tuple(live))
        base = node.shallow_copy(all_of=())
        kept: list[Node] = []
        for conjunct in conjuncts:
            merged = self.intersect(base, conjunct)
            if merged is None:
                kept.append(conjunct)
            else:
                base = merged
        base.label = node.label
        base.all_of = tuple(kept)
        node.__dict__.update(base.__dict__)
        self._finalize(node)

    def _union(self, branches: list[Node]) -> Node | None:
        """One node equal to the union of ``branches`` when their types are pairwise disjoint, else None."""
        seen: set[str] = set()
        for branch in branches:
            if (
                branch.types is None
                or branch.unknown
                or branch.all_of
                or branch.any_of is not None
                or branch.one_of is not None
                or id(branch) in self._active
            ):
                return None
            types = expand_types(branch.types)
            if types & seen:
                return None
            seen |= types
        enums = [b.enum for b in branches]
        if any(e is not None for e in enums) and None in enums:
            enums = [e if e is not None else _finite_values(b) for e, b in zip(enums, branches, strict=True)]
            if None in enums:
                return None
        union = Node(label=branches[0].label, types=canonical_types(frozenset(seen)))
        if enums[0] is not None:
            union.enum = tuple(v for e in enums for v in e or ())
        for branch in branches:
            for family in FAMILIES:
                if allows(branch.types, family):
                    _copy_family(branch, union, family)
        self._finalize(union)
        return union

    def intersect(self, a: Node, b: Node) -> Node | None:
        """A node accepting exactly what both accept, or None when one node cannot express it."""
        pair = (id(a), id(b))
        if id(a) in self._active or id(b) in self._active or pair in self._meeting:
            return None
        self._meeting.add(pair)
        try:
            return self._intersect(a, b)
        finally:
            self._meeting.discard(pair)

    def _intersect(self, a: Node, b: Node) -> Node | None:
        if a.never or b.never:
            return never_node(a.label)
        if b.is_any():
            return a.shallow_copy()
        if a.is_any():
            return b.shallow_copy(label=a.label)
        out = a.shallow_copy()
        met = self._meet_scalars(out, b) and self._meet_arrays(out, a, b) and self._meet_objects(out, a, b)
        if not met:
            return None
        out.all_of = a.all_of + b.all_of
        for key in ("any_of", "one_of"):
            theirs = getattr(b, key)
            if theirs is not None:
                if getattr(out, key) is None:
                    setattr(out, key, theirs)
                else:
                    wrapper = Node(label=b.label)
                    setattr(wrapper, key, theirs)
                    out.all_of += (wrapper,)
        for name, value in b.unknown.items():
            if name in out.unknown and not json_equal(out.unknown[name], value):
                return None
            out.unknown[name] = value
        self._finalize(out)
        return out

    def _meet(self, x: Node | None, y: Node | None) -> tuple[bool, Node | None]:
        if x is None or y is None or x is y:
            return True, (y if x is None else x)
        merged = self.intersect(x, y)
        return merged is not None, merged

    def _meet_scalars(self, out: Node, b: Node) -> bool:
        if out.types is None or b.types is None:
            out.types = b.types if out.types is None else out.types
        else:
            out.types = canonical_types(expand_types(out.types) & expand_types(b.types))
        if out.enum is not None and b.enum is not None:
            out.enum = tuple(v for v in out.enum if any(json_equal(v, w) for w in b.enum))
        elif b.enum is not None:
            out.enum = b.enum
        if b.minimum is not None and (out.minimum is None or out.minimum.looser_lower(b.minimum)):
            out.minimum = b.minimum
        if b.maximum is not None and (out.maximum is None or out.maximum.looser_upper(b.maximum)):
            out.maximum = b.maximum
        if b.multiple_of is not None:
            mine = out.multiple_of
            out.multiple_of = b.multiple_of if mine is None else _lcm(mine, b.multiple_of)
        out.min_length = max(out.min_length, b.min_length)
        out.max_length = _min(out.max_length, b.max_length)
        for key in ("pattern", "format"):
            mine, theirs = getattr(out, key), getattr(b, key)
            if mine is not None and theirs is not None and mine != theirs:
                return False  # two different patterns: no single pattern says both
            setattr(out, key, mine if mine is not None else theirs)
        return True

    def _meet_arrays(self, out: Node, a: Node, b: Node) -> bool:
        prefix: list[Node] = []
        for index in range(max(len(a.prefix), len(b.prefix))):
            ok, merged = self._meet(
                a.prefix[index] if index < len(a.prefix) else a.items,
                b.prefix[index] if index < len(b.prefix) else b.items,
            )
            if not ok:
                return False
            prefix.append(merged if merged is not None else Node(label=a.label))
        ok, items = self._meet(a.items, b.items)
        if not ok:
            return False
        out.prefix, out.items = tuple(prefix), items
        out.min_items = max(a.min_items, b.min_items)
        out.max_items = _min(a.max_items, b.max_items)
        out.unique_items = a.unique_items or b.unique_items
        return True

    def _meet_objects(self, out: Node, a: Node, b: Node) -> bool:
        # additionalProperties depends on the properties next to it, so only merge when one side's extra names
        # are unconstrained and its names are all named by the other side too.
        def plain(n: Node) -> bool:
            return not n.pattern_properties and n.additional is None

        if plain(b) and (plain(a) or set(b.properties) <= set(a.properties)):
            keep = a
        elif plain(a) and set(a.properties) <= set(b.properties):
            keep = b
        else:
            return False
        properties = dict(a.properties)
        for name, sub in b.properties.items():
            ok, merged = self._meet(properties.get(name), sub)
            if not ok or merged is None:
                return False
            properties[name] = merged
        out.properties = properties
        out.pattern_properties = dict(keep.pattern_properties)
        out.additional = keep.additional
        out.required = a.required | b.required
        out.min_properties = max(a.min_properties, b.min_properties)
        out.max_properties = _min(a.max_properties, b.max_properties)
        return True

    # -- canonical form --------------------------------------------------------------------------------------

    def _finalize(self, node: Node) -> None:
        if node.never:
            return
        if node.types is not None and expand_types(node.types) & NUMERIC == {"integer"}:
            _integer_bounds(node)
        _array_bounds(node)
        impossible = [family for family in FAMILIES if allows(node.types, family) and _empty(node, family)]
        if impossible:
            types = expand_types(node.types)
            for family in impossible:
                types -= FAMILIES[family]
            node.types = canonical_types(types)
        if node.types is not None:
            if not node.types:
                node.make_never()
                return
            if expand_types(node.types) == JSON_TYPES:
                node.types = None
        for family in FAMILIES:
            if not allows(node.types, family):
                node.clear_family(family)
        if node.enum is not None:
            self._exact_enum(node)

    def _exact_enum(self, node: Node) -> None:
        assert node.enum is not None
        rest = node.shallow_copy(enum=None, format=None)  # enum values are compared literally (see README)
        verdicts = [accepts(rest, value, check_format=False) for value in node.enum]
        kept = tuple(v for v, verdict in zip(node.enum, verdicts, strict=True) if verdict is not False)
        if not kept:
            node.make_never()
        elif None not in verdicts and not any(id(c) in self._active for c in _children(node)):
            types = canonical_types(frozenset(json_type_of(v) for v in kept))
            node.__dict__.update(Node(label=node.label, enum=kept, types=types).__dict__)
        else:
            node.enum = kept


def _children(node: Node) -> list[Node]:
    out = [*node.properties.values(), *node.pattern_properties.values(), *node.prefix, *node.all_of]
    out += [c for c in (node.additional, node.items) if c is not None]
    out += [*(node.any_of or ()), *(node.one_of or ())]
    return out


def _finite_values(node: Node) -> tuple[Any, ...] | None:
    """The values of a node whose types are only null/boolean (so it has no other keywords), else None."""
    if node.types is None or not node.types <= _FINITE_TYPES.keys():
        return None
    return tuple(v for t in sorted(node.types) for v in _FINITE_TYPES[t])


def _copy_family(source: Node, target: Node, family: str) -> None:
    fields = {
        "numeric": ("minimum", "maximum", "multiple_of"),
        "string": ("min_length", "max_length", "pattern", "format"),
        "array": ("prefix", "items", "min_items", "max_items", "unique_items"),
        "object": ("properties", "pattern_properties", "additional", "required", "min_properties", "max_properties"),
    }[family]
    for name in fields:
        setattr(target, name, getattr(source, name))


def _integer_bounds(node: Node) -> None:
    low, high = node.minimum, node.maximum
    if low is not None:
        value = math.floor(low.value) + 1 if low.exclusive else math.ceil(low.value)
        node.minimum = Bound(Fraction(value))
    if high is not None:
        value = math.ceil(high.value) - 1 if high.exclusive else math.floor(high.value)
        node.maximum = Bound(Fraction(value))
    if node.multiple_of is not None and (1 / node.multiple_of).denominator == 1:
        node.multiple_of = None  # every integer is a multiple of 1/k


def _array_bounds(node: Node) -> None:
    """A position that accepts nothing caps the length: ``items: false`` after a tuple is ``maxItems``."""
    blocked = next((i for i, p in enumerate(node.prefix) if p.never), None)
    if blocked is None and node.items is not None and node.items.never:
        blocked, node.items = len(node.prefix), None
    if blocked is not None:
        node.max_items = blocked if node.max_items is None else min(node.max_items, blocked)
    if node.max_items is not None:
        node.prefix = node.prefix[: node.max_items]  # positions no array can reach
        node.unique_items = node.unique_items and node.max_items > 1


def _empty(node: Node, family: str) -> bool:
    """Can no value of this family's types satisfy the node's keywords of that family?"""
    if family == "numeric":
        low, high = node.minimum, node.maximum
        return (
            low is not None
            and high is not None
            and (low.value > high.value or (low.value == high.value and (low.exclusive or high.exclusive)))
        )
    if family == "string":
        return node.max_length is not None and node.min_length > node.max_length
    if family == "array":
        return node.max_items is not None and node.min_items > node.max_items
    if node.max_properties is not None and (
        node.min_properties > node.max_properties or len(node.required) > node.max_properties
    ):
        return True
    return any(_forbidden(node, name) for name in node.required)


def _forbidden(node: Node, name: str) -> bool:
    """Is property ``name`` certain to fail whatever its value (so requiring it rules out objects)?"""
    if name in node.properties:
        return node.properties[name].never
    hits = [name_matches(p, name) for p in node.pattern_properties]
    if None in hits:
        return False
    if any(hits):
        return any(s.never for p, s in node.pattern_properties.items() if name_matches(p, name))
    return node.additional is not None and node.additional.never


def _lcm(a: Fraction, b: Fraction) -> Fraction:
    return Fraction(math.lcm(a.numerator, b.numerator), math.gcd(a.denominator, b.denominator))


def _min(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    return a if b is None else min(a, b)
