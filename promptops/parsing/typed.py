"""Struct types generated from a compiled schema, and the vectorized checks that go with them.

msgspec decodes and validates JSON in C against Struct types. ``TypedShape`` builds three decoders from one
OutputShape: the whole response (findings typed), the envelope (findings left as raw JSON slices, decoded one
by one later), and a single finding; plus the attribute getters the fast paths use for what a Struct cannot
express (trimming, reconciliation, line ranges, duplicate ids, depth of open objects). Rules msgspec cannot
mirror exactly (fallback subschemas, uniqueItems, multipleOf, untyped fields, open objects with declared
members) make ``TypedShape.build`` return None: that schema version is then read by the diagnostic path only.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, Union

import msgspec

from promptops.contract import Contract
from promptops.parsing import paths
from promptops.parsing.diagnostics import Diagnostic, duplicate_ids
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.scan import strings_clean
from promptops.shape import FieldRule, ObjectShape, OutputShape, json_type_of

UNSET = msgspec.UNSET
DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError)
_is_set = functools.partial(operator.is_not, UNSET)
PLACE_OK, PLACE_OUT, PLACE_IDS_REPEAT = 0, 1, 2  # verdicts of TypedShape.placed and scan.native_placed


class _Inexpressible(Exception):
    """A rule the Struct types cannot mirror exactly."""


class TypedShape:
    """Decoders and getters for one schema version of a contract."""

    def __init__(self, contract: Contract, shape: OutputShape) -> None:
        self.contract = contract
        self.shape = shape
        roles = contract.roles
        line_fields = {name for name in (roles.line, roles.end_line) if name is not None}
        self.item_type, item_names = _struct("Finding", shape.item, line_fields)
        # Version fields are checked once per distinct value by the fast path's version cache (pattern
        # included), so the decoders read them as plain strings instead of running a regex every time.
        version_fields = {name for name in (contract.versions.schema, contract.versions.prompt) if name}
        response, top_names = _struct(
            "Response", shape.top, set(), items=(contract.items, self.item_type), plain_strings=version_fields
        )
        envelope, _ = _struct(
            "Envelope", shape.top, set(), items=(contract.items, msgspec.Raw), plain_strings=version_fields
        )
        self.decode_response = msgspec.json.Decoder(response).decode
        self.decode_envelope = msgspec.json.Decoder(envelope).decode
        self.decode_item = msgspec.json.Decoder(self.item_type).decode
        top, item = shape.top, shape.item
        self.items = attr(top_names[contract.items])
        self.top_fields = [(name, attr(top_names[name])) for name in top.properties if name != contract.items]
        self.top_strings = _getter(top_names[n] for n in _string_fields(top) if n != contract.items)
        self.top_string_lists = [attr(top_names[n]) for n in _string_list_fields(top)]
        self._item_strings = _getter(item_names[n] for n in _string_fields(item))
        self._item_string_lists = [attr(item_names[n]) for n in _string_list_fields(item)]
        # Open objects are the only members whose depth the Struct types do not bound.
        self._top_open = [attr(top_names[n]) for n, r in top.properties.items() if r.open_object]
        self._item_open = [attr(item_names[n]) for n, r in item.properties.items() if r.open_object]
        self.has_open_objects = bool(self._top_open or self._item_open)
        # ``shallow`` can only fail for a non-empty open member: one C getter tells when the top has none.
        self.top_open_values = _getter(top_names[n] for n, r in top.properties.items() if r.open_object)
        self.has_item_open = bool(self._item_open)
        # Truthy when ``shallow`` has something to look at (None: never): what the fast path calls per response.
        self.open_probe: Callable[[Any], Any] | None
        if not self.has_open_objects:
            self.open_probe = None
        elif self.has_item_open:
            self.open_probe = _always
        elif len(self._top_open) == 1:
            self.open_probe = self._top_open[0]  # UNSET and empty objects are falsy
        else:
            self.open_probe = lambda obj: any(self.top_open_values(obj))
        self._path = attr(item_names[roles.path]) if roles.path else None
        self._path_optional = roles.path is not None and roles.path not in item.required
        self._line = attr(item_names[roles.line]) if roles.line else None
        self._end_line = attr(item_names[roles.end_line]) if roles.line and roles.end_line else None
        self._id = attr(item_names[roles.id]) if roles.id else None
        # Paths are read before any coercion: when backslashes become "/", a path holding one is never in
        # place as written (ChangedFiles.listed_plain), whatever the changed files' names.
        self.plain_paths = roles.path is not None and contract.coercions.path_separators
        # The fields ``placed`` and ``marks`` read, for their C twins (scan.native_placed, scan.native_marks):
        # the slot descriptor of each (read directly), else its attribute name; None where the role is absent.
        slots = vars(self.item_type)
        self.place_fields: tuple[Any, ...] = tuple(
            slots.get(item_names[name], item_names[name]) if name else None
            for name in (roles.path, roles.line, roles.end_line if roles.line else None, roles.id)
        )
        # Every field of a response and of a finding, for the member count (members, scan.native_members).
        response_slots = vars(response)
        self.member_slots: tuple[Any, ...] = (
            tuple(response_slots.get(name, name) for name in top_names.values()),
            self.item_type,
            tuple(slots.get(name, name) for name in item_names.values()),
        )
        self.plan: tuple[Any, ...] = (*self.member_slots, *self.place_fields, UNSET)  # for _place.checked
        version_attrs = [top_names[n] for n in (contract.versions.schema, contract.versions.prompt) if n]
        self.versions = operator.attrgetter(*version_attrs) if len(version_attrs) == 2 else None
        self._items_path = paths.member(None, contract.items)

    @classmethod
    def build(cls, contract: Contract, shape: OutputShape) -> TypedShape | None:
        """The typed shape, or None when its rules are beyond what Structs express exactly."""
        try:
            return cls(contract, shape)
        except (_Inexpressible, TypeError):
            return None

    def free_strings(self, items: list[Any]) -> Iterable[Any]:
        """The findings' strings that trimming could change (enum values are clean by construction)."""
        strings: Iterable[Any] = itertools.chain.from_iterable(map(self._item_strings, items))
        for getter in self._item_string_lists:
            strings = itertools.chain(strings, itertools.chain.from_iterable(filter(None, map(getter, items))))
        return strings

    def top_free_strings(self, obj: Any) -> Iterable[Any]:
        strings: Iterable[Any] = self.top_strings(obj)
        for getter in self.top_string_lists:
            strings = itertools.chain(strings, getter(obj) or ())
        return strings

    def strings_clean_one(self, item: Any) -> bool:
        """No free string of one typed finding has surrounding whitespace (``free_strings``, for one)."""
        if not strings_clean(self._item_strings(item)):
            return False
        return all(strings_clean(getter(item) or ()) for getter in self._item_string_lists)

    def in_place(self, items: list[Any], changed: ChangedFiles) -> bool:
        """Every finding names a changed file (exactly, already normal) and has a sane line range."""
        if self._path is not None:
            located = filter(_is_set, map(self._path, items)) if self._path_optional else map(self._path, items)
            if not all(map(self._comparable(changed).__contains__, located)):
                return False
        if self._end_line is not None and self._line is not None:
            for end, line in zip(map(self._end_line, items), map(self._line, items), strict=True):
                if end is not UNSET and end < line:
                    return False
        return True

    def listed(self, changed: ChangedFiles) -> tuple[str, ...]:
        """The changed files a typed finding's path, as written, may be compared with (for the C helpers)."""
        return changed.listed_plain if self.plain_paths else changed.listed

    def _comparable(self, changed: ChangedFiles) -> frozenset[str]:
        """``listed`` as a set, for the Python twins."""
        return changed.normal_plain if self.plain_paths else changed.normal

    def placed(self, items: list[Any], changed: ChangedFiles) -> int:
        """1 when some finding is not ``in_place``; else 2 when two ids are equal, else 0 (reference for
        scan.native_placed, which answers the same in one C loop)."""
        if not self.in_place(items, changed):
            return PLACE_OUT
        if self._id is not None and len(items) > 1:
            ids = list(map(self._id, items))
            if len(set(ids)) != len(ids):
                return PLACE_IDS_REPEAT
        return PLACE_OK

    def marks(self, items: list[Any], changed: ChangedFiles) -> list[Any]:
        """Per finding: its ``finding_id`` when it is a typed Struct ``in_place_one``, else UNSET (reference for
        scan.native_marks)."""
        item_type = self.item_type
        return [
            self.finding_id(item) if type(item) is item_type and self.in_place_one(item, changed) else UNSET
            for item in items
        ]

    def finding_id(self, item: Any) -> str | None:
        """The id of a typed finding as diagnostics report it (clean strings need no trimming)."""
        value = self._id(item) if self._id is not None else None
        return value if type(value) is str and value else None

    def in_place_one(self, item: Any, changed: ChangedFiles) -> bool:
        """``in_place`` for a single typed finding, without the iterator setup."""
        if self._path is not None:
            path = self._path(item)
            if path is not UNSET and path not in self._comparable(changed):
                return False
        if self._end_line is not None and self._line is not None:
            end = self._end_line(item)
            if end is not UNSET and end < self._line(item):
                return False
        return True

    def members(self, obj: Any) -> int:
        """The object members a decoded response holds at any depth: its set fields, its findings' set fields,
        and the members of open objects (reference for _place.decoded_members, see scan.native_count)."""
        top_slots, item_type, item_slots = self.member_slots

        def held(value: Any) -> int:
            if type(value) is item_type:
                return of_struct(value, item_slots)
            if type(value) is list:
                return sum(map(held, value))
            if type(value) is dict:
                return len(value) + sum(map(held, value.values()))
            return 0

        def of_struct(struct: Any, slots: tuple[Any, ...]) -> int:
            values = [getattr(struct, getattr(slot, "__name__", slot)) for slot in slots]
            return sum(1 + held(value) for value in values if value is not UNSET)

        return of_struct(obj, top_slots)

    def shallow(self, obj: Any, items: list[Any], max_depth: int) -> bool:
        """Open objects (the only unbounded members) nest no deeper than ``max_depth``."""
        # An open object sits below the top-level object (1 level), or below top, array and finding (3).
        for getter in self._top_open:
            value = getter(obj)
            if value and value is not UNSET and 1 + json_depth(value) > max_depth:
                return False
        for getter in self._item_open:
            for item in items:
                value = getter(item)
                if value and value is not UNSET and 3 + json_depth(value) > max_depth:
                    return False
        return True

    def duplicate_ids(self, items: list[Any]) -> list[Diagnostic]:
        if self._id is None:
            return []
        ids = list(map(self._id, items))
        if len(set(ids)) == len(ids):
            return []
        return duplicate_ids(enumerate(ids), self._items_path, self.contract.roles.id or "id")


