"""An independent oracle for the engine's verdicts: generate documents, validate them with python-jsonschema.

A verdict "compatible" is a claim about every document; the oracle samples documents from one schema with
hypothesis-jsonschema and checks each against the other with a real validator, so a wrong claim shows up as
a concrete counterexample.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis_jsonschema import from_schema
from jsonschema import Draft7Validator
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from promptops.compat import Comparison

# Keywords whose values are subschemas, lists of subschemas, or maps of subschemas.
_ONE = ("additionalProperties", "additionalItems", "items", "not", "if", "then", "else", "contains", "propertyNames")
_MANY = ("allOf", "anyOf", "oneOf", "items")
_MAP = ("properties", "patternProperties", "definitions", "$defs", "dependencies")
_FLIPS = ("not", "if", "then", "else")


def validator(schema: Any) -> Validator:
    cls = validator_for(schema, default=Draft7Validator)
    return cls(schema)


def relax(schema: Any) -> Any:
    """The tolerant reading of a schema: every object accepts properties it does not declare."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _ONE:
        if key in out and not isinstance(out[key], list):
            out[key] = relax(out[key])
    for key in _MANY:
        if isinstance(out.get(key), list):
            out[key] = [relax(s) for s in out[key]]
    for key in _MAP:
        if isinstance(out.get(key), dict):
            out[key] = {name: relax(s) for name, s in out[key].items()}
    if "additionalProperties" in out:
        out["additionalProperties"] = True
    return out


def sampling(schema: Any, depth: int = 3, size: int = 3) -> Any:
    """A schema for sampling a *subset* of ``schema``'s documents that hypothesis-jsonschema can generate.

    Local $ref pointers are inlined with recursion cut off at ``depth``, and objects and arrays are capped at
    ``size`` members (where the schema allows that few) to keep documents small. Caps are only added where
    they shrink the set: not under ``not`` or ``if``/``then``/``else``.
    """
    root = schema

    def resolve(pointer: str) -> Any:
        node: Any = root
        for token in filter(None, pointer.lstrip("#").split("/")):
            token = token.replace("~1", "/").replace("~0", "~")
            node = node[int(token)] if isinstance(node, list) else node[token]
        return node

    def walk(node: Any, level: int, positive: bool) -> Any:
        if not isinstance(node, dict):
            return node  # a boolean schema
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            return False if level >= depth else walk(copy.deepcopy(resolve(ref)), level + 1, positive)
        out = dict(node)
        for key, value in node.items():
            sign = positive and key not in _FLIPS
            if key in _MAP and isinstance(value, dict):
                out[key] = {name: walk(sub, level, sign) for name, sub in value.items()}
            elif key in _MANY and isinstance(value, list):
                out[key] = [walk(sub, level, sign) for sub in value]
            elif key in _ONE:
                out[key] = walk(value, level, sign)
        if positive:
            for least, most in (("minProperties", "maxProperties"), ("minItems", "maxItems")):
                out[most] = min(out.get(most, size), max(out.get(least, 0), size))
            # bounded number ranges make hypothesis probe the bounds instead of values near 1e308
            low = _number(out, "minimum", "exclusiveMinimum")
            high = _number(out, "maximum", "exclusiveMaximum")
            if low is None:
                out["minimum"] = min(high if high is not None else 0, 0) - 8
            if high is None:
                out["maximum"] = max(low if low is not None else 0, 0) + 8
            if "format" not in out and "pattern" not in out:  # their generators make their own strings
                out.setdefault("maxLength", max(out.get("minLength", 0), 6))
        return out

    if not isinstance(schema, dict):
        return schema
    out = walk(schema, 0, True)
    if not isinstance(out, dict):
        return out
    return {k: v for k, v in out.items() if k not in ("definitions", "$defs")}


def _number(schema: dict[str, Any], plain: str, exclusive: str) -> float | None:
    values = [
        v for v in (schema.get(plain), schema.get(exclusive)) if isinstance(v, int | float) and not isinstance(v, bool)
    ]
    return values[0] if values else None


def universe(names: tuple[str, ...] = ("a", "b", "c", "x1")) -> st.SearchStrategy[Any]:
    """Small JSON values built from the names, numbers and strings the test schemas use."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-5, 8)
        | st.sampled_from((0.5, 2.5, -1.5))
        | st.sampled_from(("", "a", "b", "ab", "x1", "ba", "A", "2024-01-01"))
    )
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(names), children, max_size=3),
        max_leaves=6,
    )


CASES: list[dict[str, Any]] = yaml.safe_load((Path(__file__).parent / "cases.yaml").read_text(encoding="utf-8"))
"""The hand-written pairs of cases.yaml."""

_STRATEGIES: dict[str, st.SearchStrategy[Any]] = {}


def documents(schema: Any) -> st.SearchStrategy[Any]:
    key = json.dumps(schema, sort_keys=True)
    if key not in _STRATEGIES:
        _STRATEGIES[key] = from_schema(sampling(schema))
    return _STRATEGIES[key]


def check_claims(data: st.DataObject, old: Any, new: Any, comparison: Comparison, draws: int = 1) -> None:
    """For every verdict the engine calls compatible, sampled documents must bear it out.

    Documents come from hypothesis-jsonschema (``draws`` per claim, generated from the schema that must be
    contained) and from ``universe()`` (a batch per example, kept when the containing schema accepts them).
    """
    claims = []
    if comparison.backward_compatible:
        claims.append(("backward", old, validator(new)))
    if comparison.forward_compatible:
        claims.append(("forward", new, validator(old)))
    if comparison.forward_compatible_tolerant:
        claims.append(("forward (tolerant)", new, validator(relax(old))))
    if not claims:
        return
    batch = data.draw(st.lists(universe(), min_size=10, max_size=10), label="universe documents")
    for name, source, target in claims:
        members = validator(source)
        for document in batch:
            if members.is_valid(document):
                assert target.is_valid(document), f"{name} claim refuted by {json.dumps(document)}"
        for _ in range(draws):
            try:
                document = data.draw(documents(source), label=f"{name} document")
            except InvalidArgument as exc:  # the generator chokes on some unsatisfiable schemas (min > max)
                if "Cannot have" not in str(exc):
                    raise
                break  # nothing to sample: the claim holds vacuously
            assert target.is_valid(document), f"{name} claim refuted by {json.dumps(document)}"
