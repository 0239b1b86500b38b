"""Property tests: whenever the engine calls a pair compatible, generated documents agree.

Two sources of pairs: random schemas with random edits (bounds, types, enums, properties, required,
additionalProperties, combinators), and every hand-written pair of cases.yaml in both directions. For each
verdict the engine calls compatible (backward, forward, forward under tolerant reading), documents generated
from one schema by hypothesis-jsonschema must validate under the other with python-jsonschema.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptops.compat import classify
from tests.compat.compat_oracle import CASES, check_claims

NAMES = ("a", "b", "c")
PATTERNS = ("^[a-z]+$", "^a", "b$", "^[0-9]*$")
COUNTS = ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties")
NUMBERS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
ENUM_VALUES = ("a", "b", "ab", 1, 2.5, None, True)

Schema = dict[str, Any]


def leaves() -> st.SearchStrategy[Schema]:
    string = st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "minLength": st.integers(0, 3),
            "maxLength": st.integers(0, 6),
            "pattern": st.sampled_from(PATTERNS),
            "enum": st.lists(st.sampled_from(("a", "b", "ab", "x1")), min_size=1, max_size=3, unique=True),
        },
    )
    number = st.fixed_dictionaries(
        {"type": st.sampled_from(("integer", "number"))},
        optional={
            "minimum": st.integers(-3, 3),
            "maximum": st.integers(-3, 6),
            "exclusiveMinimum": st.integers(-3, 3),
            "multipleOf": st.sampled_from((1, 2, 3, 0.5)),
        },
    )
    other = st.sampled_from(
        ({"type": "boolean"}, {"type": "null"}, {"type": ["string", "null"]}, {}, {"enum": [1, "a", None]})
    )
    return st.one_of(string, number, other)


def _object(properties: dict[str, Schema], required: list[str], additional: Any) -> Schema:
    out: Schema = {"type": "object", "properties": properties, "required": required}
    if additional is not None:
        out["additionalProperties"] = additional
    return out


def schemas() -> st.SearchStrategy[Schema]:
    def extend(children: st.SearchStrategy[Schema]) -> st.SearchStrategy[Schema]:
        objects = st.builds(
            _object,
            st.dictionaries(st.sampled_from(NAMES), children, max_size=3),
            st.lists(st.sampled_from(NAMES), unique=True, max_size=2),
            st.sampled_from((None, False, True, {"type": "string"})),
        )
        arrays = st.fixed_dictionaries(
            {"type": st.just("array"), "items": children},
            optional={
                "minItems": st.integers(0, 2),
                "maxItems": st.integers(1, 4),
                "uniqueItems": st.booleans(),
            },
        )
        unions = st.lists(children, min_size=2, max_size=2).map(lambda branches: {"anyOf": branches})
        return st.one_of(objects, arrays, unions)

    return st.recursive(leaves(), extend, max_leaves=6)


def _subschemas(schema: Any) -> list[Schema]:
    if not isinstance(schema, dict):
        return []
    out = [schema]
    for key in ("items", "additionalProperties"):
        out += _subschemas(schema.get(key))
    for sub in schema.get("properties", {}).values():
        out += _subschemas(sub)
    for sub in schema.get("anyOf", []):
        out += _subschemas(sub)
    return out


def mutate(data: st.DataObject, schema: Schema) -> Schema:
    """``schema`` with one or two random edits at random places."""
    new = copy.deepcopy(schema)
    for _ in range(data.draw(st.integers(1, 2), label="edits")):
        target = data.draw(st.sampled_from(_subschemas(new)), label="where")
        edit = data.draw(
            st.sampled_from(
                (
                    "count",
                    "number",
                    "unique",
                    "pattern",
                    "enum",
                    "type",
                    "property",
                    "required",
                    "additional",
                    "annotation",
                    "union",
                )
            ),
            label="edit",
        )
        _apply(data, target, edit)
    return new


def _apply(data: st.DataObject, target: Schema, edit: str) -> None:
    if edit == "count":
        key = data.draw(st.sampled_from(COUNTS))
        target[key] = data.draw(st.integers(0, 4))
    elif edit == "number":
        key = data.draw(st.sampled_from((*NUMBERS, "multipleOf")))
        target[key] = data.draw(st.sampled_from((1, 2, 0.5)) if key == "multipleOf" else st.integers(-3, 5))
    elif edit == "unique":
        target["uniqueItems"] = not target.get("uniqueItems", False)
    elif edit == "pattern":
        if "pattern" in target and data.draw(st.booleans()):
            del target["pattern"]
        else:
            target["pattern"] = data.draw(st.sampled_from(PATTERNS))
    elif edit == "enum":
        values: list[Any] = list(target.get("enum", []))
        if len(values) > 0 and data.draw(st.booleans()):
            values.remove(data.draw(st.sampled_from(values)))
        else:
            values.append(data.draw(st.sampled_from([v for v in ENUM_VALUES if v not in values] or [0])))
        target["enum"] = values
    elif edit == "type":
        kinds: list[Any] = ["string", "integer", "number", "object", "array", ["string", "null"], None]
        choice = data.draw(st.sampled_from(kinds))
        if choice is None:
            target.pop("type", None)
        else:
            target["type"] = choice
    elif edit == "property":
        properties = target.setdefault("properties", {})
        name = data.draw(st.sampled_from(NAMES))
        if name in properties and data.draw(st.booleans()):
            del properties[name]
        else:
            properties[name] = data.draw(leaves())
    elif edit == "required":
        required = set(target.get("required", []))
        required ^= {data.draw(st.sampled_from(NAMES))}
        target["required"] = sorted(required)
    elif edit == "additional":
        target["additionalProperties"] = data.draw(st.sampled_from((False, True, {"type": "string"})))
    elif edit == "annotation":
        target["description"] = data.draw(st.sampled_from(("x", "y")))
    else:  # widen into a union with another schema
        branch = data.draw(leaves())
        original = dict(target)
        target.clear()
        target["anyOf"] = [original, branch]


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_pairs_claims_hold(data: st.DataObject) -> None:
    old = data.draw(schemas(), label="old")
    new = mutate(data, old)
    check_claims(data, old, new, classify(old, new))
    check_claims(data, new, old, classify(new, old))


def _keywords(base: Schema, keywords: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Schema]:
    """``base`` plus some of ``keywords`` (half the time all: pairs then differ in values, not presence)."""
    fixed = {k: st.just(v) for k, v in base.items()}
    return st.fixed_dictionaries({**fixed, **keywords}) | st.fixed_dictionaries(fixed, optional=keywords)


def _numbers() -> st.SearchStrategy[Schema]:
    @st.composite
    def build(draw: st.DrawFn) -> Schema:
        kind = draw(st.sampled_from(("integer", "number", ["integer", "null"], ["number", "null"])))
        out: Schema = {"type": kind}
        low = draw(st.integers(-4, 4) | st.sampled_from((0.5, -1.5)))
        high = low + draw(st.integers(0, 6) | st.just(1.5))  # ordered, so the range is rarely empty
        for key, value in (("minimum", low), ("maximum", high)):
            style = draw(st.sampled_from(("plain", "exclusive", "absent")))
            if style != "absent":
                out[key if style == "plain" else f"exclusive{key[0].upper()}{key[1:]}"] = value
        if draw(st.booleans()):
            out["multipleOf"] = draw(st.sampled_from((1, 2, 3, 4, 0.5, 0.25)))
        return out

    return build()


def _strings() -> st.SearchStrategy[Schema]:
    @st.composite
    def build(draw: st.DrawFn) -> Schema:
        out: Schema = {"type": draw(st.sampled_from(("string", ["string", "null"])))}
        low = draw(st.integers(0, 3))
        if draw(st.booleans()):
            out["minLength"] = low
        if draw(st.booleans()):
            out["maxLength"] = low + draw(st.integers(0, 3))
        if draw(st.booleans()):
            out["pattern"] = draw(st.sampled_from(PATTERNS))
        return out

    return build()


def _enums() -> st.SearchStrategy[Schema]:
    values = st.lists(st.sampled_from(ENUM_VALUES), min_size=1, max_size=4, unique=True)
    plain = st.builds(lambda v: {"enum": v}, values)
    typed = st.builds(lambda v, t: {"enum": v, "type": t}, values, st.sampled_from(("string", "number")))
    return plain | typed | st.sampled_from(({"type": "string"}, {"const": "a"}, {"type": "boolean"}))


def _arrays() -> st.SearchStrategy[Schema]:
    items = st.sampled_from(
        ({"type": "integer"}, {"type": "number"}, {"type": "integer", "maximum": 2}, {"enum": [1, 2, 3]})
    )
    return _keywords(
        {"type": "array"},
        {
            "items": items,
            "minItems": st.integers(0, 2),
            "maxItems": st.integers(0, 3),
            "uniqueItems": st.booleans(),
        },
    )


def _objects() -> st.SearchStrategy[Schema]:
    member = st.sampled_from(({"type": "string"}, {"type": "integer"}, {"type": ["string", "null"]}, {}))
    return _keywords(
        {"type": "object"},
        {
            "properties": st.dictionaries(st.sampled_from(NAMES), member, max_size=3),
            "required": st.lists(st.sampled_from(NAMES), unique=True, max_size=2),
            "additionalProperties": st.sampled_from((False, True, {"type": "string"}, {"type": "integer"})),
        },
    ) | _keywords(
        {"type": "object", "additionalProperties": False},
        {
            "properties": st.dictionaries(st.sampled_from(NAMES), member, max_size=3),
            "patternProperties": st.sampled_from(({"^a": {"type": "string"}}, {"^x": {"type": "integer"}})),
            "minProperties": st.integers(0, 2),
            "maxProperties": st.integers(1, 3),
        },
    )


def _unions() -> st.SearchStrategy[Schema]:
    branch = st.sampled_from(
        (
            {"type": "string"},
            {"type": "integer"},
            {"type": "object", "required": ["a"]},
            {"type": "object", "required": ["b"]},
            {"type": "null"},
        )
    )
    return st.builds(
        lambda k, b: {k: b},
        st.sampled_from(("anyOf", "oneOf")),
        st.lists(branch, min_size=1, max_size=3, unique_by=_key),
    )


def _key(schema: Schema) -> str:
    return json.dumps(schema, sort_keys=True)


FAMILIES = {
    "numbers": _numbers,
    "strings": _strings,
    "enums": _enums,
    "arrays": _arrays,
    "objects": _objects,
    "unions": _unions,
}


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_independent_pairs_claims_hold(data: st.DataObject, family: str) -> None:
    """Two schemas of one family drawn independently: many pairs are comparable in one direction."""
    old = data.draw(FAMILIES[family](), label="old")
    new = data.draw(FAMILIES[family](), label="new")
    check_claims(data, old, new, classify(old, new), draws=2)


@pytest.mark.parametrize(
    ("old", "new"),
    [pytest.param(c["old"], c["new"], id=f"{c['id']}:expect") for c in CASES]
    + [pytest.param(c["new"], c["old"], id=f"{c['id']}:reverse") for c in CASES],
)
@settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)  # regex intersections
@given(data=st.data())
def test_hand_written_pairs_claims_hold(data: st.DataObject, old: Schema, new: Schema) -> None:
    check_claims(data, old, new, classify(old, new))
