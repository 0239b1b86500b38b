"""Checking one value against its FieldRule, with the contract's safe coercions: the diagnostic path's one place
for the field rules (types, enums, bounds, patterns, line numbers, trimming, path separators).

``check_value`` returns the (possibly coerced) value with the coercions it applied, or a ``Problem``. Problems
carry a rank so that a finding with several faults is dropped for the first one in a fixed order: wrong type,
then other constraints (minLength...), then enum, then the line rules.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from promptops.core.canonical import canonical, json_unique
from promptops.core.contract import Coercions
from promptops.core.patterns import validator_class
from promptops.core.shape import FieldRule, json_type_of
from promptops.parsing import paths
from promptops.parsing.diagnostics import Code

RANK_TYPE, RANK_CONSTRAINT, RANK_ENUM, RANK_LINE, RANK_RANGE = range(5)
# JSON type names by Python type, for the common case (floats and subclasses go through json_type_of).
_JSON_TYPES: dict[type, str] = {
    str: "string",
    int: "integer",
    bool: "boolean",
    type(None): "null",
    list: "array",
    dict: "object",
}
_INTEGRAL_STRING = re.compile(r"[+-]?[0-9]+(?:\.0+)?\Z")


class Problem(NamedTuple):
    rank: int
    code: Code
    path: str
    message: str


class Coercion(NamedTuple):
    code: Code
    path: str
    message: str


@dataclass(frozen=True, slots=True)
class Role:
    """How a field is treated beyond its schema rule."""

    line: bool = False  # integral line number >= 1, coerced from strings and whole floats
    path: bool = False  # repository path: backslashes normalized


PLAIN = Role()
LINE = Role(line=True)
PATH = Role(path=True)


def check_value(
    rule: FieldRule,
    value: Any,
    base: str | None,
    key: str | int,
    role: Role,
    coercions: Coercions,
    applied: list[Coercion],
) -> Any:
    """The checked value of member ``key`` under path ``base`` (coercions appended to ``applied``), or a
    Problem. The member's path is only spelled out when something is reported."""
    if type(value) is str and coercions.trim_strings:
        trimmed = value.strip()
        if len(trimmed) != len(value):
            where = paths.at(base, key)
            applied.append(Coercion(Code.TRIMMED_WHITESPACE, where, f"{where}: surrounding whitespace trimmed"))
            value = trimmed
    if role.line:
        value = _line_number(value, base, key, coercions, applied)
        if isinstance(value, Problem):
            return value
    elif role.path and coercions.path_separators and type(value) is str and "\\" in value:
        value = value.replace("\\", "/")
        where = paths.at(base, key)
        applied.append(Coercion(Code.NORMALIZED_PATH_SEPARATOR, where, f"{where}: path separators '\\' -> '/'"))
    problem = _violation(rule, value, base, key, coercions, applied)
    if problem is None:
        return value
    if role.line:  # a line that is an integer >= 1 but breaks another bound is still a bad line
        return Problem(RANK_LINE, Code.INVALID_LINE, problem.path, problem.message)
    return problem


def _line_number(value: Any, base: str | None, key: str | int, coercions: Coercions, applied: list[Coercion]) -> Any:
    if type(value) is int and value >= 1:
        return value
    if coercions.numeric_lines:
        if type(value) is str and _INTEGRAL_STRING.match(value):
            number = int(value.split(".", 1)[0])
            where = paths.at(base, key)
            message = f"{where}: string {value!r} converted to integer {number}"
            applied.append(Coercion(Code.CONVERTED_NUMERIC_STRING, where, message))
            value = number
        elif type(value) is float and math.isfinite(value) and value.is_integer():
            number = int(value)
            where = paths.at(base, key)
            message = f"{where}: number {value!r} converted to integer {number}"
            applied.append(Coercion(Code.CONVERTED_NUMERIC_STRING, where, message))
            value = number
    if type(value) is not int or value < 1:
        where = paths.at(base, key)
        return Problem(
            RANK_LINE, Code.INVALID_LINE, where, f"{where}: {_show(value)} is not a line number (an integer >= 1)"
        )
    return value


