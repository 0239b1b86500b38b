"""msgspec Struct types generated from one compiled schema, and the decline tests that go with them.

These are the fast path's half of each rule (the diagnostic path's half is ``fields.check_value`` and
``findings.Findings``): the Struct types mirror the field rules exactly (types, enums, bounds, patterns, required
and unknown fields, line numbers), and the C extension ``_checks`` covers what a Struct cannot see: string
trimming, end line before line, reconciliation as written, duplicate ids, repeated keys and depth. Every test here
may only say "clean as written" or "not sure": it never builds a diagnostic. Rules msgspec cannot mirror exactly
(fallback subschemas, uniqueItems, multipleOf, untyped fields, open objects with declared members) make
``TypedShape.build`` return None, and so does a missing extension: that schema version is then read by the
diagnostic path only.
"""

from __future__ import annotations

import math
import operator
from typing import Annotated, Any, Literal, Union

import msgspec

from promptops.core.contract import Contract
from promptops.core.patterns import SchemaPattern
from promptops.core.shape import FieldRule, ObjectShape, OutputShape, json_type_of
from promptops.parsing.native import checks as _checks
from promptops.parsing.reconcile import ChangedFiles

UNSET = msgspec.UNSET
DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError, ValueError)

_to_builtins = msgspec.to_builtins


class _Inexpressible(Exception):
    """A rule the Struct types cannot mirror exactly."""


