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
from promptops.parsing.diagnostics import WARNING, Code, Diagnostic, ParseOutcome
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.versions import VersionGate
from promptops.shape import FieldRule, ObjectShape, OutputShape, json_type_of
from promptops.versioning import PromptVersion, SchemaVersion

UNSET = msgspec.UNSET
_is_set = functools.partial(operator.is_not, UNSET)
_strip = str.strip
_VERSION_CACHE_LIMIT = 4096


class _Inexpressible(Exception):
    """A rule the Struct types cannot mirror exactly."""


class FastPath:
    """Decoder and checks for one schema version of a contract."""

    def __init__(self, contract: Contract, shape: OutputShape, gate: VersionGate) -> None:
        self._contract = contract
        self._shape = shape
        self._gate = gate
        roles = contract.roles
        self._line_fields = {name for name in (roles.line, roles.end_line) if name is not None}
        item_type, self._item_names = _struct("Finding", shape.item, self._line_fields)
        top_type, self._top_names = _struct("Response", shape.top, set(), items=(contract.items, item_type))
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
        self._schema_field = attr(self._top_names[contract.versions.schema]) if contract.versions.schema else None
        self._prompt_field = attr(self._top_names[contract.versions.prompt]) if contract.versions.prompt else None
        self._items_path = paths.member(None, contract.items)

    @classmethod
    def build(cls, contract: Contract, shape: OutputShape, gate: VersionGate) -> FastPath | None:
        """The fast path for ``shape``, or None when its rules are beyond what Structs express exactly."""
        try:
            return cls(contract, shape, gate)
        except (_Inexpressible, TypeError):
            return None

    def parse(
        self, data: bytes | str, changed: ChangedFiles, max_depth: int, request_versions: tuple[str, str] | None
    ) -> ParseOutcome | None:
        try:
            obj = self._decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None
        if request_versions is None:
            assert self._schema_field is not None and self._prompt_field is not None
            versions = (self._schema_field(obj), self._prompt_field(obj))
        else:
            versions = request_versions
        if self._versions_ok.get(versions) is not True and not self._learn_versions(versions):
            return None
        items = self._items_attr(obj)
        if not self._clean_strings(obj, items):
            return None
        if self._path is not None:
            located = filter(_is_set, map(self._path, items))
            if not all(map(changed.exact, located)):
                return None
        if self._end_line is not None and self._line is not None:
            for end, line in zip(map(self._end_line, items), map(self._line, items), strict=True):
                if end is not UNSET and end < line:
                    return None
        if (self._top_open or self._item_open) and not self._shallow(obj, items, max_depth):
            return None
        colons = data.count(b":") if isinstance(data, bytes) else data.count(":")
        if colons != self._encoder.encode(obj).count(b":") or (b"\\u003" in data if isinstance(data, bytes) else "\\u003" in data):
            return None  # a repeated key (or an escaped colon we cannot account for): let the slow path look
        diagnostics = self._duplicate_ids(items) if self._id is not None else []
        return ParseOutcome(
            accepted=True, reason=None, diagnostics=diagnostics, materialize=functools.partial(msgspec.to_builtins, obj),
            schema_version=versions[0], prompt_version=versions[1],
            findings_seen=len(items), findings_kept=len(items),
        )

    def _learn_versions(self, versions: tuple[Any, Any]) -> bool:
        """Whether these exact declarations are clean, accepted, and read with this path's schema."""
        schema_text, prompt_text = versions
        ok = False
        if type(schema_text) is str and type(prompt_text) is str and schema_text.strip() == schema_text:
            try:
                schema, prompt = SchemaVersion.parse(schema_text), PromptVersion.parse(prompt_text)
            except VersionError:
                schema = prompt = None
            if schema is not None and prompt is not None and prompt_text.strip() == prompt_text:
                verdict = self._gate.judge(schema, prompt)
                ok = verdict.accepted and verdict.shape is self._shape and not verdict.tolerant
        if len(self._versions_ok) >= _VERSION_CACHE_LIMIT:
            self._versions_ok.clear()
        self._versions_ok[versions] = ok
        return ok

    def _clean_strings(self, obj: Any, items: list[Any]) -> bool:
        """No string needs trimming (compared with identity: strip returns the same object when clean)."""
        strings: Iterable[Any] = itertools.chain(self._top_strings(obj), itertools.chain.from_iterable(map(self._item_strings, items)))
        for getter in self._top_string_lists:
            strings = itertools.chain(strings, getter(obj) or ())
        for getter in self._item_string_lists:
            strings = itertools.chain(strings, itertools.chain.from_iterable(filter(None, map(getter, items))))
        present = tuple(filter(None, strings))  # drops UNSET, None and "" (nothing to trim)
        return tuple(map(_strip, present)) == present

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
        diagnostics = []
        first: dict[str, int] = {}
        for index, finding_id in enumerate(ids):
            if type(finding_id) is not str or not finding_id:
                continue
            if finding_id in first:
                base = paths.element(self._items_path, index)
                where = paths.member(base, self._contract.roles.id or "id")
                message = f"finding id {finding_id!r} is also used by {paths.element(self._items_path, first[finding_id])}"
                diagnostics.append(Diagnostic(Code.DUPLICATE_FINDING_ID, WARNING, where, message, index, finding_id))
            else:
                first[finding_id] = index
        return diagnostics