def _violation(
    rule: FieldRule, value: Any, base: str | None, key: str | int, coercions: Coercions, applied: list[Coercion]
) -> Problem | None:
    if rule.fallback is not None:
        return _fallback_violation(rule, value, paths.at(base, key))
    kind = _JSON_TYPES.get(type(value)) or json_type_of(value)
    types = rule.types
    if types and kind not in types and not (kind == "integer" and "number" in types):
        expected = " or ".join(sorted(types))
        where = paths.at(base, key)
        return Problem(RANK_TYPE, Code.INVALID_FIELD, where, f"{where}: expected {expected}, got {_show(value)}")
    if rule.enum is not None and not _in_enum(rule.enum, value, kind):
        allowed = _enum_text(rule)
        where = paths.at(base, key)
        return Problem(RANK_ENUM, Code.INVALID_ENUM, where, f"{where}: {_show(value)} is not one of {allowed}")
    if kind == "string":
        if rule.min_length is None and rule.max_length is None and rule.pattern is None:
            return None
        return _string_violation(rule, value, base, key)
    if kind in ("integer", "number"):
        return _number_violation(rule, value, base, key)
    if kind == "array":
        return _array_violation(rule, value, base, key, coercions, applied)
    return None


# Each enum's strings and the canonical texts of its other values (shape.json_equal's equality), per enum tuple
# (stored beside it, as below): a lookup is one hash, however long the enum.
_ENUM_SETS: dict[int, tuple[tuple[Any, ...], frozenset[str], frozenset[str]]] = {}


def _in_enum(enum: tuple[Any, ...], value: Any, kind: str) -> bool:
    cached = _ENUM_SETS.get(id(enum))
    if cached is None or cached[0] is not enum:
        if len(_ENUM_SETS) >= 4096:
            _ENUM_SETS.clear()
        strings = frozenset(v for v in enum if type(v) is str)
        others = frozenset(canonical(v) for v in enum if type(v) is not str)
        cached = _ENUM_SETS[id(enum)] = (enum, strings, others)
    if kind == "string":
        return value in cached[1]
    return canonical(value) in cached[2]


# The allowed values as messages list them, per enum tuple (stored beside its text, so a recycled id never
# hits the wrong entry): bad enum values are the most common fault, and joining the values costs more than the
# rest of the check.
_ENUM_TEXTS: dict[int, tuple[tuple[Any, ...], str]] = {}


def _enum_text(rule: FieldRule) -> str:
    assert rule.enum is not None
    cached = _ENUM_TEXTS.get(id(rule.enum))
    if cached is None or cached[0] is not rule.enum:
        if len(_ENUM_TEXTS) >= 4096:
            _ENUM_TEXTS.clear()
        cached = _ENUM_TEXTS[id(rule.enum)] = (rule.enum, ", ".join(rule.enum_strings or ()))
    return cached[1]


def _string_violation(rule: FieldRule, value: str, base: str | None, key: str | int) -> Problem | None:
    if rule.min_length is not None and len(value) < rule.min_length:
        problem = f"shorter than {rule.min_length} characters"
    elif rule.max_length is not None and len(value) > rule.max_length:
        problem = f"longer than {rule.max_length} characters"
    elif rule.pattern is not None and not rule.pattern.search(value):
        problem = f"{_show(value)} does not match the pattern {rule.pattern.source!r}"
    else:
        return None
    where = paths.at(base, key)
    return Problem(RANK_CONSTRAINT, Code.INVALID_FIELD, where, f"{where}: {problem}")


