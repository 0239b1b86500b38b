"""Rules that hold a prompt's field rules to the schema it pins: required fields (PO002), optional fields
(PO003), enum sets (PO004) and the value constraints the parser enforces (PO012).

Each reads the representative render through ``promptops.render.reading``: statements are found by the
schema's own field names and enum values and by the text's structure (lists, tables, labels), never by
fixed wording. A finding points at the statement at fault; a field stated nowhere points at the list or
table where its level's other fields are stated (its group), else at the prompt's first line.
"""

from __future__ import annotations

from collections.abc import Iterator

from promptops.core.findings import Finding, Level, Span
from promptops.core.shape import FieldRule, ObjectShape
from promptops.lint.model import LintContext, Rule
from promptops.lint.subject import CONTRACT_KINDS, Kind, Subject
from promptops.render import reading, regexes

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


# A word of a statement that may be an example value: "CWE-89" in "(e.g. CWE-89)", `G12` in backticks.
_EXAMPLE = regexes.lazy(r"[\w][\w\-.:/@#]*")


class UnstatedConstraints(Rule):
    """A constraint the parser enforces on a field's value is not stated where the prompt states the field.

    For every field the prompt states, each constraint of the pinned schema that makes the parser drop a
    finding (or reject the answer) must be visible to the model: a ``pattern`` as the expression itself
    anywhere in the prompt or as an example value in the field's statement that matches it; ``minimum``,
    ``maximum``, their exclusive forms, ``multipleOf``, ``minLength``/``maxLength`` (1 may read
    "non-empty") and ``minItems``/``maxItems`` as their numbers in the field's statement. The shared
    partials state them all (``_partials/fields.j2`` the bounds, ``_partials/values.j2`` patterns and
    formats). Fields the prompt does not state at all are PO002's and PO003's; the version fields are stated
    as exact values by PO001. Heads only: released snapshots keep the wording they were released with.

    Fails (the schema says ``"id": {"type": "string", "pattern": "^G[0-9]+$"}``)::

        - `id` (string)

    Passes::

        - `id` (string): `G` and a number, such as `G12`
    """

    code = "PO012"
    name = "unstated-constraints"
    level = Level.WARNING
    kinds = frozenset({Kind.HEAD})

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        found = _read(subject)
        if found is None or subject.contract is None or subject.render is None:
            return
        versions = {subject.contract.versions.schema, subject.contract.versions.prompt}
        for level, label, shape in _levels(subject):
            for name, rule in shape.properties.items():
                mine = _mine(found, name, level)
                if not mine or name in versions:
                    continue
                for missing in _unstated(rule, mine, subject.render.text):
                    where = mine[0]
                    yield self.finding(
                        subject,
                        subject.locate(where.offset, where.text),
                        f"{label} field `{name}`: the parser enforces {missing}, which the prompt never states",
                    )


def _unstated(rule: FieldRule, statements: list[reading.FieldStatement], prompt: str) -> Iterator[str]:
    text = " ".join(s.text for s in statements)
    pattern = rule.pattern  # stated as itself anywhere, or by an example in the field's statement that matches it
    if pattern is not None and pattern.source not in prompt and not any(map(pattern.search, _EXAMPLE.findall(text))):
        yield f"the pattern {pattern.source!r}"
    bounds = (
        ("minimum", rule.minimum),
        ("maximum", rule.maximum),
        ("exclusiveMinimum", rule.exclusive_minimum),
        ("exclusiveMaximum", rule.exclusive_maximum),
        ("multipleOf", rule.multiple_of),
        ("maxLength", rule.max_length),
        ("minItems", rule.min_items),
        ("maxItems", rule.max_items),
    )
    for keyword, value in bounds:
        if value is not None and not _states_number(text, value):
            yield f"{keyword} {_number(value)}"
    if rule.min_length is not None and not (
        _states_number(text, rule.min_length) or (rule.min_length == 1 and "non-empty" in text)
    ):
        yield f"minLength {rule.min_length}"


def _states_number(text: str, value: float) -> bool:
    return reading.contains_token(text, _number(value), words=False)


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)  # exactly, however long (a float of it may not exist)
    return str(int(value)) if value.is_integer() else str(value)
