"""What an output schema says, compiled into plain rules the parser, renderer and linter share.

A contract's JSON Schema describes a top-level object holding one array of finding objects. ``compile_shape``
turns it into an ``OutputShape``: the top-level fields, the items field, and one ``FieldRule`` per property.
Field rules cover the keywords reviewer schemas use (type, enum/const, string, number and array bounds,
pattern); a field using anything else keeps its subschema in ``FieldRule.fallback`` and is checked by the
full JSON Schema validator instead, so no keyword is ever silently ignored. The two object levels themselves
must stay simple (properties, required, additionalProperties): the parser's drop/reject semantics are defined
on them, so anything else there is a contract error.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from promptops.core.errors import ContractError
from promptops.core.patterns import PatternError, SchemaPattern, compile_ecma
from promptops.core.versioning import SchemaVersion

JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})

# Keywords that never change which documents are valid (the compat engine adds the newer drafts' anchors).
ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "$schema",
        "$id",
        "definitions",
        "$defs",
        "readOnly",
        "writeOnly",
        "deprecated",
    }
)
# What the parser leaves unchecked besides: draft 7 treats formats and content encodings as annotations.
_UNCHECKED = ANNOTATIONS | {"format", "contentMediaType", "contentEncoding"}
# The keywords a field rule holds (anything else on a field goes to the full validator).
FIELD_KEYWORDS = frozenset(
    {
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "items",
        "maxItems",
        "minItems",
        "uniqueItems",
    }
)
# Every validation keyword of drafts 4 to 2020-12; anything outside this set is an unknown keyword, which
# JSON Schema validators ignore, and so do we (code-review-findings carries a top-level "_meta" block).
_VALIDATION_KEYWORDS = FIELD_KEYWORDS | {
    "additionalItems",
    "prefixItems",
    "contains",
    "minContains",
    "maxContains",
    "maxProperties",
    "minProperties",
    "required",
    "properties",
    "patternProperties",
    "additionalProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "propertyNames",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "$ref",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
}
_OBJECT_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties"})


# Value types are NamedTuples where nothing needs dataclasses.replace: the same fields, equality and hashing,
# at a fraction of a frozen dataclass's import-time cost, which every short-lived ``promptops lint`` pays.


class FieldRule(NamedTuple):
    """The constraints on one property, in the form the parser checks them."""

    name: str
    types: frozenset[str] = frozenset()  # empty: any JSON type
    enum: tuple[Any, ...] | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: SchemaPattern | None = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    exclusive_maximum: float | None = None
    multiple_of: float | None = None
    items: FieldRule | None = None
    min_items: int | None = None
    max_items: int | None = None
    unique_items: bool = False
    open_object: bool = False  # {"type": "object"} with no property rules: any members
    fallback: Mapping[str, Any] | None = None  # subschema checked by the full validator
    description: str | None = None
    format: str | None = None  # an annotation the parser does not check; the prompt states it, simulate honours it

    @property
    def nullable(self) -> bool:
        return "null" in self.types

    @property
    def enum_strings(self) -> tuple[str, ...] | None:
        """The enum as the text a prompt must restate, or None when the field has no enum."""
        if self.enum is None:
            return None
        return tuple(v if isinstance(v, str) else _json_text(v) for v in self.enum)


class ObjectShape(NamedTuple):
    properties: Mapping[str, FieldRule]
    required: tuple[str, ...]
    additional: bool  # unknown properties allowed

    @property
    def optional(self) -> tuple[str, ...]:
        return tuple(name for name in self.properties if name not in self.required)


@dataclass(frozen=True)
class OutputShape:
    version: SchemaVersion
    top: ObjectShape
    items_field: str
    item: ObjectShape
    schema: Mapping[str, Any] = field(repr=False)

    @property
    def items_rule(self) -> FieldRule:
        return self.top.properties[self.items_field]


def compile_shape(schema: Mapping[str, Any], version: SchemaVersion, items_field: str, source: str) -> OutputShape:
    """Compile ``schema`` (already checked against its metaschema) into an OutputShape."""
    check_nesting(schema, source)
    check_patterns(schema, source)
    resolver = _Refs(schema, source)
    top_schema = resolver.resolve(schema, "")
    top = _object_shape(top_schema, "", resolver, source, skip=items_field)
    if items_field not in top.properties:
        raise ContractError(source, f"the items field {items_field!r} is not a top-level property")
    array_schema = resolver.resolve(top_schema["properties"][items_field], items_field)
    if _types_of(array_schema, items_field, source) != frozenset({"array"}):
        raise ContractError(source, f"the items field {items_field!r} must have type array")
    extra = set(array_schema) - _UNCHECKED - {"type", "items", "minItems", "maxItems"}
    if extra & _VALIDATION_KEYWORDS:
        raise ContractError(source, f"{items_field}: unsupported keyword(s) {sorted(extra & _VALIDATION_KEYWORDS)}")
    item_schema = array_schema.get("items")
    if not isinstance(item_schema, Mapping):
        raise ContractError(source, f"{items_field}: 'items' must be one object schema")
    item = _object_shape(resolver.resolve(item_schema, f"{items_field}[]"), f"{items_field}[]", resolver, source)
    items_rule = FieldRule(
        name=items_field,
        types=frozenset({"array"}),
        min_items=array_schema.get("minItems"),
        max_items=array_schema.get("maxItems"),
        description=array_schema.get("description"),
    )
    properties = dict(top.properties)
    properties[items_field] = items_rule
    top = ObjectShape(properties=properties, required=top.required, additional=top.additional)
    return OutputShape(version=version, top=top, items_field=items_field, item=item, schema=schema)


def _object_shape(
    schema: Mapping[str, Any], where: str, refs: _Refs, source: str, skip: str | None = None
) -> ObjectShape:
    label = where or "top level"
    if _types_of(schema, label, source) != frozenset({"object"}):
        raise ContractError(source, f"{label}: must be an object schema with type 'object'")
    unsupported = (set(schema) & _VALIDATION_KEYWORDS) - _OBJECT_KEYWORDS
    if unsupported:
        raise ContractError(
            source, f"{label}: unsupported keyword(s) {sorted(unsupported)} on a top-level or finding object"
        )
    additional = schema.get("additionalProperties", True)
    if not isinstance(additional, bool):
        raise ContractError(source, f"{label}: additionalProperties must be true or false")
    raw_props = schema.get("properties", {})
    required = tuple(schema.get("required", ()))
    undeclared = [name for name in required if name not in raw_props]
    if undeclared:
        raise ContractError(source, f"{label}: required names undeclared properties {undeclared}")
    properties: dict[str, FieldRule] = {}
    for name, sub in raw_props.items():
        path = f"{where}.{name}" if where else name
        properties[name] = FieldRule(name=name) if name == skip else _field_rule(name, sub, path, refs, source)
    return ObjectShape(properties=properties, required=required, additional=additional)


def _field_rule(name: str, schema: Any, path: str, refs: _Refs, source: str) -> FieldRule:
    if schema is True or schema == {}:
        return FieldRule(name=name)
    if schema is False:
        return FieldRule(name=name, fallback={"not": {}})
    schema = refs.resolve(schema, path)
    description = schema.get("description")
    keywords = set(schema) & _VALIDATION_KEYWORDS
    types = _types_of(schema, path, source)
    is_open_object = (
        types == frozenset({"object"})
        and keywords <= {"type", "additionalProperties"}
        and (schema.get("additionalProperties", True) is True)
    )
    if is_open_object:
        return FieldRule(name=name, types=types, open_object=True, description=description)
    if not keywords <= FIELD_KEYWORDS or "object" in types or refs.has_ref(schema):
        return FieldRule(name=name, types=types, fallback=refs.inline(schema, path), description=description)
    enum: tuple[Any, ...] | None = None
    if "enum" in schema:
        enum = tuple(schema["enum"])
    if "const" in schema:
        enum = (schema["const"],) if enum is None else tuple(v for v in enum if json_equal(v, schema["const"]))
    items = None
    if "items" in schema:
        if not isinstance(schema["items"], Mapping | bool):
            return FieldRule(name=name, types=types, fallback=refs.inline(schema, path), description=description)
        items = _field_rule(f"{name}[]", schema["items"], f"{path}[]", refs, source)
    exclusive_min, exclusive_max = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    minimum, maximum = schema.get("minimum"), schema.get("maximum")
    if isinstance(exclusive_min, bool):  # draft-04 boolean form modifies minimum
        minimum, exclusive_min = (None, minimum) if exclusive_min else (minimum, None)
    if isinstance(exclusive_max, bool):
        maximum, exclusive_max = (None, maximum) if exclusive_max else (maximum, None)
    pattern = schema.get("pattern")
    return FieldRule(
        name=name,
        types=types,
        enum=enum,
        min_length=schema.get("minLength"),
        max_length=schema.get("maxLength"),
        pattern=compile_pattern(pattern, f"{source}: {path}") if pattern is not None else None,
        minimum=minimum,
        maximum=maximum,
        exclusive_minimum=exclusive_min,
        exclusive_maximum=exclusive_max,
        multiple_of=schema.get("multipleOf"),
        items=items,
        min_items=schema.get("minItems"),
        max_items=schema.get("maxItems"),
        unique_items=bool(schema.get("uniqueItems", False)),
        description=description,
        format=schema.get("format") if isinstance(schema.get("format"), str) else None,
    )


def _types_of(schema: Mapping[str, Any], where: str, source: str) -> frozenset[str]:
    declared = schema.get("type")
    if declared is None:
        return frozenset()
    names = [declared] if isinstance(declared, str) else list(declared)
    unknown = [t for t in names if t not in JSON_TYPES]
    if unknown:
        raise ContractError(source, f"{where}: unknown type(s) {unknown}")
    return frozenset(names)


def compile_pattern(pattern: str, where: str) -> SchemaPattern:
    """Compile a JSON Schema (ECMA-262) pattern for linear-time matching (see promptops.core.patterns)."""
    try:
        return compile_ecma(pattern)
    except PatternError as exc:
        raise ContractError(where, f"pattern {pattern!r} is refused: {exc}") from None


MAX_SCHEMA_DEPTH = 64  # nested objects and arrays: real schemas use about 10; every reader of schemas recurses


def check_nesting(schema: Any, source: str) -> None:
    """ContractError (naming where) when ``schema`` nests objects and arrays deeper than MAX_SCHEMA_DEPTH."""
    stack: list[tuple[Any, str, int]] = [(schema, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        members = node.items() if isinstance(node, Mapping) else enumerate(node) if isinstance(node, list) else ()
        for key, value in members:
            if isinstance(value, Mapping | list):
                if depth >= MAX_SCHEMA_DEPTH:
                    where = f"{path}/{key}".lstrip("/")
                    raise ContractError(source, f"nested more than {MAX_SCHEMA_DEPTH} levels deep at {where}")
                stack.append((value, f"{path}/{key}", depth + 1))


def check_patterns(schema: Any, source: str) -> None:
    """Compile every ``pattern`` and ``patternProperties`` name in ``schema``, so that one the engine refuses
    stops the contract from loading (ContractError naming the keyword's path) instead of failing on an answer."""
    for path, pattern in _patterns(schema, ""):
        compile_pattern(pattern, f"{source}: {path}")


def _patterns(node: Any, path: str) -> Iterator[tuple[str, str]]:
    stack = [(node, path)]
    while stack:
        node, path = stack.pop()
        if isinstance(node, list):
            stack.extend((item, f"{path}/{index}") for index, item in enumerate(node))
            continue
        if not isinstance(node, Mapping):
            continue
        for key, value in node.items():
            where = f"{path}/{key}"
            if key in _DATA_KEYWORDS:
                continue  # values, not schemas: a "pattern" member there is data
            if key == "pattern" and isinstance(value, str):
                yield where.lstrip("/"), value
            elif key == "patternProperties" and isinstance(value, Mapping):
                yield from ((f"{where}/{name}".lstrip("/"), name) for name in value)
            if key in _SCHEMA_MAPS and isinstance(value, Mapping):  # names mapped to schemas
                stack.extend((sub, f"{where}/{name}") for name, sub in value.items())
            elif isinstance(value, Mapping | list):
                stack.append((value, where))


_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
_SCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "definitions", "$defs", "dependentSchemas", "dependencies"}
)