class TypedShape:
    """Decoders and decline tests for one schema version of a contract."""

    def __init__(self, contract: Contract, shape: OutputShape) -> None:
        assert _checks is not None  # build() returns None without the extension
        self.shape = shape
        roles = contract.roles
        line_fields = {name for name in (roles.line, roles.end_line) if name is not None}
        self.item_type, item_names = _struct("Finding", shape.item, line_fields)
        # Version fields are plain strings here: the fast path has each distinct declaration judged once by the
        # diagnostic path's own rules (Validator.versions_as_written).
        version_fields = {name for name in (contract.versions.schema, contract.versions.prompt) if name}
        response, top_names = _struct(
            "Response", shape.top, set(), items=(contract.items, self.item_type), plain_strings=version_fields
        )
        self.decode_response = msgspec.json.Decoder(response).decode
        # The same response with its findings left undecoded (msgspec.Raw), and one finding: a declined response
        # is read once more this way, each finding on its own (Outline).
        outline, _ = _struct(
            "Outline", shape.top, set(), items=(contract.items, msgspec.Raw), plain_strings=version_fields
        )
        self.decode_outline = msgspec.json.Decoder(outline).decode
        self.decode_item = msgspec.json.Decoder(self.item_type).decode
        self.items_attr = top_names[contract.items]
        # Patterns are matched by the parser's own engine (promptops.core.patterns), never by msgspec's (Python's re).
        self.top_patterns = _pattern_checks(shape.top, top_names, {contract.items, *version_fields})
        self.item_patterns = _pattern_checks(shape.item, item_names, set())
        self.items = operator.attrgetter(top_names[contract.items])
        version_attrs = [top_names[n] for n in (contract.versions.schema, contract.versions.prompt) if n]
        self.versions = operator.attrgetter(*version_attrs) if len(version_attrs) == 2 else None
        # Paths are compared before any coercion: when backslashes become "/", a path holding one is never in
        # place as written (ChangedFiles.written), whatever the changed files' names.
        self.plain_paths = roles.path is not None and contract.coercions.path_separators
        self.plain_keys = _checks.plain_keys  # repeated keys and depth, on the text
        # The same, from a response decoded whole: its members and strings against the text's colons.
        self.plain_members = _checks.Members(types=(response, self.item_type), unset=UNSET).plain

        def attr(name: str | None) -> str | None:
            return item_names.get(name) if name is not None else None

        # The strings trimming could change: free text (enum values are clean by construction, and the version
        # fields are checked with the versions), alone or in arrays. Without trimming, none.
        trim = contract.coercions.trim_strings
        top_strings = _string_names(shape.top, top_names, {contract.items, *version_fields}) if trim else ((), ())
        item_strings = _string_names(shape.item, item_names, set()) if trim else ((), ())
        self.top_checks = _checks.Checks(
            type=response,
            strings=top_strings[0],
            string_lists=top_strings[1],
            line=None,
            end_line=None,
            path=None,
            id=None,
            unset=UNSET,
        )
        self.outline_checks = _checks.Checks(
            type=outline,
            strings=top_strings[0],
            string_lists=top_strings[1],
            line=None,
            end_line=None,
            path=None,
            id=None,
            unset=UNSET,
        )
        self.item_checks = _checks.Checks(
            type=self.item_type,
            strings=item_strings[0],
            string_lists=item_strings[1],
            line=attr(roles.line) if roles.end_line in item_names else None,
            end_line=attr(roles.end_line) if roles.line in item_names else None,
            path=attr(roles.path),
            id=attr(roles.id),
            unset=UNSET,
        )

    @classmethod
    def build(cls, contract: Contract, shape: OutputShape) -> TypedShape | None:
        """The typed shape, or None when its rules are beyond what Structs express exactly (or the extension
        holding the decline tests is not built)."""
        if _checks is None:
            return None
        try:
            return cls(contract, shape)
        except (_Inexpressible, TypeError):
            return None

    def as_written(self, items: list[Any], changed: ChangedFiles) -> list[dict[str, Any] | None]:
        """For each decoded finding, its result (members in schema order) when it passes every rule as written
        (no coercion, no drop, no note), else None."""
        structs = list(map(self._struct_of, items))
        written = changed.written(self.plain_paths)
        first_unclean = self.item_checks.first_unclean
        # A finding msgspec does not take is None here, and None is never clean: first_unclean stops at it.
        index = first_unclean(structs, written, False, 0)
        while index is not None:
            structs[index] = None
            index = first_unclean(structs, written, False, index + 1)
        return _to_builtins(structs)  # type: ignore[no-any-return]  # one call for the whole list; None stays None

    def patterns_hold(self, response: Any, items: list[Any]) -> bool:
        """Whether the decoded ``response`` and its ``items`` (Structs) match every pattern of their fields."""
        if self.top_patterns and not _matches(self.top_patterns, response):
            return False
        checks = self.item_patterns
        return not checks or all(_matches(checks, item) for item in items)

    def item_patterns_hold(self, item: Any) -> bool:
        """Whether the decoded finding ``item`` (a Struct) matches every pattern of its fields."""
        return _matches(self.item_patterns, item)

    def _struct_of(self, item: Any) -> Any:
        try:
            struct = msgspec.convert(item, self.item_type)
        except DECODE_ERRORS:
            return None
        return struct if not self.item_patterns or _matches(self.item_patterns, struct) else None


class Outline:
    """A response whose top level is clean as written, its findings each decoded on their own: what a declined
    fast path hands to the diagnostic path, so that neither reads the text again.

    ``top`` is the decoded top level without its findings; ``clean`` holds, per finding, its result as written
    (members in schema order) or None, and ``raw`` the finding's JSON text, for the diagnostic path to read the
    ones that are None; ``versions`` are the declared versions, accepted as written by the version rules, and
    ``shape`` the schema they select.
    """

    __slots__ = ("clean", "raw", "shape", "top", "versions")

    def __init__(
        self, top: Any, versions: tuple[str, str], shape: OutputShape, clean: list[Any], raw: list[Any]
    ) -> None:
        self.top = top
        self.versions = versions
        self.shape = shape
        self.clean = clean
        self.raw = raw


_PatternCheck = tuple[str, SchemaPattern, bool]  # Struct attribute, pattern, whether it holds an array of strings