def _always(_: Any) -> bool:
    return True


def attr(name: str) -> Callable[[Any], Any]:
    return operator.attrgetter(name)


def _getter(names: Iterable[str]) -> Callable[[Any], tuple[Any, ...]]:
    names = tuple(names)
    if not names:
        return lambda _: ()
    if len(names) == 1:
        single = operator.attrgetter(names[0])
        return lambda obj: (single(obj),)
    return operator.attrgetter(*names)


def _string_fields(shape: ObjectShape) -> list[str]:
    # Enum fields are decoded as Literals of clean values, so only free strings can need trimming.
    return [name for name, rule in shape.properties.items() if "string" in rule.types and rule.enum is None]


def _string_list_fields(shape: ObjectShape) -> list[str]:
    return [
        name
        for name, rule in shape.properties.items()
        if rule.items is not None and "array" in rule.types and "string" in rule.items.types
    ]


def json_depth(value: Any) -> int:
    """Nesting depth of a decoded JSON value (a scalar is 0, [] is 1)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, level)
            children = node.values() if isinstance(node, dict) else node
            stack.extend((child, level + 1) for child in children)
    return deepest


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
        name, fields, rename={v: k for k, v in names.items()}, kw_only=True, forbid_unknown_fields=True, gc=False
    )
    return struct, names


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
            if value.strip() != value:  # the slow path trims before the enum check: not the same outcome
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
