"""msgspec Struct types generated from one compiled schema, and the decline tests that go with them.

These are the fast path's half of each rule (the diagnostic path's half is ``fields.check_value`` and
``findings.Findings``): the Struct types mirror the field rules exactly (types, enums, bounds, patterns, required
and unknown fields, the line rules, ``end_line`` before ``line`` through ``__post_init__``), and the functions
below cover what a Struct cannot see: string trimming, repeated keys, reconciliation and duplicate ids. Every test
here may only say "clean as written" or "not sure": it never builds a diagnostic. Rules msgspec cannot mirror
exactly (fallback subschemas, uniqueItems, multipleOf, untyped fields, open objects with declared members) make
``TypedShape.build`` return None: that schema version is then read by the diagnostic path only.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, Union

import msgspec

from promptops.contract import Contract
from promptops.parsing.duplicates import may_have_duplicates
from promptops.parsing.reconcile import ChangedFiles
from promptops.shape import FieldRule, ObjectShape, OutputShape, json_type_of

UNSET = msgspec.UNSET
DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError, ValueError)

_strip = str.strip
_chain = itertools.chain.from_iterable
_to_builtins = msgspec.to_builtins


class _Inexpressible(Exception):
    """A rule the Struct types cannot mirror exactly."""


class TypedShape:
    """Decoders and getters for one schema version of a contract."""

    def __init__(self, contract: Contract, shape: OutputShape) -> None:
        self.shape = shape
        roles = contract.roles
        line_fields = {name for name in (roles.line, roles.end_line) if name is not None}
        line_pair = (roles.line, roles.end_line) if roles.line and roles.end_line else None
        self.item_type, item_names = _struct("Finding", shape.item, line_fields)
        # Version fields are plain strings here: the fast path checks each distinct declaration once, with the
        # diagnostic path's own rules (FastPath.versions_ok).
        version_fields = {name for name in (contract.versions.schema, contract.versions.prompt) if name}
        response, top_names = _struct(
            "Response", shape.top, set(), items=(contract.items, self.item_type), plain_strings=version_fields
        )
        self.decode_response = msgspec.json.Decoder(response).decode
        self.items = operator.attrgetter(top_names[contract.items])
        version_attrs = [top_names[n] for n in (contract.versions.schema, contract.versions.prompt) if n]
        self.versions = operator.attrgetter(*version_attrs) if len(version_attrs) == 2 else None
        self._path = operator.attrgetter(item_names[roles.path]) if roles.path else None
        self._path_optional = roles.path is not None and roles.path not in shape.item.required
        self._id = operator.attrgetter(item_names[roles.id]) if roles.id else None
        # Paths are compared before any coercion: when backslashes become "/", a path holding one is never in
        # place as written (ChangedFiles.written), whatever the changed files' names.
        self._plain_paths = roles.path is not None and contract.coercions.path_separators
        self.depth = _depth(shape, contract.items)
        self.item_open = any(r.open_object for r in shape.item.properties.values())
        # The strings trimming could change: free text (enum values are clean by construction, and the version
        # fields are checked with the versions), alone or in arrays.
        self._top_strings = _strings(shape.top, top_names, {contract.items, *version_fields})
        self._item_strings = _strings(shape.item, item_names, set())
        top_open = [top_names[n] for n, r in shape.top.properties.items() if r.open_object]
        self.top_open = _tuple_getter(top_open) if top_open else None
        self._line_order = (
            _line_order(item_names[line_pair[0]], item_names[line_pair[1]])
            if line_pair is not None and all(n in item_names for n in line_pair)
            else None
        )

    def clean(self, obj: Any, items: list[Any], data: bytes, changed: ChangedFiles) -> bool:
        """A decoded response is clean as written: its findings pass ``_written`` and no key is repeated (``data``
        is the text it was decoded from)."""
        strings = itertools.chain(self._top_strings(obj), _chain(map(self._item_strings, items)))
        return self._written(strings, items, changed) and not may_have_duplicates(data, obj)

    def _written(self, strings: Iterable[Any], items: list[Any], changed: ChangedFiles, ids: bool = True) -> bool:
        """No end line before its line, no free string with whitespace at an edge, every finding in place (and,
        with ``ids``, no two findings sharing an id)."""
        if self._line_order is not None and not self._line_order(items):
            return False
        present = tuple(filter(None, strings))
        return tuple(map(_strip, present)) == present and self.in_place(items, changed, ids)

    @classmethod
    def build(cls, contract: Contract, shape: OutputShape) -> TypedShape | None:
        """The typed shape, or None when its rules are beyond what Structs express exactly."""
        try:
            return cls(contract, shape)
        except (_Inexpressible, TypeError):
            return None

    def in_place(self, items: list[Any], changed: ChangedFiles, ids: bool = True) -> bool:
        """Every finding names a changed file exactly as written, and (with ``ids``) no two share an id."""
        if self._path is not None:
            located: Iterable[Any] = map(self._path, items)
            if self._path_optional:
                located = filter(_is_set, located)
            if not all(map(changed.written(self._plain_paths).__contains__, located)):
                return False
        return not ids or self._id is None or len(set(map(self._id, items))) == len(items)

    def as_written(self, items: list[Any], changed: ChangedFiles) -> list[dict[str, Any] | None]:
        """For each decoded finding, its result (members in schema order) when it passes every rule as written
        (no coercion, no drop, no note), else None. The rules are checked on all the findings the Structs take
        at once, and one by one only when some finding fails them."""
        structs = list(map(self._struct_of, items))
        taken = [struct for struct in structs if struct is not None]
        if not self._written(_chain(map(self._item_strings, taken)), taken, changed, ids=False):
            structs = [
                s if s is not None and self._written(self._item_strings(s), [s], changed, False) else None
                for s in structs
            ]
        return [None if struct is None else _to_builtins(struct) for struct in structs]

    def _struct_of(self, item: Any) -> Any:
        try:
            return msgspec.convert(item, self.item_type)
        except DECODE_ERRORS:
            return None


def _strings(shape: ObjectShape, names: dict[str, str], skip: set[str]) -> Callable[[Any], Iterable[Any]]:
    """A getter of the free strings of a Struct of ``shape`` (UNSET, None and "" included, to be filtered)."""
    single: list[str] = []
    lists: list[Callable[[Any], Any]] = []
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
                lists.append(operator.attrgetter(names[name]))
    get: Callable[[Any], Iterable[Any]]
    if not single:
        get = _nothing
    elif len(single) == 1:
        one = operator.attrgetter(single[0])
        get = lambda struct: (one(struct),)  # noqa: E731
    else:
        get = operator.attrgetter(*single)
    if not lists:
        return get
    return lambda struct: itertools.chain(get(struct), _chain(filter(None, (g(struct) for g in lists))))


def _tuple_getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    if len(names) == 1:
        one = operator.attrgetter(names[0])
        return lambda struct: (one(struct),)
    return operator.attrgetter(*names)


def _nothing(_: Any) -> tuple[()]:
    return ()


def _is_set(value: Any) -> bool:
    return value is not UNSET


def _depth(shape: OutputShape, items_field: str) -> int:
    """How deep a response of this shape nests at most (the top object is 1), an open object counted as one
    level (it may nest deeper: see ``top_open`` and ``item_open``)."""

    def of_rule(rule: FieldRule) -> int:
        if rule.open_object:
            return 1
        if rule.items is not None:
            inner = of_rule(rule.items)
            return None if inner is None else 1 + inner
        return 0

    def of_object(obj: ObjectShape) -> int:
        return 1 + max([0, *(of_rule(rule) for rule in obj.properties.values())])

    item = of_object(shape.item)
    top = of_object(shape.top._replace(properties={k: v for k, v in shape.top.properties.items() if k != items_field}))
    return max(top, 2 + item)


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


def _line_order(line: str, end_line: str) -> Callable[[list[Any]], bool]:
    """No finding of a list ends before its line. Most findings give no end line: those lists are passed over
    in C, the others compared one by one."""
    line_of, end_of = operator.attrgetter(line), operator.attrgetter(end_line)

    def in_order(items: list[Any]) -> bool:
        ends = list(map(end_of, items))
        if ends.count(UNSET) == len(ends):
            return True
        pairs = zip(ends, map(line_of, items), strict=True)
        return not any(end is not UNSET and start is not UNSET and end < start for end, start in pairs)

    return in_order


def _line_type(rule: FieldRule) -> Any:
    if rule.fallback is not None or rule.enum is not None or rule.multiple_of is not None:
        raise _Inexpressible(rule.name)
    low = max(1, rule.minimum) if rule.minimum is not None else 1
    return _annotated(int, ge=low, le=rule.maximum, gt=rule.exclusive_minimum, lt=rule.exclusive_maximum)


def _value_type(rule: FieldRule) -> Any:
    if rule.fallback is not None or rule.unique_items or rule.multiple_of is not None or not rule.types:
        raise _Inexpressible(rule.name)
    if rule.enum is not None:
        return _enum_type(rule)
    kinds: list[Any] = []
    for json_type in sorted(rule.types):
        if json_type == "string":
            pattern = rule.pattern.pattern if rule.pattern is not None else None
            kinds.append(_annotated(str, min_length=rule.min_length, max_length=rule.max_length, pattern=pattern))
        elif json_type in ("integer", "number"):
            bounds = {
                "ge": rule.minimum,
                "le": rule.maximum,
                "gt": rule.exclusive_minimum,
                "lt": rule.exclusive_maximum,
            }
            kinds.append(_annotated(int, **bounds))
            if json_type == "number":
                kinds.append(_annotated(float, **bounds))
        elif json_type == "boolean":
            kinds.append(bool)
        elif json_type == "null":
            kinds.append(None)
        elif json_type == "array":
            if rule.items is None:
                raise _Inexpressible(rule.name)
            kinds.append(_list_of(_value_type(rule.items), rule.min_items, rule.max_items))
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