def _pattern_checks(shape: ObjectShape, names: dict[str, str], skip: set[str]) -> tuple[_PatternCheck, ...]:
    """The patterns of ``shape``'s string fields and arrays of strings (enum values are filtered by pattern when
    the Literal is built); _value_type declines patterns nested deeper."""
    checks: list[_PatternCheck] = []
    for name, rule in shape.properties.items():
        if name in skip:
            continue
        if rule.pattern is not None and rule.enum is None:
            checks.append((names[name], rule.pattern, False))
        inner = rule.items
        if inner is not None and inner.pattern is not None and inner.enum is None:
            checks.append((names[name], inner.pattern, True))
    return tuple(checks)


def _matches(checks: tuple[_PatternCheck, ...], struct: Any) -> bool:
    for attr, pattern, many in checks:
        value = getattr(struct, attr)
        if many:
            if type(value) is list and not all(pattern.search(v) for v in value if type(v) is str):
                return False
        elif type(value) is str and not pattern.search(value):
            return False
    return True


def _string_names(shape: ObjectShape, names: dict[str, str], skip: set[str]) -> tuple[tuple[str, ...], ...]:
    """The Struct attributes of ``shape`` that hold free strings: (alone, in arrays)."""
    single: list[str] = []
    lists: list[str] = []
    for name, rule in shape.properties.items():
        if name in skip:
            continue
        if "string" in rule.types and rule.enum is None:
            if rule.types - {"string", "null"}:
                raise _Inexpressible(f"{name}: a string or another type")
            single.append(names[name])
        elif rule.items is not None and "array" in rule.types:
            inner = rule.items
            if (
                inner.items is not None
                or "array" in inner.types
                or (inner.types - {"string", "null"} and "string" in inner.types)
            ):
                raise _Inexpressible(f"{name}: strings nested deeper than an array")
            if "string" in inner.types and inner.enum is None:
                lists.append(names[name])
    return tuple(single), tuple(lists)


def _struct(
    name: str,
    shape: ObjectShape,
    line_fields: set[str],
    items: tuple[str, Any] | None = None,
    plain_strings: set[str] | frozenset[str] = frozenset(),
) -> tuple[Any, dict[str, str]]:
    if shape.additional:
        raise _Inexpressible(f"{name}: open objects keep unknown members the Struct would drop")
    fields: list[Any] = []
    names: dict[str, str] = {}
    for index, (json_name, rule) in enumerate(shape.properties.items()):
        attr_name = f"f{index}"
        names[json_name] = attr_name
        if items is not None and json_name == items[0]:
            _lengths(rule, rule.min_items, rule.max_items)
            kind: Any = _list_of(items[1], rule.min_items, rule.max_items)
        elif json_name in line_fields:
            kind = _line_type(rule)
        elif json_name in plain_strings:
            kind = str
        else:
            kind = _value_type(rule)
        if json_name in shape.required:
            fields.append((attr_name, kind))
        else:
            fields.append((attr_name, _union_of([kind, msgspec.UnsetType]), UNSET))
    struct = msgspec.defstruct(
        name,
        fields,
        rename={v: k for k, v in names.items()},
        kw_only=True,
        forbid_unknown_fields=True,
        gc=False,
    )
    return struct, names


def _line_type(rule: FieldRule) -> Any:
    if rule.fallback is not None or rule.enum is not None or rule.multiple_of is not None:
        raise _Inexpressible(rule.name)
    low = max(1, rule.minimum) if rule.minimum is not None else 1
    bounds = _int_bounds(rule, ge=low, le=rule.maximum, gt=rule.exclusive_minimum, lt=rule.exclusive_maximum)
    return _annotated(int, **bounds)


# msgspec holds integer bounds and lengths as int64 and compares floats with float bounds; the diagnostic path
# compares exactly, with Python's numbers. A bound msgspec would hold differently leaves the rule to the
# diagnostic path (both builds then decide alike, as the C-free build always does).
_INT64 = range(-(2**63), 2**63)


def _int_bounds(rule: FieldRule, **bounds: Any) -> dict[str, Any]:
    for bound in bounds.values():
        if bound is not None and (type(bound) is not int or bound not in _INT64):
            raise _Inexpressible(rule.name)
    return bounds


