"""The spec the optional C check of plain findings (``_plain.c``) reads, built once per schema version.

``native_check(item, spec, base, changed)`` answers like ``Findings._finding`` (the reference, which runs
whenever the extension is missing, speedups are off, or the check says it does not handle a finding): None
(not handled), the Problem a finding is dropped for, or (kept finding in schema order, Coercions applied).
It covers the usual rules: strings with length bounds (paths included), string enums, line numbers with a
minimum, and any other field whose quick test passes; everything else is left to Python.

``native_repeats`` (``_ids.c``) answers like ``findings._ids_repeat``: whether some kept finding's id repeats;
``native_keep_marked`` (``_ids.c``) like ``findings._keep_marked``: it keeps a run of marked findings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from promptops.contract import Contract
from promptops.parsing import paths
from promptops.parsing.diagnostics import Code
from promptops.parsing.fields import Coercion, Problem, Role
from promptops.shape import FieldRule, ObjectShape

native_check: Callable[[Any, tuple[Any, ...], str, Any], Any] | None
native_repeats: Callable[[list[tuple[int, str | None]]], bool] | None  # reference: findings._ids_repeat
native_keep_marked: Callable[..., int] | None  # reference: findings._keep_marked
try:
    from promptops.parsing._plain import check as native_check
except ImportError:  # no compiler at install time: Findings._finding does the same job
    native_check = None
try:
    from promptops.parsing._ids import keep_marked as native_keep_marked
    from promptops.parsing._ids import repeats as native_repeats
except ImportError:
    native_repeats = native_keep_marked = None

K_OTHER, K_STR, K_ENUM, K_LINE = range(4)
_CODES = (
    Code.MISSING_REQUIRED_FIELD,
    Code.UNKNOWN_FIELD,
    Code.INVALID_FIELD,
    Code.INVALID_ENUM,
    Code.INVALID_LINE,
    Code.END_LINE_BEFORE_LINE,
    Code.FILE_NOT_IN_CHANGED_FILES,
    Code.TRIMMED_WHITESPACE,
    Code.NORMALIZED_PATH_SEPARATOR,
    Code.CONVERTED_NUMERIC_STRING,
)


def _suffix(key: str) -> str:
    """What ``paths.member`` adds after a non-empty parent."""
    return paths.member("p", key)[1:]


def _plain_rule(rule: FieldRule) -> bool:
    return (
        rule.fallback is None
        and rule.pattern is None
        and rule.multiple_of is None
        and rule.items is None
        and not rule.unique_items
        and not rule.open_object
        and rule.minimum is None
        and rule.maximum is None
        and rule.exclusive_minimum is None
        and rule.exclusive_maximum is None
    )


def _field(rule: FieldRule, role: Role, quick: Callable[[Any], bool] | None) -> tuple[Any, ...]:
    suffix = _suffix(rule.name)
    types_text = " or ".join(sorted(rule.types))
    if role.line:
        simple = (
            rule.types in (frozenset({"integer"}), frozenset({"number"}))
            and rule.enum is None
            and rule.fallback is None
            and rule.multiple_of is None
            and rule.maximum is None
            and rule.exclusive_minimum is None
            and rule.exclusive_maximum is None
        )
        return (K_LINE, suffix, rule.minimum) if simple else (K_OTHER, suffix, quick)
    if rule.types in (frozenset({"string"}), frozenset({"string", "null"})) and _plain_rule(rule):
        if rule.enum is None:
            # Paths: backslashes replaced after trimming, before the length bounds, as check_value does.
            return (K_STR, suffix, rule.min_length, rule.max_length, rule.nullable, role.path, types_text)
        if (
            rule.types == frozenset({"string"})
            and rule.min_length is None
            and rule.max_length is None
            and all(type(value) is str for value in rule.enum)
            and rule.enum_strings is not None
            and not role.path
        ):
            return (K_ENUM, suffix, frozenset(rule.enum), ", ".join(rule.enum_strings), types_text)
    if role.path:
        return (K_OTHER, suffix, None)  # path separators are coerced: the quick test alone cannot decide
    return (K_OTHER, suffix, quick)


def plain_spec(
    contract: Contract,
    item: ObjectShape,
    roles: Mapping[str, Role],
    quick: Mapping[str, Callable[[Any], bool]],
    plain: Role,
) -> tuple[Any, ...] | None:
    """The spec for ``native_check``, or None when the contract's findings are beyond it."""
    if item.additional or contract.null_means_absent:
        return None
    fields: dict[str, tuple[Any, ...]] = {}
    for position, (name, rule) in enumerate(item.properties.items()):
        kind, suffix, *own = _field(rule, roles.get(name, plain), quick.get(name))
        fields[name] = (kind, suffix, position, name in item.required, *own)
    role_names = contract.roles
    line, end, path = role_names.line, role_names.end_line, role_names.path
    coercions = contract.coercions
    return (
        fields,
        tuple((name, _suffix(name)) for name in item.required),
        line if line in fields else None,
        end if line in fields and end in fields else None,
        path if path in fields else None,
        bool(coercions.trim_strings),
        bool(coercions.numeric_lines),
        bool(coercions.path_separators),
        paths.member,
        Problem,
        Coercion,
        _CODES,
    )
