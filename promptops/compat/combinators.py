"""Compare the combinators normalization could not fold away: anyOf, oneOf and allOf.

A node is its plain keywords AND its combinators; the walk compares the plain keywords elsewhere, so here each
combinator is one more conjunct. Branches are lined up first by identity (same accepted set both ways: pure
reordering is no change), then one to one in order when the same number is left on each side (differences are
reported inside the pair, under ``<anyOf[i]>``), otherwise each unmatched branch is checked against every
branch of the other side:

- anyOf: the old union fits in the new one when each old branch fits in some new branch; forward likewise.
- oneOf: the same, but only when the branches of the side that must contain the other are provably pairwise
  disjoint (different types, disjoint enums, or a required property with disjoint values), since otherwise
  "exactly one" may fail where "at least one" holds; unproven cases are reported incompatible.
- allOf: a new conjunct is backward compatible when some old conjunct (or the old plain keywords) fits in it.
"""

from __future__ import annotations

from promptops.compat.difference import Difference, Kind, flags, restricted
from promptops.compat.evaluate import accepts
from promptops.compat.node import Node, expand_types
from promptops.compat.objects import effective
from promptops.compat.walk import Walk
from promptops.core.shape import json_equal

_KINDS = {
    "any_of": (Kind.ANY_OF_ADDED, Kind.ANY_OF_REMOVED, Kind.ANY_OF_BRANCH_ADDED, Kind.ANY_OF_BRANCH_REMOVED),
    "one_of": (Kind.ONE_OF_ADDED, Kind.ONE_OF_REMOVED, Kind.ONE_OF_BRANCH_ADDED, Kind.ONE_OF_BRANCH_REMOVED),
}
_KEYWORD = {"any_of": "anyOf", "one_of": "oneOf"}


def compare_combinators(differ: Walk, old: Node, new: Node, path: str) -> list[Difference]:
    out: list[Difference] = []
    for key in ("any_of", "one_of"):
        before, after = getattr(old, key), getattr(new, key)
        if before is not None or after is not None:
            out += _union(differ, old, new, before, after, key, path)
    if old.all_of or new.all_of:
        out += _conjuncts(differ, old, new, path)
    return out


def _same(differ: Walk, a: Node, b: Node) -> bool:
    backward, forward, _ = flags(differ.compare(a, b, "$"))
    return backward and forward


def _line_up(
    differ: Walk, before: tuple[Node, ...], after: tuple[Node, ...]
) -> tuple[list[tuple[int, Node]], list[tuple[int, Node]]]:
    """The branches left on each side once identical ones are paired off."""
    new_left = list(enumerate(after))
    old_left: list[tuple[int, Node]] = []
    for index, branch in enumerate(before):
        match = next((k for k, (_, other) in enumerate(new_left) if _same(differ, branch, other)), None)
        if match is None:
            old_left.append((index, branch))
        else:
            del new_left[match]
    return old_left, new_left