class _Refs:
    """Resolves local ``$ref`` pointers ("#/definitions/x", "#/$defs/x", "#/properties/..")."""

    def __init__(self, root: Mapping[str, Any], source: str) -> None:
        self._root = root
        self._source = source

    def resolve(self, schema: Any, where: str, seen: tuple[str, ...] = ()) -> Mapping[str, Any]:
        if not isinstance(schema, Mapping):
            raise ContractError(self._source, f"{where or 'top level'}: expected an object schema")
        ref = schema.get("$ref")
        if ref is None:
            return schema
        if ref in seen:
            raise ContractError(self._source, f"{where}: recursive $ref {ref!r} on a parsed object")
        target = self._lookup(ref, where)
        merged = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        return self.resolve(merged, where, (*seen, ref))

    def has_ref(self, schema: Mapping[str, Any]) -> bool:
        return "$ref" in schema

    def inline(self, schema: Mapping[str, Any], where: str) -> Mapping[str, Any]:
        """The subschema with the root's definitions attached, so the full validator can follow refs."""
        defs = {k: self._root[k] for k in ("definitions", "$defs") if k in self._root}
        return {**defs, **schema}

    def _lookup(self, ref: str, where: str) -> Mapping[str, Any]:
        if not ref.startswith("#"):
            raise ContractError(self._source, f"{where}: only local $ref pointers are supported, got {ref!r}")
        node: Any = self._root
        for token in filter(None, ref[1:].split("/")):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and token in node:
                node = node[token]
            else:
                raise ContractError(self._source, f"{where}: $ref {ref!r} points nowhere")
        if not isinstance(node, Mapping):
            raise ContractError(self._source, f"{where}: $ref {ref!r} is not a schema object")
        return node


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema defines it: 1 == 1.0, but true != 1 and "1" != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def json_type_of(value: Any) -> str:
    """The JSON type name of a decoded value ("integer" for whole floats, as draft 6+ does)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if math.isfinite(value) and value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _json_text(value: Any) -> str:
    return json.dumps(value)
