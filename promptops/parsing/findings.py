"""The diagnostic path's checks of the findings, one by one.

Each finding is kept (possibly coerced) or dropped with its first fault, in a fixed order (a repeated key, then
missing and unknown fields, then the fields in rank order: type, other constraints, enum, line; then the end line
before the line, then reconciliation), never failing the response. A finding that the Struct of its schema takes as
written (typed.TypedShape.as_written, all the findings at once) is kept as written without field-by-field checks:
the same rules, generated.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Mapping
from typing import Any

from promptops.core.contract import Contract
from promptops.core.shape import ObjectShape, OutputShape
from promptops.core.versioning import SchemaVersion
from promptops.parsing import paths
from promptops.parsing.diagnostics import INFO, WARNING, Code, Diagnostic, duplicate_ids
from promptops.parsing.fields import LINE, PATH, PLAIN, Coercion, Problem, Role, check_value
from promptops.parsing.jsontext import Document
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.typed import TypedShape


class Findings:
    """Checks the findings of documents for one contract (its roles and coercions)."""

    def __init__(self, contract: Contract, typed: Mapping[SchemaVersion, TypedShape | None]) -> None:
        self._contract = contract
        self._typed = typed
        self._coercions = contract.coercions
        self._items_path = paths.member(None, contract.items)
        self._id_field = contract.roles.id
        roles = contract.roles
        self._roles: dict[str, Role] = {}
        for name, role in ((roles.line, LINE), (roles.end_line, LINE), (roles.path, PATH)):
            if name is not None:
                self._roles[name] = role

    def check(
        self,
        items: list[Any],
        shape: OutputShape,
        tolerant: bool,
        document: Document,
        changed: ChangedFiles,
        diags: list[Diagnostic],
        written: list[Any] | None = None,
    ) -> tuple[list[Any], tuple[int, int]]:
        """The kept findings and the (seen, coerced) counts; diagnostics appended to ``diags``. ``written``, when
        given, holds each finding's result as written or None (typed.Outline.clean), found out already."""
        if written is None:
            typed = self._typed.get(shape.version)
            written = typed.as_written(items, changed) if typed is not None else [None] * len(items)
        kept: list[Any] = []
        kept_ids: list[tuple[int, str | None]] = []
        coerced = 0
        repeats = document.item_duplicates
        id_field = self._id_field
        for index, item in enumerate(items):
            finding_id = _finding_id(item, id_field)
            as_written = written[index]
            if as_written is not None and index not in repeats:
                kept.append(as_written)
                kept_ids.append((index, finding_id))
                continue
            base = paths.element(self._items_path, index)
            if type(item) is not dict:
                diags.append(_drop(Code.NOT_AN_OBJECT, base, f"{base} is not an object", index, finding_id))
                continue
            repeated = repeats.get(index)
            if repeated is not None:
                where = f"{base}{'.' if not repeated.startswith('[') else ''}{repeated}"
                diags.append(
                    _drop(Code.DUPLICATE_KEY, where, f"{where}: key appears more than once", index, finding_id)
                )
                continue
            applied: list[Coercion] = []
            ignored: list[Diagnostic] = []
            checked = self._finding(item, base, shape, tolerant, changed, applied, ignored)
            if isinstance(checked, Problem):
                diags.append(_drop(checked.code, checked.path, checked.message, index, finding_id))
                continue
            kept.append(checked)
            if applied:
                coerced += 1
            for coercion in applied:
                diags.append(coercion_diag(coercion, index, finding_id))
            for note in ignored:
                note.finding_index, note.finding_id = index, finding_id
                diags.append(note)
            kept_ids.append((index, finding_id))
        if self._id_field is not None:
            diags.extend(duplicate_ids(kept_ids, self._items_path, self._id_field))
        seen = len(items)
        truncation = document.truncation
        if truncation is not None and truncation.cut_item is not None:
            where = paths.element(self._items_path, truncation.cut_item)
            cut_id = _cut_id(truncation.cut_text, self._id_field)
            diags.append(_drop(Code.TRUNCATED, where, f"{where} is cut off", truncation.cut_item, cut_id))
            seen += 1
        if seen and not kept:
            what = "the only finding was" if seen == 1 else f"all {seen} findings were"
            diags.append(Diagnostic(Code.ALL_FINDINGS_DROPPED, WARNING, self._items_path, f"{what} dropped"))
        return kept, (seen, coerced)

    def _finding(
        self,
        item: dict[str, Any],
        base: str,
        shape: OutputShape,
        tolerant: bool,
        changed: ChangedFiles,
        applied: list[Coercion],
        ignored: list[Diagnostic],
    ) -> dict[str, Any] | Problem:
        object_shape = shape.item
        rules = object_shape.properties
        if self._contract.null_means_absent:
            drop_nulls(item, object_shape)
        for name in object_shape.required:
            if name not in item:
                where = paths.member(base, name)
                return Problem(0, Code.MISSING_REQUIRED_FIELD, where, f"required field {where} is missing")
        if not object_shape.additional:
            for key in item:
                if key not in rules:
                    where = paths.member(base, key)
                    if not tolerant:
                        return Problem(0, Code.UNKNOWN_FIELD, where, f"unknown field {where}")
                    ignored.append(ignored_note(where, shape))
        out: dict[str, Any] = {}
        problems: list[Problem] = []
        roles, coercions = self._roles, self._coercions
        for key, value in item.items():
            rule = rules.get(key)
            if rule is None:
                if object_shape.additional:
                    out[key] = value
                continue
            checked = check_value(rule, value, base, key, roles.get(key, PLAIN), coercions, applied)
            if type(checked) is Problem:
                problems.append(checked)
            else:
                out[key] = checked
        if problems:
            return min(problems, key=_rank)  # min is stable: ties go to the earlier field
        return self._placement(_schema_ordered(out, rules), base, changed)

    def _placement(self, out: dict[str, Any], base: str, changed: ChangedFiles) -> dict[str, Any] | Problem:
        roles = self._contract.roles
        line, end = roles.line, roles.end_line
        if line is not None and end is not None and line in out and end in out and out[end] < out[line]:
            where = paths.member(base, end)
            return Problem(0, Code.END_LINE_BEFORE_LINE, where, f"{where}: {out[end]} is before line {out[line]}")
        if roles.path is not None and roles.path in out and out[roles.path] not in changed:
            where = paths.member(base, roles.path)
            return Problem(
                0, Code.FILE_NOT_IN_CHANGED_FILES, where, f"{where}: {out[roles.path]!r} is not a changed file"
            )
        return out


