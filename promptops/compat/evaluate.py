"""Decide whether a normalized schema accepts one concrete JSON value.

The engine needs this for finite sets: an enum is the exact list of values that also pass the schema's other
keywords, and an old enum is covered by a new schema when the new schema accepts each value. The answer is
three-valued: ``None`` when a keyword the engine does not understand (or a pattern Python cannot compile)
decides it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from promptops.compat.node import Node, to_fraction
from promptops.core.errors import ContractError
from promptops.core.patterns import SchemaPattern
from promptops.core.shape import compile_pattern, json_equal, json_type_of

Verdict = bool | None


def accepts(node: Node, value: Any, *, check_format: bool = True) -> Verdict:
    return _Evaluator(check_format).run(node, value)


def combine(verdicts: list[Verdict]) -> Verdict:
    """Conjunction in three-valued logic: any False wins, then any unknown."""
    if False in verdicts:
        return False
    return None if None in verdicts else True


@cache
def pattern_regex(pattern: str) -> SchemaPattern | None:
    """The compiled ECMA-262 pattern, or None when the parser's engine refuses it."""
    try:
        return compile_pattern(pattern, "pattern")
    except ContractError:
        return None


def name_matches(pattern: str, name: str) -> Verdict:
    regex = pattern_regex(pattern)
    return None if regex is None else regex.search(name)


class _Evaluator:
    def __init__(self, check_format: bool) -> None:
        self._check_format = check_format

    def run(self, node: Node, value: Any) -> Verdict:
        if node.never:
            return False
        if node.enum is not None and not any(json_equal(value, e) for e in node.enum):
            return False
        kind = json_type_of(value)
        types = node.types
        if types is not None and kind not in types and not (kind == "integer" and "number" in types):
            return False
        verdicts: list[Verdict] = [None] if node.unknown else []
        if kind in ("integer", "number"):
            verdicts.append(self._number(node, value))
        elif kind == "string":
            verdicts.append(self._string(node, value))
        elif kind == "array":
            verdicts.append(self._array(node, value))
        elif kind == "object":
            verdicts.append(self._object(node, value))
        verdicts.extend(self.run(child, value) for child in node.all_of)
        if node.any_of is not None:
            branches = [self.run(child, value) for child in node.any_of]
            verdicts.append(True if True in branches else (None if None in branches else False))
        if node.one_of is not None:
            branches = [self.run(child, value) for child in node.one_of]
            verdicts.append(None if None in branches else branches.count(True) == 1)
        return combine(verdicts)

    def _number(self, node: Node, value: Any) -> Verdict:
        number = to_fraction(value)
        low, high = node.minimum, node.maximum
        if low is not None and (number < low.value or (low.exclusive and number == low.value)):
            return False
        if high is not None and (number > high.value or (high.exclusive and number == high.value)):
            return False
        return node.multiple_of is None or (number / node.multiple_of).denominator == 1

    def _string(self, node: Node, value: str) -> Verdict:
        if len(value) < node.min_length or (node.max_length is not None and len(value) > node.max_length):
            return False
        verdicts: list[Verdict] = []
        if node.pattern is not None:
            regex = pattern_regex(node.pattern)
            verdicts.append(None if regex is None else regex.search(value))
        if node.format is not None and self._check_format:
            from jsonschema import Draft7Validator  # rare: formats only; keeps the gate's import light

            verdicts.append(Draft7Validator.FORMAT_CHECKER.conforms(value, node.format))
        return combine(verdicts)

    def _array(self, node: Node, value: list[Any]) -> Verdict:
        if len(value) < node.min_items or (node.max_items is not None and len(value) > node.max_items):
            return False
        if node.unique_items and any(json_equal(a, b) for i, a in enumerate(value) for b in value[i + 1 :]):
            return False
        verdicts: list[Verdict] = []
        for index, element in enumerate(value):
            child = node.prefix[index] if index < len(node.prefix) else node.items
            if child is not None:
                verdicts.append(self.run(child, element))
        return combine(verdicts)

    def _object(self, node: Node, value: dict[str, Any]) -> Verdict:
        if len(value) < node.min_properties or (node.max_properties is not None and len(value) > node.max_properties):
            return False
        if not node.required <= value.keys():
            return False
        verdicts: list[Verdict] = []
        for name, member in value.items():
            matched = name in node.properties
            if matched:
                verdicts.append(self.run(node.properties[name], member))
            for pattern, child in node.pattern_properties.items():
                hit = name_matches(pattern, name)
                if hit is None:
                    return None
                if hit:
                    matched = True
                    verdicts.append(self.run(child, member))
            if not matched and node.additional is not None:
                verdicts.append(self.run(node.additional, member))
        return combine(verdicts)
