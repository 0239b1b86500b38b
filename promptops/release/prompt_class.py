"""The semver class of a prompt change : its schema target and the contract it renders.

A prompt's *rendered contract* is what it tells the model about the output: the schema version it targets
and, for every field of that schema the rendered text restates, the field's status (required or optional),
its type-and-bounds text (the parenthesis after the name: ``(integer, >= 1)``) and its enum set. It is read
from a render with lint's sample context by lint's own reading of field and enum statements
(``promptops.render.reading``: by the schema's field names and enum values and the text's structure, not by
fixed labels), so restating the same rules in other words or another layout (hand-written lists replaced by
the shared partials, a list turned into a table with the same type texts) is a patch; descriptions,
instructions and every other sentence are wording.

Classes, old prompt -> new prompt:

- **patch**: same schema target, identical rendered contract (only wording changed);
- **minor**: retarget to a newer minor of the same schema major, and/or newly restated *optional* fields,
  with every rule the old prompt stated still stated the same way;
- **major**: a different schema major (or an older schema), or an incompatible rule change: a field no
  longer restated, a newly restated required field, a status flipped, an enum set changed (values added or
  removed, as for schemas), or a reworded type/bounds text (the checker cannot prove two wordings of a bound
  mean the same, so it does not pass them silently).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from promptops.core.shape import OutputShape
from promptops.core.versioning import SchemaVersion
from promptops.render import reading

PATCH, MINOR, MAJOR = "patch", "minor", "major"
_RANK = {PATCH: 0, MINOR: 1, MAJOR: 2}
_LEVEL_NAMES = {"top": "top-level", "item": "finding", "either": ""}


@dataclass(frozen=True)
class StatedField:
    """What a rendered prompt says about one schema field."""

    level: str  # "top" | "item" | "either" (a name both levels declare, stated under no scoped label)
    name: str
    statuses: frozenset[str]  # "required", "optional", "unlabelled"
    rules: frozenset[str]  # type-and-bounds texts: "integer, >= 1"
    enum: frozenset[str] | None  # values stated after "one of", None when no enum statement

    @property
    def label(self) -> str:
        level = _LEVEL_NAMES[self.level]
        return f"{level} field `{self.name}`" if level else f"field `{self.name}`"

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "name": self.name,
            "statuses": sorted(self.statuses),
            "rules": sorted(self.rules),
            "enum": None if self.enum is None else sorted(self.enum),
        }


@dataclass(frozen=True)
class RenderedContract:
    schema_version: SchemaVersion
    fields: Mapping[tuple[str, str], StatedField]


@dataclass(frozen=True)
class PromptDifference:
    kind: str
    field: str | None  # "finding field `cwe`", or None for the schema target
    change: str  # patch | minor | major
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "field": self.field, "change": self.change, "message": self.message}


@dataclass(frozen=True)
class PromptComparison:
    old: SchemaVersion
    new: SchemaVersion
    differences: tuple[PromptDifference, ...]

    @property
    def change(self) -> str:
        return max((d.change for d in self.differences), key=_RANK.__getitem__, default=PATCH)

    @property
    def forcing(self) -> tuple[PromptDifference, ...]:
        change = self.change
        return tuple(d for d in self.differences if d.change == change) if change != PATCH else ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "change": self.change,
            "old_schema_version": str(self.old),
            "new_schema_version": str(self.new),
            "differences": [d.to_dict() for d in self.differences],
        }


def rank(change: str) -> int:
    return _RANK[change]


def rendered_contract(text: str, shape: OutputShape) -> RenderedContract:
    """Read the rendered contract of prompt ``text``, which targets the schema compiled into ``shape``."""
    found = reading.read(text, reading.vocabulary(shape))
    statuses: dict[tuple[str, str], set[str]] = {}
    rules: dict[tuple[str, str], set[str]] = {}
    for statement in found.fields:
        key = (statement.level or "either", statement.name)
        statuses.setdefault(key, set()).add(statement.status or "unlabelled")
        rules.setdefault(key, set()).update([statement.rule] if statement.rule is not None else [])
    enums: dict[tuple[str, str], set[str]] = {}
    for enum in found.enums:
        enums.setdefault((enum.level or "either", enum.name), set()).update(enum.values)
    fields = {
        key: StatedField(
            key[0],
            key[1],
            frozenset(statuses.get(key, {"unlabelled"})),
            frozenset(rules.get(key, set())),
            frozenset(enums[key]) if key in enums else None,
        )
        for key in sorted({*statuses, *enums})
    }
    return RenderedContract(shape.version, fields)


def classify_prompt(old: RenderedContract, new: RenderedContract) -> PromptComparison:
    """Compare two rendered contracts; the class is the largest of their differences (patch when none)."""
    differences = [*_target(old.schema_version, new.schema_version)]
    for key in sorted({*old.fields, *new.fields}):
        before, after = old.fields.get(key), new.fields.get(key)
        if before is None:
            assert after is not None
            required = "required" in after.statuses
            message = f"{after.label} is newly restated as {'required' if required else 'optional'}" + (
                ": a new requirement the previous prompt did not state" if required else ""
            )
            differences.append(PromptDifference("field_restated", after.label, MAJOR if required else MINOR, message))
        elif after is None:
            message = f"{before.label} is no longer restated: the model is no longer told about it"
            differences.append(PromptDifference("field_no_longer_restated", before.label, MAJOR, message))
        else:
            differences += _field(before, after)
    return PromptComparison(old.schema_version, new.schema_version, tuple(differences))


def _target(old: SchemaVersion, new: SchemaVersion) -> list[PromptDifference]:
    if old == new:
        return []
    if new.major == old.major and new.minor > old.minor:
        message = f"retargeted from schema {old} to {new}, a newer minor of the same major"
        return [PromptDifference("schema_retargeted", None, MINOR, message)]
    why = "a new schema major" if new.major != old.major else "an older schema of the same major"
    return [PromptDifference("schema_retargeted", None, MAJOR, f"retargeted from schema {old} to {new}: {why}")]


def _field(before: StatedField, after: StatedField) -> list[PromptDifference]:
    out: list[PromptDifference] = []
    if before.statuses != after.statuses:
        message = f"{after.label} was stated {_words(before.statuses)}, now {_words(after.statuses)}"
        out.append(PromptDifference("status_changed", after.label, MAJOR, message))
    if before.rules != after.rules:
        message = (
            f"{after.label}: rule ({_words(before.rules)}) is now ({_words(after.rules)}); a reworded bound "
            "cannot be proven to mean the same"
        )
        out.append(PromptDifference("rule_changed", after.label, MAJOR, message))
    if before.enum != after.enum:
        added = sorted((after.enum or frozenset()) - (before.enum or frozenset()))
        removed = sorted((before.enum or frozenset()) - (after.enum or frozenset()))
        parts = [f"adds {', '.join(added)}"] if added else []
        parts += [f"removes {', '.join(removed)}"] if removed else []
        if before.enum is None or after.enum is None:
            parts = ["is newly stated" if before.enum is None else "is no longer stated"]
        message = f"{after.label}: enum set {'; '.join(parts)}"
        out.append(PromptDifference("enum_set_changed", after.label, MAJOR, message))
    return out


def _words(values: frozenset[str]) -> str:
    return " and ".join(sorted(values)) or "without one"
