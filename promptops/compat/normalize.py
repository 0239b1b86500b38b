"""Normalize a JSON Schema into a graph of ``Node`` objects, the form the diff engine compares.

Two passes. ``_Builder`` maps every subschema to a node: it drops annotations (title, description, examples,
$comment, default, ...) and vendor extensions (``x-*``, ``_*``), reads ``type`` arrays as unions, ``const``
as a one-element enum, draft-04 boolean ``exclusiveMinimum``/``exclusiveMaximum``, tuple ``items`` and
``prefixItems``, and resolves local ``$ref`` pointers (and ``$anchor`` names) to shared nodes, so recursive
schemas become cyclic graphs. ``simplify`` then folds combinators and canonicalizes bounds and enums.

Anything else in the validation vocabulary (``not``, ``if``/``then``/``else``, ``dependencies``,
``contains``, ``unevaluated*``, remote ``$ref``...) and any other keyword the engine does not know is kept
verbatim in ``Node.unknown``: the differ reports it as incompatible rather than passing it silently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from promptops.compat.errors import SchemaInputError
from promptops.compat.node import JSON_TYPES, Bound, Node, canonical_types, never_node, to_fraction
from promptops.compat.simplify import simplify
from promptops.core import shape
from promptops.core.shape import json_equal

# Keywords that never change which documents are valid.
ANNOTATIONS = shape.ANNOTATIONS | {"$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary"}
# The keywords the diff engine compares: a field rule's, and those of objects, tuples and combinators.
UNDERSTOOD = shape.FIELD_KEYWORDS | {
    "format",
    "additionalItems",
    "prefixItems",
    "maxProperties",
    "minProperties",
    "required",
    "properties",
    "patternProperties",
    "additionalProperties",
    "allOf",
    "anyOf",
    "oneOf",
    "$ref",
}


@dataclass(frozen=True, eq=False)
class Schema:
    """A normalized schema: the root node of its graph and the name of the file it came from."""

    root: Node
    source: str = "<schema>"


def normalize(schema: Any, *, source: str = "<schema>") -> Schema:
    """Normalize a decoded JSON Schema (a mapping or a boolean). Raises SchemaInputError when malformed."""
    if isinstance(schema, Schema):
        return schema
    if not isinstance(schema, Mapping | bool):
        kind = type(schema).__name__
        raise SchemaInputError(source, f"a schema must be a JSON object or a boolean, not {kind}")
    builder = _Builder(schema, source)
    root = builder.node(schema, "#")
    return Schema(root=simplify(root), source=source)


def _draft_of(schema: Any) -> int:
    uri = schema.get("$schema", "") if isinstance(schema, Mapping) else ""
    if not isinstance(uri, str):
        return 7
    markers = (("draft-03", 4), ("draft-04", 4), ("draft-06", 6), ("2019-09", 2019), ("2020-12", 2020))
    for marker, draft in markers:
        if marker in uri:
            return draft
    return 7  # draft-07, or no $schema: what Draft7Validator (and the promptops parser) assume


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def canonical_enum(values: Any) -> tuple[Any, ...]:
    """Enum values without duplicates (JSON equality: 1 == 1.0, true != 1), in a stable canonical order."""
    unique: list[Any] = []
    for value in values:
        if not any(json_equal(value, seen) for seen in unique):
            unique.append(value)
    return tuple(sorted(unique, key=_sort_key))


def _sort_key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, int | float):
        return (2, value)
    if isinstance(value, str):
        return (3, value)
    return (4, json.dumps(value, sort_keys=True))


class _Builder:
    def __init__(self, root: Mapping[str, Any] | bool, source: str) -> None:
        self._root = root
        self._source = source
        self._draft = _draft_of(root)
        self._nodes: dict[str, Node] = {}
        self._following: set[str] = set()  # $ref pointers being followed, to catch ref-only cycles
        self._anchors: dict[str, str] | None = None

    def _fail(self, pointer: str, problem: str) -> SchemaInputError:
        return SchemaInputError(self._source, f"{pointer}: {problem}")

    def node(self, raw: Any, pointer: str) -> Node:
        if pointer in self._nodes:
            return self._nodes[pointer]
        if raw is True:
            node = Node(label=pointer)
        elif raw is False:
            node = never_node(pointer)
        elif not isinstance(raw, Mapping):
            raise self._fail(pointer, f"expected a schema (object or boolean), got {json.dumps(raw)[:40]}")
        elif "$ref" in raw and self._draft <= 7:
            # Up to draft 7, a $ref replaces its siblings entirely: the node *is* its target.
            node = self._reference(raw["$ref"], pointer)
        else:
            node = Node(label=pointer)
            self._nodes[pointer] = node  # before filling, so references back to it find it
            self._fill(node, raw, pointer)
        self._nodes[pointer] = node
        return node

    def _reference(self, ref: Any, pointer: str) -> Node:
        if not isinstance(ref, str):
            raise self._fail(pointer, "$ref must be a string")
        target = self._target_pointer(ref)
        if target is None:  # remote or relative to an $id: the engine cannot follow it
            return Node(label=pointer, unknown={"$ref": ref})
        if target in self._nodes:
            return self._nodes[target]
        if target in self._following:
            raise self._fail(pointer, f"$ref {ref!r} is a cycle of references with no schema in it")
        self._following.add(target)
        try:
            return self.node(self._lookup(target, ref, pointer), target)
        finally:
            self._following.discard(target)

    def _target_pointer(self, ref: str) -> str | None:
        if not ref.startswith("#"):
            return None
        fragment = unquote(ref[1:])
        if fragment == "" or fragment.startswith("/"):
            return "#" + fragment
        anchors = self._find_anchors()
        return anchors.get(fragment)

    def _lookup(self, target: str, ref: str, pointer: str) -> Any:
        node: Any = self._root
        for token in target[2:].split("/") if target != "#" else ():
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, Mapping) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise self._fail(pointer, f"$ref {ref!r} points nowhere")
        return node

    def _find_anchors(self) -> dict[str, str]:
        if self._anchors is None:
            self._anchors = {}
            stack: list[tuple[Any, str]] = [(self._root, "#")]
            while stack:
                raw, pointer = stack.pop()
                if isinstance(raw, Mapping):
                    for key in ("$anchor", "$id", "id"):
                        name = raw.get(key)
                        if isinstance(name, str) and (key == "$anchor" or name.startswith("#")):
                            self._anchors.setdefault(name.lstrip("#"), pointer)
                    stack.extend((value, f"{pointer}/{_escape(str(k))}") for k, value in raw.items())
                elif isinstance(raw, list):
                    stack.extend((value, f"{pointer}/{i}") for i, value in enumerate(raw))
        return self._anchors

    # -- keywords --------------------------------------------------------------------------------------------

    def _fill(self, node: Node, raw: Mapping[str, Any], pointer: str) -> None:
        conjuncts: list[Node] = []
        if "$ref" in raw:  # draft 2019-09 and later: $ref is one more conjunct next to its siblings
            conjuncts.append(self._reference(raw["$ref"], f"{pointer}/$ref"))
        for key, value in raw.items():
            if key in ANNOTATIONS or key.startswith(("x-", "_")) or (key == "id" and isinstance(value, str)):
                continue
            if key not in UNDERSTOOD:
                node.unknown[key] = value
        self._types(node, raw, pointer)
        self._enum(node, raw, pointer)
        self._numbers(node, raw, pointer)
        self._strings(node, raw, pointer)
        self._arrays(node, raw, pointer)
        self._objects(node, raw, pointer)
        for key in ("allOf", "anyOf", "oneOf"):
            if key in raw:
                branches = raw[key]
                if not isinstance(branches, list) or not branches:
                    raise self._fail(pointer, f"{key} must be a non-empty array of schemas")
                children = tuple(self.node(b, f"{pointer}/{key}/{i}") for i, b in enumerate(branches))
                if key == "allOf":
                    conjuncts.extend(children)
                elif key == "anyOf":
                    node.any_of = children
                else:
                    node.one_of = children
        node.all_of = tuple(conjuncts)

    def _types(self, node: Node, raw: Mapping[str, Any], pointer: str) -> None:
        if "type" not in raw:
            return
        declared = raw["type"]
        names = [declared] if isinstance(declared, str) else declared
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise self._fail(pointer, "type must be a type name or an array of type names")
        unknown = sorted(set(names) - JSON_TYPES)
        if unknown:
            raise self._fail(pointer, f"unknown type(s) {unknown}")
        node.types = canonical_types(frozenset(names))

    def _enum(self, node: Node, raw: Mapping[str, Any], pointer: str) -> None:
        values: tuple[Any, ...] | None = None
        if "enum" in raw:
            if not isinstance(raw["enum"], list):
                raise self._fail(pointer, "enum must be an array")
            values = canonical_enum(raw["enum"])
        if "const" in raw:
            const = raw["const"]
            values = (const,) if values is None else tuple(v for v in values if json_equal(v, const))
        node.enum = values

    def _number(self, raw: Mapping[str, Any], key: str, pointer: str) -> Any:
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self._fail(pointer, f"{key} must be a number")
        return to_fraction(value)

    def _count(self, raw: Mapping[str, Any], key: str, pointer: str) -> int | None:
        if key not in raw:
            return None
        value = raw[key]
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._fail(pointer, f"{key} must be a non-negative integer")
        return value

    def _numbers(self, node: Node, raw: Mapping[str, Any], pointer: str) -> None:
        for bound, exclusive_key, attr in (
            ("minimum", "exclusiveMinimum", "minimum"),
            ("maximum", "exclusiveMaximum", "maximum"),
        ):
            inclusive = self._number(raw, bound, pointer) if bound in raw else None
            flag = raw.get(exclusive_key)
            candidates: list[Bound] = []
            if isinstance(flag, bool):  # draft-04: a modifier of the plain bound
                if inclusive is not None:
                    candidates.append(Bound(inclusive, exclusive=flag))
            else:
                if inclusive is not None:
                    candidates.append(Bound(inclusive))
                if exclusive_key in raw:
                    candidates.append(Bound(self._number(raw, exclusive_key, pointer), exclusive=True))
            if candidates:
                pick = Bound.looser_lower if attr == "minimum" else Bound.looser_upper
                tightest = candidates[0]
                for other in candidates[1:]:
                    if pick(tightest, other):
                        tightest = other
                setattr(node, attr, tightest)
        if "multipleOf" in raw:
            factor = self._number(raw, "multipleOf", pointer)
            if factor <= 0:
                raise self._fail(pointer, "multipleOf must be greater than 0")
            node.multiple_of = factor

    def _strings(self, node: Node, raw: Mapping[str, Any], pointer: str) -> None:
        node.min_length = self._count(raw, "minLength", pointer) or 0
        node.max_length = self._count(raw, "maxLength", pointer)
        for key in ("pattern", "format"):
            if key in raw:
                if not isinstance(raw[key], str):
                    raise self._fail(pointer, f"{key} must be a string")
                setattr(node, key, raw[key])

    def _arrays(self, node: Node, raw: Mapping[str, Any], pointer: str) -> None:
        node.min_items = self._count(raw, "minItems", pointer) or 0
        node.max_items = self._count(raw, "maxItems", pointer)
        unique = raw.get("uniqueItems", False)
        if not isinstance(unique, bool):
            raise self._fail(pointer, "uniqueItems must be a boolean")
        node.unique_items = unique
        items = raw.get("items")
        tuple_key = "prefixItems" if self._draft >= 2020 else "items"
        positional = raw.get(tuple_key)
        if isinstance(positional, list):
            node.prefix = tuple(self.node(s, f"{pointer}/{tuple_key}/{i}") for i, s in enumerate(positional))
            rest_key = "items" if self._draft >= 2020 else "additionalItems"
            if rest_key in raw:
                node.items = self.node(raw[rest_key], f"{pointer}/{rest_key}")
        elif items is not None:
            if isinstance(items, list):
                raise self._fail(pointer, "items must be a schema (use prefixItems for tuples in 2020-12)")
            node.items = self.node(items, f"{pointer}/items")

    def _objects(self, node: Node, raw: Mapping[str, Any], pointer: str) -> None:
        for key in ("properties", "patternProperties"):
            members = raw.get(key, {})
            if not isinstance(members, Mapping):
                raise self._fail(pointer, f"{key} must be an object")
            target = node.properties if key == "properties" else node.pattern_properties
            for name, sub in members.items():
                target[name] = self.node(sub, f"{pointer}/{key}/{_escape(name)}")
        if "additionalProperties" in raw:
            node.additional = self.node(raw["additionalProperties"], f"{pointer}/additionalProperties")
        required = raw.get("required", [])
        if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
            raise self._fail(pointer, "required must be an array of property names")
        node.required = frozenset(required)
        node.min_properties = self._count(raw, "minProperties", pointer) or 0
        node.max_properties = self._count(raw, "maxProperties", pointer)