def _union(
    differ: Walk,
    old: Node,
    new: Node,
    before: tuple[Node, ...] | None,
    after: tuple[Node, ...] | None,
    key: str,
    path: str,
) -> list[Difference]:
    added, removed, branch_added, branch_removed = _KINDS[key]
    keyword = _KEYWORD[key]
    exclusive = key == "one_of"
    if before is None:
        assert after is not None
        backward = any(flags(differ.compare(old, branch, path))[0] for branch in after)
        backward &= not exclusive or pairwise_disjoint(differ, after)
        why = "" if backward else ": some old documents match no branch"
        return [Difference(added, path, backward, True, True, f"{keyword} added{why}")]
    if after is None:
        verdicts = [flags(differ.compare(branch, new, path)) for branch in before]
        forward, tolerant = any(v[1] for v in verdicts), any(v[2] for v in verdicts)
        if exclusive and not pairwise_disjoint(differ, before):
            forward = tolerant = False
        why = "" if forward else ": new documents need not match one old branch"
        return [Difference(removed, path, True, forward, tolerant, f"{keyword} removed{why}")]
    new_ok = not exclusive or pairwise_disjoint(differ, after)
    old_ok = not exclusive or pairwise_disjoint(differ, before)
    old_left, new_left = _line_up(differ, before, after)
    out: list[Difference] = []
    if len(old_left) == len(new_left):
        for (_, a), (index, b) in zip(old_left, new_left, strict=True):
            nested = differ.compare(a, b, f"{path}<{keyword}[{index}]>")
            out += restricted(nested, backward=new_ok, forward=old_ok)
        return out
    for index, branch in old_left:
        backward = new_ok and any(flags(differ.compare(branch, other, path))[0] for other in after)
        message = f"{keyword} branch {index} removed" + ("" if backward else " (its documents fit no new branch)")
        out.append(Difference(branch_removed, f"{path}<{keyword}[{index}]>", backward, old_ok, old_ok, message))
    for index, branch in new_left:
        verdicts = [flags(differ.compare(other, branch, path)) for other in before]
        forward = old_ok and any(v[1] for v in verdicts)
        tolerant = old_ok and any(v[2] for v in verdicts)
        message = f"{keyword} branch {index} added" + ("" if forward else " (its documents fit no old branch)")
        out.append(Difference(branch_added, f"{path}<{keyword}[{index}]>", new_ok, forward, tolerant, message))
    return out


def _conjuncts(differ: Walk, old: Node, new: Node, path: str) -> list[Difference]:
    old_plain = differ.derived(old, "plain", lambda: old.shallow_copy(all_of=()))
    new_plain = differ.derived(new, "plain", lambda: new.shallow_copy(all_of=()))
    old_left, new_left = _line_up(differ, old.all_of, new.all_of)
    out: list[Difference] = []
    if len(old_left) == len(new_left):
        for (_, a), (index, b) in zip(old_left, new_left, strict=True):
            out += differ.compare(a, b, f"{path}<allOf[{index}]>")
        return out
    for index, conjunct in new_left:
        backward = any(flags(differ.compare(part, conjunct, path))[0] for part in (old_plain, *old.all_of))
        message = f"allOf schema {index} added" + ("" if backward else " and old documents may fail it")
        out.append(Difference(Kind.ALL_OF_SCHEMA_ADDED, f"{path}<allOf[{index}]>", backward, True, True, message))
    for index, conjunct in old_left:
        verdicts = [flags(differ.compare(conjunct, part, path)) for part in (new_plain, *new.all_of)]
        forward, tolerant = any(v[1] for v in verdicts), any(v[2] for v in verdicts)
        message = f"allOf schema {index} removed" + ("" if forward else " and new documents may fail it")
        out.append(Difference(Kind.ALL_OF_SCHEMA_REMOVED, f"{path}<allOf[{index}]>", True, forward, tolerant, message))
    return out


def pairwise_disjoint(differ: Walk, branches: tuple[Node, ...]) -> bool:
    return all(disjoint(differ, a, b) for i, a in enumerate(branches) for b in branches[i + 1 :])


def disjoint(differ: Walk, a: Node, b: Node, depth: int = 0) -> bool:
    """Can no value satisfy both? Sufficient checks only: types, enums, a required discriminator property."""
    if a.never or b.never or not expand_types(a.types) & expand_types(b.types):
        return True
    if a.enum is not None and b.enum is not None:
        return not any(json_equal(x, y) for x in a.enum for y in b.enum)
    for finite_side, other in ((a, b), (b, a)):
        if finite_side.enum is not None:
            return all(accepts(other, value) is False for value in finite_side.enum)
    if depth < 4 and a.types == b.types == frozenset({"object"}):
        return any(
            disjoint(differ, effective(differ, a, name), effective(differ, b, name), depth + 1)
            for name in sorted(a.required & b.required)
        )
    return False