_rank = operator.attrgetter("rank")


def _schema_ordered(values: dict[str, Any], rules: Any) -> dict[str, Any]:
    ordered = {key: values[key] for key in rules if key in values}
    if len(ordered) != len(values):
        ordered.update((key, value) for key, value in values.items() if key not in ordered)
    return ordered


def drop_nulls(obj: dict[str, Any], shape: ObjectShape) -> None:
    """null_means_absent: a null where the schema does not allow null counts as the field being absent."""
    for key in [k for k, v in obj.items() if v is None]:
        rule = shape.properties.get(key)
        if rule is None or not rule.nullable:
            del obj[key]


def _finding_id(item: Any, id_field: str | None) -> str | None:
    if id_field is None or type(item) is not dict:
        return None
    value = item.get(id_field)
    if type(value) is not str:
        return None
    return value.strip() or None


def _cut_id(cut_text: str, id_field: str | None) -> str | None:
    """The id of a finding cut off mid-way, when its id member was read whole before the cut."""
    if id_field is None or not cut_text.startswith("{"):
        return None
    found = re.search(rf'"{re.escape(id_field)}"\s*:\s*("(?:[^"\\]|\\.)*")', cut_text)
    if found is None or cut_text.count("{", 0, found.start()) != 1:  # only a member of the finding itself
        return None
    try:
        value = json.loads(found.group(1))
    except ValueError:
        return None
    return _finding_id({id_field: value}, id_field)


def _drop(code: Code, path: str, message: str, index: int, finding_id: str | None) -> Diagnostic:
    return Diagnostic(code, WARNING, path, message, index, finding_id, "dropped")


def coercion_diag(coercion: Coercion, index: int | None = None, finding_id: str | None = None) -> Diagnostic:
    return Diagnostic(coercion.code, INFO, coercion.path, coercion.message, index, finding_id, "coerced")


def ignored_note(where: str, shape: OutputShape) -> Diagnostic:
    return Diagnostic(
        Code.UNKNOWN_FIELD_IGNORED,
        INFO,
        where,
        f"{where}: not in schema {shape.version}, ignored (the response declares a newer minor)",
    )