def _float_bounds(rule: FieldRule, **bounds: Any) -> dict[str, Any]:
    for bound in bounds.values():
        if bound is None:
            continue
        try:
            exact = math.isfinite(float(bound)) and float(bound) == bound
        except OverflowError:
            exact = False
        if not exact:
            raise _Inexpressible(rule.name)
    return bounds


def _lengths(rule: FieldRule, *lengths: int | None) -> None:
    if any(n is not None and (type(n) is not int or n not in _INT64) for n in lengths):
        raise _Inexpressible(rule.name)


def _value_type(rule: FieldRule, depth: int = 0) -> Any:
    if rule.fallback is not None or rule.unique_items or rule.multiple_of is not None or not rule.types:
        raise _Inexpressible(rule.name)
    if rule.pattern is not None and depth > 1:  # _pattern_checks matches fields and arrays of strings only
        raise _Inexpressible(rule.name)
    _lengths(rule, rule.min_length, rule.max_length, rule.min_items, rule.max_items)
    if rule.enum is not None:
        return _enum_type(rule)
    kinds: list[Any] = []
    for json_type in sorted(rule.types):
        if json_type == "string":
            kinds.append(_annotated(str, min_length=rule.min_length, max_length=rule.max_length))
        elif json_type in ("integer", "number"):
            bounds = {
                "ge": rule.minimum,
                "le": rule.maximum,
                "gt": rule.exclusive_minimum,
                "lt": rule.exclusive_maximum,
            }
            kinds.append(_annotated(int, **_int_bounds(rule, **bounds)))
            if json_type == "number":
                kinds.append(_annotated(float, **_float_bounds(rule, **bounds)))
        elif json_type == "boolean":
            kinds.append(bool)
        elif json_type == "null":
            kinds.append(None)
        elif json_type == "array":
            if rule.items is None:
                raise _Inexpressible(rule.name)
            kinds.append(_list_of(_value_type(rule.items, depth + 1), rule.min_items, rule.max_items))
        elif json_type == "object" and rule.open_object:
            kinds.append(dict[str, Any])
        else:
            raise _Inexpressible(rule.name)
    return _union_of(kinds)


def _enum_type(rule: FieldRule) -> Any:
    assert rule.enum is not None
    values = []
    for value in rule.enum:
        kind = json_type_of(value)
        if (
            isinstance(value, bool)
            or not isinstance(value, str | int)
            or (rule.types and kind not in rule.types and not (kind == "integer" and "number" in rule.types))
        ):
            if value is None and "null" in rule.types:
                continue
            raise _Inexpressible(rule.name)
        if type(value) is int and value not in _INT64:
            raise _Inexpressible(rule.name)
        if isinstance(value, str):
            if value.strip() != value:  # the diagnostic path trims before the enum check: not the same outcome
                raise _Inexpressible(rule.name)
            too_short = rule.min_length is not None and len(value) < rule.min_length
            too_long = rule.max_length is not None and len(value) > rule.max_length
            if too_short or too_long or (rule.pattern is not None and not rule.pattern.search(value)):
                continue  # the schema allows no such value: leave it out of the Literal
        values.append(value)
    if not values:
        raise _Inexpressible(rule.name)
    literal = Literal.__getitem__(tuple(values))
    return _union_of([literal, None]) if None in rule.enum and "null" in rule.types else literal


# Types are assembled at run time from the schema, so they are built with the typing objects' own
# subscription methods rather than written as annotations.


def _annotated(base: Any, **constraints: Any) -> Any:
    meta = msgspec.Meta(**{k: v for k, v in constraints.items() if v is not None})
    return Annotated.__class_getitem__((base, meta))  # type: ignore[attr-defined]


def _list_of(item: Any, min_items: int | None, max_items: int | None) -> Any:
    return _annotated(list.__class_getitem__(item), min_length=min_items, max_length=max_items)


def _union_of(kinds: list[Any]) -> Any:
    return Union.__getitem__(tuple(kinds)) if len(kinds) > 1 else kinds[0]
