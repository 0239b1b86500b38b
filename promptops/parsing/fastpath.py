"""The typed fast path: accept a clean response in one C decoding pass.

Most responses need no diagnostics at all. For those, msgspec decodes and validates the whole document in C
against Struct types generated from the same FieldRules the diagnostic path uses, and a few vectorized checks
cover what a Struct cannot express: surrounding whitespace, duplicate keys, version acceptance, line ranges
and reconciliation. Anything else (a coercion, a drop, a rejection, a wrapper) returns None and the
diagnostic path decides, so both paths give the same outcome for every input (the test suite checks this
differentially). Rules msgspec cannot express exactly (fallback subschemas, uniqueItems, multipleOf, untyped
fields) switch the fast path off for that schema version.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Iterable
from typing import Annotated, Any, Literal, Union

import msgspec

from promptops.contract import Contract
from promptops.errors import VersionError
from promptops.parsing import paths
from promptops.parsing.diagnostics import Diagnostic, ParseOutcome, duplicate_ids
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.scan import native, python_clean, strings_clean
from promptops.parsing.versions import VersionGate
from promptops.shape import FieldRule, ObjectShape, OutputShape, json_type_of
from promptops.versioning import PromptVersion, SchemaVersion

UNSET = msgspec.UNSET
_is_set = functools.partial(operator.is_not, UNSET)
_VERSION_CACHE_LIMIT = 4096
_DECODE_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError)


class _Inexpressible(Exception):
    """A rule the Struct types cannot mirror exactly."""


class FastPath:
    """Decoder and checks for one schema version of a contract."""

    def __init__(self, contract: Contract, shape: OutputShape, gate: VersionGate, *, speedups: bool = True) -> None:
        self._contract = contract
        self._shape = shape
        self._gate = gate
        roles = contract.roles
        self._line_fields = {name for name in (roles.line, roles.end_line) if name is not None}
        item_type, self._item_names = _struct("Finding", shape.item, self._line_fields)
        self._item_type = item_type
        # Version fields are checked once per distinct value by _learn_versions (pattern included), so the
        # decoder reads them as plain strings instead of running their regex on every response.
        version_fields = {name for name in (contract.versions.schema, contract.versions.prompt) if name}
        top_type, self._top_names = _struct(
            "Response", shape.top, set(), items=(contract.items, item_type), plain_strings=version_fields
        )
        self._decoder = msgspec.json.Decoder(top_type)
        self._encoder = msgspec.json.Encoder()
        self._versions_ok: dict[tuple[Any, Any], bool] = {}
        top, item = shape.top, shape.item
        self._items_attr = attr(self._top_names[contract.items])
        self._top_strings = _getter(self._top_names[n] for n in _string_fields(top) if n != contract.items)
        self._top_string_lists = [attr(self._top_names[n]) for n in _string_list_fields(top)]
        self._item_strings = _getter(self._item_names[n] for n in _string_fields(item))
        self._item_string_lists = [attr(self._item_names[n]) for n in _string_list_fields(item)]
        # Open objects are the only members whose depth the Struct types do not bound.
        self._top_open = [attr(self._top_names[n]) for n, r in top.properties.items() if r.open_object]
        self._item_open = [attr(self._item_names[n]) for n, r in item.properties.items() if r.open_object]
        self._path = attr(self._item_names[roles.path]) if roles.path else None
        self._line = attr(self._item_names[roles.line]) if roles.line else None
        self._end_line = attr(self._item_names[roles.end_line]) if roles.line and roles.end_line else None
        self._id = attr(self._item_names[roles.id]) if roles.id else None
        version_attrs = [self._top_names[n] for n in (contract.versions.schema, contract.versions.prompt) if n]
        self._versions = operator.attrgetter(*version_attrs) if len(version_attrs) == 2 else None
        self._path_optional = roles.path is not None and roles.path not in item.required
        self._has_open_objects = bool(self._top_open or self._item_open)
        self._native = native if speedups else None
        self._items_path = paths.member(None, contract.items)

    @classmethod
    def build(
        cls, contract: Contract, shape: OutputShape, gate: VersionGate, *, speedups: bool = True
    ) -> FastPath | None:
        """The fast path for ``shape``, or None when its rules are beyond what Structs express exactly."""
        try:
            return cls(contract, shape, gate, speedups=speedups)
        except (_Inexpressible, TypeError):
            return None

    def parse(
        self, data: bytes | str, changed: ChangedFiles, max_depth: int, request_versions: tuple[str, str] | None
    ) -> ParseOutcome | None:
        try:
            obj = self._decoder.decode(data)
        except _DECODE_ERRORS:
            return None
        if request_versions is None:
            assert self._versions is not None  # contracts without version fields always pass request versions
            versions = self._versions(obj)
        else:
            versions = request_versions
        if self._versions_ok.get(versions) is not True and not self._learn_versions(versions):
            return None
        items = self._items_attr(obj)
        if not (self._native(data) if self._native is not None else self._python_gate(data, obj, items)):
            return None
        if not self._in_place(items, changed):
            return None
        if self._has_open_objects and not self._shallow(obj, items, max_depth):
            return None
        diagnostics = self._duplicate_ids(items) if self._id is not None else []
        return ParseOutcome.clean(diagnostics, functools.partial(msgspec.to_builtins, obj), versions, len(items))

    def kept_as_is(self, item: dict[str, Any], changed: ChangedFiles) -> dict[str, Any] | None:
        """One decoded finding in schema order if it is kept exactly as written (no drop, no coercion).

        The diagnostic path asks this first, so only the findings that need attention pay for field-by-field
        checks (repeated keys were already ruled out by the document reader).
        """
        try:
            typed = msgspec.convert(item, self._item_type)
        except msgspec.ValidationError:
            return None
        if not strings_clean(self._item_free_strings([typed])) or not self._in_place([typed], changed):
            return None
        kept: dict[str, Any] = msgspec.to_builtins(typed)
        return kept

    def _python_gate(self, data: bytes | str, obj: Any, items: list[Any]) -> bool:
        strings = itertools.chain(self._top_strings(obj), self._item_free_strings(items))
        for getter in self._top_string_lists:
            strings = itertools.chain(strings, getter(obj) or ())
        return python_clean(data, obj, strings)

    def _item_free_strings(self, items: list[Any]) -> Iterable[Any]:
        strings: Iterable[Any] = itertools.chain.from_iterable(map(self._item_strings, items))
        for getter in self._item_string_lists:
            strings = itertools.chain(strings, itertools.chain.from_iterable(filter(None, map(getter, items))))
        return strings

    def _in_place(self, items: list[Any], changed: ChangedFiles) -> bool:
        """Every finding names a changed file (exactly, already normal) and has a sane line range."""
        if self._path is not None:
            located = filter(_is_set, map(self._path, items)) if self._path_optional else map(self._path, items)
            if not all(map(changed.normal.__contains__, located)):
                return False
        if self._end_line is not None and self._line is not None:
            for end, line in zip(map(self._end_line, items), map(self._line, items), strict=True):
                if end is not UNSET and end < line:
                    return False
        return True

    def _learn_versions(self, versions: tuple[Any, Any]) -> bool:
        """Whether these exact declarations are clean, accepted, and read with this path's schema."""
        schema_text, prompt_text = versions
        ok = False
        clean = type(schema_text) is str and type(prompt_text) is str
        if clean and schema_text.strip() == schema_text and prompt_text.strip() == prompt_text:
            try:
                verdict = self._gate.judge(SchemaVersion.parse(schema_text), PromptVersion.parse(prompt_text))
            except VersionError:
                pass
            else:
                ok = verdict.accepted and verdict.shape is self._shape and not verdict.tolerant
                ok = ok and all(self._matches_rule(name, text) for name, text in self._version_texts(versions))
        if len(self._versions_ok) >= _VERSION_CACHE_LIMIT:
            self._versions_ok.clear()
        self._versions_ok[versions] = ok
        return ok

    def _version_texts(self, versions: tuple[Any, Any]) -> list[tuple[str, str]]:
        fields = (self._contract.versions.schema, self._contract.versions.prompt)
        return [(name, text) for name, text in zip(fields, versions, strict=True) if name is not None]

    def _matches_rule(self, name: str, text: str) -> bool:
        rule = self._shape.top.properties[name]
        too_short = rule.min_length is not None and len(text) < rule.min_length
        too_long = rule.max_length is not None and len(text) > rule.max_length
        return not too_short and not too_long and (rule.pattern is None or rule.pattern.search(text) is not None)

    def _shallow(self, obj: Any, items: list[Any], max_depth: int) -> bool:
        # An open object nests below the top-level object (1 level), or below top, array and finding (3).
        values = [(getter(obj), 1) for getter in self._top_open]
        values += [(getter(item), 3) for getter in self._item_open for item in items]
        return all(value is UNSET or level + _depth(value) <= max_depth for value, level in values)

    def _duplicate_ids(self, items: list[Any]) -> list[Diagnostic]:
        assert self._id is not None
        ids = list(map(self._id, items))
        if len(set(ids)) == len(ids):
            return []
        return duplicate_ids(enumerate(ids), self._items_path, self._contract.roles.id or "id")


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


def _depth(value: Any) -> int:
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