def attr(name: str) -> Callable[[Any], Any]:
    return operator.attrgetter(name)


def _getter(names: Iterable[str]) -> Callable[[Any], tuple[Any, ...]]:
    names = tuple(names)
    if not names:
        return lambda _: ()
    if len(names) == 1:
        single = operator.attrgetter(names[0])
        return lambda obj: (single(obj),)
    return operator.attrgetter(*names)  # type: ignore[return-value]


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
    name: str, shape: ObjectShape, line_fields: set[str], items: tuple[str, Any] | None = None
) -> tuple[Any, dict[str, str]]:
    if shape.additional:
        raise _Inexpressible(f"{name}: open objects keep unknown members the Struct would drop")
    fields: list[Any] = []
    names: dict[str, str] = {}
    for index, (json_name, rule) in enumerate(shape.properties.items()):
        attr_name = f"f{index}"
        names[json_name] = attr_name
        if items is not None and json_name == items[0]:
            kind: Any = Annotated[list[items[1]], _meta(min_length=rule.min_items, max_length=rule.max_items)]  # type: ignore[name-defined]
        elif json_name in line_fields:
            kind = _line_type(rule)
        else:
            kind = _value_type(rule)
        if json_name in shape.required:
            fields.append((attr_name, kind))
        else:
            fields.append((attr_name, Union[kind, msgspec.UnsetType], UNSET))  # noqa: UP007
    struct = msgspec.defstruct(
        name, fields, rename={v: k for k, v in names.items()}, kw_only=True, forbid_unknown_fields=True, gc=False
    )
    return struct, names


def _line_type(rule: FieldRule) -> Any:
    if rule.fallback is not None or rule.enum is not None or rule.multiple_of is not None:
        raise _Inexpressible(rule.name)
    low = max(1, rule.minimum) if rule.minimum is not None else 1
    return Annotated[int, _meta(ge=low, le=rule.maximum, gt=rule.exclusive_minimum, lt=rule.exclusive_maximum)]


def _value_type(rule: FieldRule) -> Any:
    if rule.fallback is not None or rule.unique_items or rule.multiple_of is not None or not rule.types:
        raise _Inexpressible(rule.name)
    if rule.enum is not None:
        return _enum_type(rule)
    kinds: list[Any] = []
    for json_type in sorted(rule.types):
        if json_type == "string":
            pattern = rule.pattern.pattern if rule.pattern is not None else None
            kinds.append(Annotated[str, _meta(min_length=rule.min_length, max_length=rule.max_length, pattern=pattern)])
        elif json_type in ("integer", "number"):
            bounds = {"ge": rule.minimum, "le": rule.maximum, "gt": rule.exclusive_minimum, "lt": rule.exclusive_maximum}
            kinds.append(Annotated[int, _meta(**bounds)])
            if json_type == "number":
                kinds.append(Annotated[float, _meta(**bounds)])
        elif json_type == "boolean":
            kinds.append(bool)
        elif json_type == "null":
            kinds.append(None)
        elif json_type == "array":
            if rule.items is None:
                raise _Inexpressible(rule.name)
            kinds.append(Annotated[list[_value_type(rule.items)], _meta(min_length=rule.min_items, max_length=rule.max_items)])  # type: ignore[misc]
        elif json_type == "object" and rule.open_object:
            kinds.append(dict[str, Any])
        else:
            raise _Inexpressible(rule.name)
    return Union[tuple(kinds)] if len(kinds) > 1 else kinds[0]  # noqa: UP007


def _enum_type(rule: FieldRule) -> Any:
    assert rule.enum is not None
    values = []
    for value in rule.enum:
        kind = json_type_of(value)
        if isinstance(value, bool) or not isinstance(value, str | int) or (rule.types and kind not in rule.types and not (kind == "integer" and "number" in rule.types)):
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
    literal: Any = Literal[tuple(values)]
    return Union[literal, None] if None in rule.enum and "null" in rule.types else literal  # noqa: UP007


def _meta(**constraints: Any) -> msgspec.Meta:
    return msgspec.Meta(**{k: v for k, v in constraints.items() if v is not None})
