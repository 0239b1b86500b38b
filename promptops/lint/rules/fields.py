"""Rules that hold a prompt's field rules to the schema it pins: required fields (PO002), optional fields
(PO003) and enum sets (PO004).

Each reads the representative render through ``promptops.lint.reading``: statements are found by the
schema's own field names and enum values and by the text's structure (lists, tables, labels), never by
fixed wording. A finding points at the statement at fault; a field stated nowhere points at the list or
table where its level's other fields are stated (its group), else at the prompt's first line.
"""

from __future__ import annotations

from collections.abc import Iterator

from promptops.lint import reading
from promptops.lint.model import Finding, LintContext, Rule
from promptops.lint.spans import Span
from promptops.lint.subject import CONTRACT_KINDS, Subject
from promptops.shape import ObjectShape

_LABELS: dict[reading.Scope, str] = {"top": "top-level", "item": "finding"}


def _read(subject: Subject) -> reading.Reading | None:
    if subject.render is None or subject.shape is None:
        return None
    return reading.read(subject.render.text, reading.vocabulary(subject.shape))


def _levels(subject: Subject) -> Iterator[tuple[reading.Scope, str, ObjectShape]]:
    assert subject.shape is not None
    yield "top", _LABELS["top"], subject.shape.top
    yield "item", _LABELS["item"], subject.shape.item


def _mine(found: reading.Reading, name: str, level: reading.Scope) -> list[reading.FieldStatement]:
    return [f for f in found.fields if f.name == name and f.level in (None, level)]


def _where_missing(
    subject: Subject, found: reading.Reading, level: reading.Scope, status: reading.Status
) -> tuple[Span, str]:
    """Where a field stated nowhere is reported: the group listing this level's fields of that status (else
    any group of the level), else the prompt's first line; and how to name that place."""
    statuses = {
        g: {f.status for f in found.fields if f.group == g and f.level == level} for g in range(len(found.groups))
    }
    candidates = [g for g, group in enumerate(found.groups) if group.level == level]
    preferred = [g for g in candidates if status in statuses[g]] or candidates
    if preferred:
        group = found.groups[preferred[0]]
        return subject.locate(group.offset, group.text), f" among the {_LABELS[level]} fields stated here"
    offset, text = found.first
    return subject.locate(offset, text), f" (the prompt states no {_LABELS[level]} fields at all)"


class RequiredFields(Rule):
    """A required field is not stated as required, or is stated as optional.

    Every field the pinned schema requires, at the top level and in each finding, must be stated as
    required in the rendered prompt: a list item, table row or line that starts with the field's name
    (in backticks, quotes or bold), marked required by its own words ("required", "mandatory"), by a
    status column of its table ("Required: yes"), or by the label above its list ("Each vulnerability
    must carry:", "Required fields of each finding:"). The wording and layout are the template's own;
    which object a list describes is read from the fields it names. The shared partial
    ``_partials/fields.j2`` writes such lists from the schema.

    Fails (``line`` is required by the schema)::

        Optional fields of each finding:
        - `line` (integer)

    Passes (a table in the template's own words)::

        | Field of each vulnerability | Type         | Required |
        |-----------------------------|--------------|----------|
        | `line`                      | integer >= 1 | yes      |
    """

    code = "PO002"
    name = "required-fields"
    kinds = CONTRACT_KINDS

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        found = _read(subject)
        if found is None:
            return
        for level, label, shape in _levels(subject):
            for name in shape.required:
                mine = _mine(found, name, level)
                required = [f for f in mine if f.status == "required"]
                optional = [f for f in mine if f.status == "optional"]
                if optional:
                    how = "also stated" if required else "stated only"
                    yield self.finding(
                        subject,
                        subject.locate(optional[0].offset, optional[0].text),
                        f"required {label} field `{name}` is {how} as optional",
                    )
                elif not required and mine:
                    yield self.finding(
                        subject,
                        subject.locate(mine[0].offset, mine[0].text),
                        f"required {label} field `{name}` is stated without saying it is required",
                    )
                elif not required:
                    span, where = _where_missing(subject, found, level, "required")
                    yield self.finding(subject, span, f"required {label} field `{name}` is not stated{where}")


class OptionalFields(Rule):
    """An optional field is not stated as optional, or is stated as required.

    Every field the pinned schema declares but does not require must be stated as optional (by its own
    words, a table's status column or its list's label, as for PO002), and never as required: a model told
    a field is required fabricates a value for it.

    Fails (``suggestion`` is optional in the schema)::

        Required fields of each finding:
        - `suggestion` (string)

    Passes::

        Each vulnerability may also carry:
        - `suggestion` (string)
    """

    code = "PO003"
    name = "optional-fields"
    kinds = CONTRACT_KINDS

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        found = _read(subject)
        if found is None:
            return
        for level, label, shape in _levels(subject):
            for name in shape.optional:
                mine = _mine(found, name, level)
                required = [f for f in mine if f.status == "required"]
                if required:
                    yield self.finding(
                        subject,
                        subject.locate(required[0].offset, required[0].text),
                        f"optional {label} field `{name}` is stated as required",
                    )
                elif mine and not any(f.status == "optional" for f in mine):
                    yield self.finding(
                        subject,
                        subject.locate(mine[0].offset, mine[0].text),
                        f"optional {label} field `{name}` is stated without saying it is optional",
                    )
                elif not mine:
                    span, where = _where_missing(subject, found, level, "optional")
                    yield self.finding(subject, span, f"optional {label} field `{name}` is not stated{where}")


class EnumSets(Rule):
    """An enum set is not stated, or differs from the schema's.

    For every field with an enum in the pinned schema, the rendered prompt must state its values in the
    field's statement (its list item, table row or line, with any lines indented under it): a run of
    values, each in backticks or quotes (bare words in a table cell or after a colon), separated only by
    commas, slashes, "or" or line breaks. Every such run is compared with the schema as a set: a missing
    value, a misspelled one or an extra one fails.

    Fails::

        - `severity` (required): one of `critcal`, `high`, `medium`, `low`, `info`

    Passes::

        | `severity` | yes | `critical` / `high` / `medium` / `low` / `info` |
    """

    code = "PO004"
    name = "enum-sets"
    kinds = CONTRACT_KINDS

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        found = _read(subject)
        if found is None:
            return
        for level, label, shape in _levels(subject):
            for name, rule in shape.properties.items():
                allowed = rule.enum_strings
                if allowed is None:
                    continue
                statements = [s for s in found.enums if s.name == name and s.level in (None, level)]
                if not statements:
                    listed = ", ".join(f"`{v}`" for v in allowed)
                    mine = _mine(found, name, level)
                    if mine:
                        span, where = subject.locate(mine[0].offset, mine[0].text), ""
                    else:
                        span, where = _where_missing(subject, found, level, "required")
                    yield self.finding(
                        subject, span, f"enum set of {label} field `{name}` is not stated{where} (one of {listed})"
                    )
                members = frozenset(allowed)  # sets: an enum of many values must not make this quadratic
                for statement in statements:
                    stated = frozenset(statement.values)
                    missing = [v for v in allowed if v not in stated]
                    extra = [v for v in statement.values if v not in members]
                    if not missing and not extra:
                        continue
                    parts = []
                    if missing:
                        parts.append("missing " + ", ".join(f"`{v}`" for v in missing))
                    if extra:
                        parts.append("not allowed " + ", ".join(f"`{v}`" for v in extra))
                    yield self.finding(
                        subject,
                        subject.locate(statement.offset, statement.text),
                        f"enum set of {label} field `{name}` differs from the schema: " + "; ".join(parts),
                    )
