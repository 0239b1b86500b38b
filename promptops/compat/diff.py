"""Walk two normalized schemas side by side and emit typed differences.

Each difference carries three verdicts (see ``Difference``); a schema pair is backward compatible when every
difference is, and so on. The walk is sound in one direction only: a ``True`` verdict is a proof (every
document the one side accepts, the other accepts), a ``False`` one may be conservative (patterns compared as
text, combinators the engine cannot line up). Object content models and combinators live in their own
modules, which recurse through the walk they are handed (``walk.Walk``); this one holds the walk, types,
enums, scalar and array keywords, and unknown keywords.

Recursive schemas: a pair of nodes already being compared is assumed compatible when met again (a greatest
fixpoint, which is sound for finite documents); nothing is memoized across the walk, so an assumption made
while trying one ``anyOf`` branch never leaks into another verdict (the bug Confluent fixed with iteration).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from promptops.compat.combinators import compare_combinators
from promptops.compat.difference import Difference, Kind
from promptops.compat.evaluate import accepts
from promptops.compat.node import FAMILIES, Bound, Node, canonical_types, expand_types, number_json
from promptops.compat.objects import compare_objects
from promptops.compat.policy import DEFAULT_POLICY, CompatPolicy
from promptops.compat.walk import ANY, incompatible, keyword_kind, least, most, narrowing, widening
from promptops.core.shape import json_equal

# Unknown keywords that are a plain conjunct of their schema: when both sides carry the same value (and it
# holds no $ref whose target might differ) they constrain both sides alike, so they cannot change a verdict.
# Anything else (unevaluated*, dynamic refs, remote $ref) depends on its surroundings and is always reported.
_CONTEXT_DEPENDENT = frozenset({"unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef", "$ref"})


def diff(old: Node, new: Node, policy: CompatPolicy = DEFAULT_POLICY) -> list[Difference]:
    """All differences between two normalized schema roots (see ``normalize``)."""
    return Differ(policy).compare(old, new, "$")


def _show(values: list[Any]) -> str:
    return ", ".join(json.dumps(v) for v in values)


class Differ:
    """The walk; objects and combinators see it as a ``walk.Walk``, so they need not import this module."""

    def __init__(self, policy: CompatPolicy) -> None:
        self.policy = policy
        self._active: set[tuple[int, int]] = set()
        self._derived: dict[tuple[int, str], Node] = {}  # cached derived nodes, kept alive so ids stay unique

    def derived(self, node: Node, key: str, build: Callable[[], Node]) -> Node:
        """A node computed from ``node`` (an effective property schema...), built once per walk."""
        slot = (id(node), key)
        if slot not in self._derived:
            self._derived[slot] = build()
        return self._derived[slot]

    def compare(self, old: Node, new: Node, path: str) -> list[Difference]:
        key = (id(old), id(new))
        if old is new or key in self._active:
            return []
        self._active.add(key)
        try:
            return self._compare(old, new, path)
        finally:
            self._active.discard(key)

    def _compare(self, old: Node, new: Node, path: str) -> list[Difference]:
        if old.never or new.never:
            return self._never(old, new, path)
        if old.enum is not None or new.enum is not None:  # a closed set on either side: compare values
            old_values, new_values = finite(old), finite(new)
            return self._enum(old, new, old_values, new_values, path) + self._unknown(old, new, path)
        out = self._types(old, new, path)
        common = expand_types(old.types) & expand_types(new.types)
        if common & FAMILIES["numeric"]:
            out += self._numbers(old, new, path)
        if "string" in common:
            out += self._strings(old, new, path)
        if "array" in common:
            out += self._arrays(old, new, path)
        if "object" in common:
            out += compare_objects(self, old, new, path)
        out += compare_combinators(self, old, new, path)
        return out + self._unknown(old, new, path)

    def _never(self, old: Node, new: Node, path: str) -> list[Difference]:
        if old.never and new.never:
            return []
        if old.never:
            message = "the old schema accepted nothing here; the new one accepts values"
            return [widening(Kind.SCHEMA_BECAME_SATISFIABLE, path, message)]
        message = "the new schema accepts nothing here (contradictory keywords or false)"
        return [narrowing(Kind.SCHEMA_BECAME_EMPTY, path, message)]

    # -- types and enums -------------------------------------------------------------------------------------

    def _types(self, old: Node, new: Node, path: str) -> list[Difference]:
        before, after = expand_types(old.types), expand_types(new.types)
        if before == after:
            return []
        added, removed = sorted(canonical_types(after - before)), sorted(canonical_types(before - after))
        shown = (
            sorted(old.types) if old.types is not None else None,
            sorted(new.types) if new.types is not None else None,
        )
        if not removed:
            note = "now nullable" if added == ["null"] else f"now also accepts {', '.join(added)}"
            return [widening(Kind.TYPE_WIDENED, path, f"type widened: {note}", shown)]
        if not added:
            note = "no longer nullable" if removed == ["null"] else f"no longer accepts {', '.join(removed)}"
            return [narrowing(Kind.TYPE_NARROWED, path, f"type narrowed: {note}", shown)]
        message = f"type changed: drops {', '.join(removed)}, adds {', '.join(added)}"
        return [incompatible(Kind.TYPE_CHANGED, path, message, shown)]

    def _enum(
        self,
        old: Node,
        new: Node,
        old_values: tuple[Any, ...] | None,
        new_values: tuple[Any, ...] | None,
        path: str,
    ) -> list[Difference]:
        check = self.policy.format_assertion
        if old_values is not None and new_values is not None:
            gone = [v for v in old_values if not any(json_equal(v, w) for w in new_values)]
            came = [v for v in new_values if not any(json_equal(v, w) for w in old_values)]
            shown = (list(old_values), list(new_values))
            tolerant = self.policy.tolerate_unknown_enum_values
            if not gone and not came:
                return []
            if not gone:
                return [Difference(Kind.ENUM_EXTENDED, path, True, False, tolerant, f"enum adds {_show(came)}", *shown)]
            if not came:
                return [narrowing(Kind.ENUM_NARROWED, path, f"enum drops {_show(gone)}", shown)]
            message = f"enum drops {_show(gone)} and adds {_show(came)}"
            return [Difference(Kind.ENUM_CHANGED, path, False, False, tolerant, message, *shown)]
        if old_values is not None:  # the new schema lifts the closed set
            missing = [v for v in old_values if accepts(new, v, check_format=check) is not True]
            note = f"; it rejects old value(s) {_show(missing)}" if missing else ""
            message = f"the fixed set of values is gone{note}"
            return [Difference(Kind.ENUM_REMOVED, path, not missing, False, False, message, list(old_values), None)]
        assert new_values is not None
        foreign = [v for v in new_values if accepts(old, v, check_format=check) is not True]
        note = f"; the old schema rejects {_show(foreign)}" if foreign else ""
        message = f"values restricted to a fixed set{note}"
        return [Difference(Kind.ENUM_ADDED, path, False, not foreign, not foreign, message, None, list(new_values))]

    # -- scalar keywords -------------------------------------------------------------------------------------

    def _numbers(self, old: Node, new: Node, path: str) -> list[Difference]:
        out = _bound("minimum", old.minimum, new.minimum, Bound.looser_lower, path)
        out += _bound("maximum", old.maximum, new.maximum, Bound.looser_upper, path)
        before, after = old.multiple_of, new.multiple_of
        if before == after:
            return out
        shown = (_number(before), _number(after))
        if after is None:
            out.append(widening(Kind.MULTIPLE_OF_REMOVED, path, "multipleOf removed", shown))
        elif before is None:
            out.append(narrowing(Kind.MULTIPLE_OF_ADDED, path, "multipleOf added", shown))
        elif (before / after).denominator == 1:
            out.append(widening(Kind.MULTIPLE_OF_REDUCED, path, "multipleOf divides the old one", shown))
        elif (after / before).denominator == 1:
            out.append(narrowing(Kind.MULTIPLE_OF_EXPANDED, path, "multipleOf is a multiple of the old", shown))
        else:
            out.append(incompatible(Kind.MULTIPLE_OF_CHANGED, path, "multipleOf changed to an unrelated value", shown))
        return out

    def _strings(self, old: Node, new: Node, path: str) -> list[Difference]:
        out = least("min_length", old.min_length, new.min_length, path)
        out += most("max_length", old.max_length, new.max_length, path)
        out += _textual("pattern", old.pattern, new.pattern, path)
        if self.policy.format_assertion:
            out += _textual("format", old.format, new.format, path)
        return out

    def _arrays(self, old: Node, new: Node, path: str) -> list[Difference]:
        out = least("min_items", old.min_items, new.min_items, path)
        out += most("max_items", old.max_items, new.max_items, path)
        if old.unique_items != new.unique_items:
            kind = Kind.UNIQUE_ITEMS_ADDED if new.unique_items else Kind.UNIQUE_ITEMS_REMOVED
            make = narrowing if new.unique_items else widening
            out.append(
                make(
                    kind,
                    path,
                    "uniqueItems " + ("added" if new.unique_items else "removed"),
                    (old.unique_items, new.unique_items),
                )
            )
        positions = max(len(old.prefix), len(new.prefix))
        for index in range(positions):
            before = old.prefix[index] if index < len(old.prefix) else old.items
            after = new.prefix[index] if index < len(new.prefix) else new.items
            out += self.compare(before or ANY, after or ANY, f"{path}[{index}]")
        rest = f"{path}[{positions}:]" if positions else f"{path}[*]"
        return out + self.compare(old.items or ANY, new.items or ANY, rest)

    def _unknown(self, old: Node, new: Node, path: str) -> list[Difference]:
        out = []
        for name in sorted(old.unknown.keys() | new.unknown.keys()):
            before, after = old.unknown.get(name), new.unknown.get(name)
            same = name in old.unknown and name in new.unknown and json_equal(before, after)
            if same and name not in _CONTEXT_DEPENDENT and not _has_ref(before):
                continue
            why = (
                "unchanged, but its meaning depends on context the engine does not model"
                if same
                else ("added" if name not in old.unknown else "removed" if name not in new.unknown else "changed")
            )
            message = (
                f"keyword {name!r} is not understood by the compatibility engine ({why}); "
                "treated as incompatible both ways"
            )
            out.append(incompatible(Kind.UNSUPPORTED_KEYWORD, path, message, (before, after)))
        return out


def finite(node: Node) -> tuple[Any, ...] | None:
    """The exact values a node accepts when it is a finite set (an enum, or only null/boolean types)."""
    if node.enum is not None:
        return node.enum
    if (
        node.types is not None
        and node.types <= {"null", "boolean"}
        and not (node.unknown or node.all_of or node.any_of is not None or node.one_of is not None)
    ):
        return tuple(
            v for t in ("null", "boolean") if t in node.types for v in ((None,) if t == "null" else (False, True))
        )
    return None


def _number(value: Fraction | None) -> int | float | None:
    return None if value is None else number_json(value)


def _has_ref(value: Any) -> bool:
    if isinstance(value, dict):
        return "$ref" in value or any(_has_ref(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_ref(v) for v in value)
    return False


def _bound(
    base: str, before: Bound | None, after: Bound | None, looser: Callable[[Bound, Bound], bool], path: str
) -> list[Difference]:
    if before == after:
        return []
    shown = (None if before is None else before.to_dict(base), None if after is None else after.to_dict(base))
    text = f"{base} {_bound_text(before, base)} -> {_bound_text(after, base)}"
    if after is None:
        return [widening(keyword_kind(base, "removed"), path, text, shown)]
    if before is None:
        return [narrowing(keyword_kind(base, "added"), path, text, shown)]
    # "decreased" for a minimum and "increased" for a maximum widen; the exclusive flag counts as a nudge
    widened = looser(after, before)
    verb = {
        ("minimum", True): "decreased",
        ("minimum", False): "increased",
        ("maximum", True): "increased",
        ("maximum", False): "decreased",
    }[(base, widened)]
    make = widening if widened else narrowing
    return [make(keyword_kind(base, verb), path, text, shown)]


def _bound_text(bound: Bound | None, base: str) -> str:
    if bound is None:
        return "none"
    sign = (">" if base == "minimum" else "<") + ("" if bound.exclusive else "=")
    value: Fraction = bound.value
    return f"{sign} {number_json(value)}"


def _textual(base: str, before: str | None, after: str | None, path: str) -> list[Difference]:
    """pattern and format: compared as text, since containment of regular languages is out of scope."""
    if before == after:
        return []
    if after is None:
        return [widening(keyword_kind(base, "removed"), path, f"{base} {before!r} removed", (before, after))]
    if before is None:
        return [narrowing(keyword_kind(base, "added"), path, f"{base} {after!r} added", (before, after))]
    message = f"{base} changed from {before!r} to {after!r} (compared as text)"
    return [incompatible(keyword_kind(base, "changed"), path, message, (before, after))]