def _number_violation(rule: FieldRule, value: float, base: str | None, key: str | int) -> Problem | None:
    if (
        rule.minimum is None
        and rule.maximum is None
        and rule.exclusive_minimum is None
        and rule.exclusive_maximum is None
        and rule.multiple_of is None
    ):
        return None
    bounds = (
        (rule.minimum, operator.ge, ">="),
        (rule.maximum, operator.le, "<="),
        (rule.exclusive_minimum, operator.gt, ">"),
        (rule.exclusive_maximum, operator.lt, "<"),
    )
    problem = None
    for bound, holds, sign in bounds:
        if bound is not None and not holds(value, bound):
            problem = f"{_show(value)} is not {sign} {bound}"
            break
    else:
        if rule.multiple_of is not None and not _is_multiple(value, rule.multiple_of):
            problem = f"{_show(value)} is not a multiple of {rule.multiple_of}"
    if problem is None:
        return None
    where = paths.at(base, key)
    return Problem(RANK_CONSTRAINT, Code.INVALID_FIELD, where, f"{where}: {problem}")


def _is_multiple(value: int | float, divisor: int | float) -> bool:
    # Same arithmetic as python-jsonschema, so the parser and the property tests agree on floats.
    if isinstance(divisor, float):
        quotient = value / divisor
        try:
            return int(quotient) == quotient
        except OverflowError:
            return False
    if isinstance(value, float):
        quotient = value / divisor
        return math.isfinite(quotient) and quotient.is_integer()
    return value % divisor == 0


def _array_violation(
    rule: FieldRule, value: list[Any], base: str | None, key: str | int, coercions: Coercions, applied: list[Coercion]
) -> Problem | None:
    where = paths.at(base, key)
    if rule.min_items is not None and len(value) < rule.min_items:
        return Problem(RANK_CONSTRAINT, Code.INVALID_FIELD, where, f"{where}: fewer than {count_items(rule.min_items)}")
    if rule.max_items is not None and len(value) > rule.max_items:
        return Problem(RANK_CONSTRAINT, Code.INVALID_FIELD, where, f"{where}: more than {count_items(rule.max_items)}")
    if rule.items is not None:
        for index, item in enumerate(value):
            checked = check_value(rule.items, item, where, index, PLAIN, coercions, applied)
            if isinstance(checked, Problem):
                return checked
            value[index] = checked
    if rule.unique_items and not json_unique(value):
        return Problem(RANK_CONSTRAINT, Code.INVALID_FIELD, where, f"{where}: items are not unique")
    return None


# Compiled full validators for fields the rules cannot express, keyed by the subschema's identity (the
# subschema is stored beside its validator so a recycled id can never hit the wrong entry).
_FALLBACK_VALIDATORS: dict[int, tuple[Mapping[str, Any], Any]] = {}


def _fallback_violation(rule: FieldRule, value: Any, path: str) -> Problem | None:
    assert rule.fallback is not None
    cached = _FALLBACK_VALIDATORS.get(id(rule.fallback))
    if cached is None or cached[0] is not rule.fallback:
        from jsonschema import Draft7Validator  # only contracts with such fields pay for the import

        # the schema's patterns matched by the parser's engine, uniqueItems in linear time
        cached = (rule.fallback, validator_class(Draft7Validator)(rule.fallback))
        _FALLBACK_VALIDATORS[id(rule.fallback)] = cached
    validator = cached[1]
    error = next(iter(validator.iter_errors(value)), None)
    if error is None:
        return None
    rank = RANK_TYPE if error.validator == "type" else RANK_ENUM if error.validator == "enum" else RANK_CONSTRAINT
    code = Code.INVALID_ENUM if rank == RANK_ENUM else Code.INVALID_FIELD
    return Problem(rank, code, path, f"{path}: {error.message}")


def count_items(count: int) -> str:
    return f"{count} item" if count == 1 else f"{count} items"


def _show(value: Any) -> str:
    """A short rendering of a model-supplied value for messages."""
    if isinstance(value, str):
        text = repr(value if len(value) <= 40 else value[:37] + "...")
        return f"string {text}"
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int | float):
        return f"number {value!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__
