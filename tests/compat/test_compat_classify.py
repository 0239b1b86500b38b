"""Classification against one version and transitively against a major line; normalization edge cases."""

from __future__ import annotations

from typing import Any

import pytest

from promptops.compat import (
    Change,
    CompatPolicy,
    Kind,
    SchemaInputError,
    classify,
    classify_against,
    normalize,
)
from promptops.core.versioning import SchemaVersion


def _closed(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": properties}


V = SchemaVersion.parse


def test_transitive_class_is_the_largest_against_the_line() -> None:
    # 1.1 (released before enforcement) dropped a property of 1.0; a new schema identical to 1.1 is a patch
    # against 1.1 but still major against 1.0, so the line as a whole needs a major.
    history = {
        V("1.0"): _closed(a={"type": "string"}, b={"type": "string"}),
        V("1.1"): _closed(a={"type": "string"}),
    }
    result = classify_against(history, _closed(a={"type": "string"}))
    changes = [(str(v), c.change) for v, c in result.comparisons]
    assert changes == [("1.0", Change.MAJOR), ("1.1", Change.PATCH)]
    assert result.change is Change.MAJOR
    [(version, difference)] = result.forcing
    assert (version, difference.kind, difference.path) == (V("1.0"), Kind.PROPERTY_REMOVED, "$.b")


def test_transitive_uses_the_newest_major_line_by_default() -> None:
    history = {V("1.0"): {"type": "integer"}, V("2.0"): {"type": "string"}, V("2.1"): {"type": "string"}}
    result = classify_against(history, {"type": "string", "title": "x"})
    assert [str(v) for v, _ in result.comparisons] == ["2.0", "2.1"]
    assert result.change is Change.PATCH
    assert result.forcing == ()
    assert classify_against(history, {"type": "string"}, major=1).change is Change.MAJOR


def test_transitive_needs_an_earlier_version() -> None:
    with pytest.raises(ValueError, match="no earlier schema version"):
        classify_against({V("1.0"): {}}, {}, major=3)


def test_minor_forcing_lists_the_additive_differences() -> None:
    comparison = classify(_closed(a={"type": "string"}), _closed(a={"type": "string"}, b={"type": "integer"}))
    assert comparison.change is Change.MINOR
    assert [d.kind for d in comparison.forcing] == [Kind.PROPERTY_ADDED]


def test_normalized_schemas_can_be_reused() -> None:
    old, new = normalize({"type": "integer"}), normalize({"type": "number"})
    assert classify(old, new).change is Change.MAJOR
    assert classify(old, old).change is Change.PATCH


def test_format_policy_can_ignore_format() -> None:
    old, new = {"type": "string"}, {"type": "string", "format": "email"}
    assert classify(old, new).change is Change.MAJOR
    assert classify(old, new, policy=CompatPolicy(format_assertion=False)).differences == ()


def test_tolerant_enum_policy_makes_an_added_value_minor() -> None:
    old, new = {"enum": ["low", "high"]}, {"enum": ["low", "high", "info"]}
    assert classify(old, new).change is Change.MAJOR
    assert classify(old, new, policy=CompatPolicy(tolerate_unknown_enum_values=True)).change is Change.MINOR


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        pytest.param({"$ref": "#"}, "cycle of references", id="self-reference"),
        pytest.param(
            {
                "$ref": "#/definitions/a",
                "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
            },
            "cycle of references",
            id="ref-loop",
        ),
        pytest.param({"items": {"$ref": "#/nope"}}, "points nowhere", id="dangling"),
        pytest.param({"type": "strin"}, "unknown type", id="type"),
        pytest.param({"minLength": -1}, "non-negative integer", id="count"),
        pytest.param({"multipleOf": 0}, "greater than 0", id="multiple-of"),
        pytest.param(3, "must be a JSON object or a boolean", id="not-a-schema"),
    ],
)
def test_malformed_schemas_raise_one_line_errors(schema: Any, problem: str) -> None:
    with pytest.raises(SchemaInputError, match=problem) as raised:
        normalize(schema, source="s.json")
    assert str(raised.value).startswith("s.json: ")
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "array",
                "prefixItems": [{"type": "string"}],
                "items": False,
            },
            {"type": "array", "items": [{"type": "string"}], "additionalItems": False},
            id="prefix-items",
        ),
        pytest.param(
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$defs": {"s": {"type": "string"}},
                "$ref": "#/$defs/s",
                "maxLength": 3,
            },
            {"type": "string", "maxLength": 3},
            id="ref-with-siblings-2020",
        ),
        pytest.param(
            {"$defs": {"s": {"$anchor": "str", "type": "string"}}, "items": {"$ref": "#str"}},
            {"items": {"type": "string"}},
            id="anchor",
        ),
        pytest.param(
            {"definitions": {"s": {"type": "string"}}, "$ref": "#/definitions/s", "maxLength": 3},
            {"type": "string"},
            id="ref-siblings-ignored-draft7",
        ),
        pytest.param(
            {"type": "object", "required": ["a"], "properties": {"a": False}}, False, id="required-forbidden-property"
        ),
    ],
)
def test_equivalent_spellings_are_patch(old: Any, new: Any) -> None:
    comparison = classify(old, new)
    assert comparison.change is Change.PATCH, comparison.differences
