"""Compare object content models: properties, required, patternProperties, additionalProperties, sizes.

A property name's *effective* schema is what a validator applies to its value: the ``properties`` entry and
every matching ``patternProperties`` entry, or ``additionalProperties`` when neither names it (anything when
that is absent). Comparing effective schemas handles open, closed and partially open models alike: a property
added to a closed object is compared against ``false`` (nothing was allowed, so backward compatible), to an
open one against ``{}`` (any value was allowed, so only an empty schema keeps it backward compatible), and to
a partially open one against the ``additionalProperties`` schema.

Names that no ``properties`` entry mentions are covered pattern by pattern, then by ``additionalProperties``.
Regex overlap is not computed, so a pattern present on one side only must agree with every schema the other
side might apply to the same names (sufficient, not necessary).

Tolerant reading: an old parser reading a newer minor ignores properties it does not know,
so everything under a name the old schema does not declare is forward compatible under that reading.
"""

from __future__ import annotations

from promptops.compat.difference import Difference, Kind, flags, tolerated
from promptops.compat.evaluate import name_matches
from promptops.compat.node import Node
from promptops.compat.simplify import conjoin
from promptops.compat.walk import ANY, Walk, least, member, most, narrowing, widening


def compare_objects(differ: Walk, old: Node, new: Node, path: str) -> list[Difference]:
    out = _properties(differ, old, new, path)
    for name in sorted(new.required - old.required):
        message = f"{name!r} is now required: old documents without it are rejected (a default never excuses it)"
        out.append(narrowing(Kind.REQUIRED_ADDED, member(path, name), message))
    for name in sorted(old.required - new.required):
        message = f"{name!r} is no longer required: old parsers reject documents without it"
        out.append(widening(Kind.REQUIRED_REMOVED, member(path, name), message))
    out += _patterns(differ, old, new, path)
    out += _additional(differ, old, new, path)
    out += least("min_properties", old.min_properties, new.min_properties, path)
    return out + most("max_properties", old.max_properties, new.max_properties, path)


def effective(differ: Walk, node: Node, name: str) -> Node:
    """The schema a validator applies to the value of property ``name`` of ``node``."""

    def build() -> Node:
        parts = [node.properties[name]] if name in node.properties else []
        for pattern, sub in node.pattern_properties.items():
            hit = name_matches(pattern, name)
            if hit is None:  # Python cannot compile the regex: say so rather than guess
                return Node(label=node.label, unknown={"patternProperties": pattern})
            if hit:
                parts.append(sub)
        if not parts:
            return node.additional or ANY
        return parts[0] if len(parts) == 1 else conjoin(parts)

    return differ.derived(node, f"property:{name}", build)


def declares(node: Node, name: str) -> bool:
    """Does the schema know property ``name`` (so a tolerant reader does not ignore it)?"""
    return name in node.properties or any(name_matches(p, name) is not False for p in node.pattern_properties)


def _model(node: Node) -> str:
    if node.pattern_properties or (node.additional is not None and not node.additional.never):
        return "partially open object"
    return "closed object" if node.additional is not None else "open object"


def _a(phrase: str) -> str:
    return f"{'an' if phrase[0] in 'aeiou' else 'a'} {phrase}"


def _properties(differ: Walk, old: Node, new: Node, path: str) -> list[Difference]:
    out: list[Difference] = []
    for name in sorted(old.properties.keys() | new.properties.keys()):
        where = member(path, name)
        before, after = effective(differ, old, name), effective(differ, new, name)
        nested = differ.compare(before, after, where)
        if name in old.properties and name in new.properties:
            out += nested
            continue
        backward, forward, tolerant = flags(nested)
        trivial = before.never or after.never or before is ANY or after is ANY  # the model says it all
        because = "" if trivial else _because(nested)
        if name in new.properties:
            tolerant = tolerant or not declares(old, name)
            kind, change, model = Kind.PROPERTY_ADDED, "added to", _model(old)
            effect = {
                "closed object": "the old schema rejected documents carrying it",
                "open object": "the old schema allowed it with any value",
            }.get(model, "the old schema constrained it through additionalProperties/patternProperties")
        else:
            kind, change, model = Kind.PROPERTY_REMOVED, "removed from", _model(new)
            effect = {
                "closed object": "the new schema rejects documents carrying it",
                "open object": "the new schema allows it with any value",
            }.get(model, "the new schema constrains it through additionalProperties/patternProperties")
        message = f"property {name!r} {change} {_a(model)}: {effect}{because}"
        out.append(Difference(kind, where, backward, forward, tolerant, message))
    return out


def _because(nested: list[Difference]) -> str:
    relevant = [d.message for d in nested if not (d.backward and d.forward)]
    if not relevant:
        return " (same values either way)"
    more = f" (+{len(relevant) - 2} more)" if len(relevant) > 2 else ""
    return f" ({'; '.join(relevant[:2])}{more})"


def _patterns(differ: Walk, old: Node, new: Node, path: str) -> list[Difference]:
    out: list[Difference] = []
    before, after = old.pattern_properties, new.pattern_properties
    old_rest, new_rest = old.additional or ANY, new.additional or ANY
    for pattern in sorted(before.keys() & after.keys()):
        out += differ.compare(before[pattern], after[pattern], f"{path}[/{pattern}/]")
    for pattern in sorted(after.keys() - before.keys()):
        where = f"{path}[/{pattern}/]"
        # Names matching it were governed by old patterns or old additionalProperties: each must fit inside.
        candidates = (old_rest, *before.values())
        backward = all(flags(differ.compare(c, after[pattern], where))[0] for c in candidates)
        _, forward, _ = flags(differ.compare(old_rest, after[pattern], where))
        message = f"patternProperties {pattern!r} added"
        out.append(Difference(Kind.PATTERN_PROPERTY_ADDED, where, backward, forward, True, message))
    for pattern in sorted(before.keys() - after.keys()):
        where = f"{path}[/{pattern}/]"
        backward = flags(differ.compare(before[pattern], new_rest, where))[0]
        verdicts = [flags(differ.compare(before[pattern], c, where)) for c in (new_rest, *after.values())]
        forward = all(v[1] for v in verdicts)
        tolerant = all(v[2] for v in verdicts)
        message = f"patternProperties {pattern!r} removed"
        out.append(Difference(Kind.PATTERN_PROPERTY_REMOVED, where, backward, forward, tolerant, message))
    return out


def _additional(differ: Walk, old: Node, new: Node, path: str) -> list[Difference]:
    before, after = old.additional or ANY, new.additional or ANY
    where = f"{path}.*"
    nested = tolerated(differ.compare(before, after, where))
    if not nested:
        return []
    if not (before.never or after.never or before is ANY or after is ANY):
        return nested  # two real schemas: show what changed inside
    backward, forward, tolerant = flags(nested)
    if backward and forward:
        return []
    if after.never:
        note = "closed: undeclared properties are now rejected" if before is ANY else "closed"
    elif after is ANY:
        note = "opened: undeclared properties are now allowed with any value"
    elif before.never:
        note = "opened to undeclared properties matching a schema"
    else:
        note = "undeclared properties are now constrained by a schema"
    kind = (
        Kind.ADDITIONAL_PROPERTIES_WIDENED
        if backward
        else Kind.ADDITIONAL_PROPERTIES_NARROWED
        if forward
        else Kind.ADDITIONAL_PROPERTIES_CHANGED
    )
    return [
        Difference(
            kind, where, backward, forward, tolerant, f"additionalProperties {note}", _shown(before), _shown(after)
        )
    ]


def _shown(node: Node) -> bool | str:
    if node is ANY:
        return True
    return False if node.never else "schema"
