"""The diagnostic path's checks of the findings, one by one (seed 000 §5.3.3-5.3.4, DESIGN.md §3.7-3.9).

Each finding is kept (possibly coerced) or dropped with the first fault in DESIGN.md §3.7 order, never failing
the response. Most findings need no field-by-field checks: typed Structs the C helpers mark as in place are
kept as they are, and a plain finding that converts to the typed Struct with clean strings and in place is
kept as written; only the rest go through ``check_value`` field by field.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from promptops.contract import Contract
from promptops.parsing import paths
from promptops.parsing.diagnostics import INFO, WARNING, Code, Diagnostic, duplicate_ids
from promptops.parsing.fields import LINE, PATH, PLAIN, Coercion, Problem, Role, check_value, compile_quick
from promptops.parsing.jsontext import Document
from promptops.parsing.plaincheck import native_check, native_keep_marked, native_repeats, plain_spec
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.scan import native_marks
from promptops.parsing.typed import DECODE_ERRORS, UNSET, TypedShape
from promptops.shape import FieldRule, ObjectShape, OutputShape
from promptops.versioning import SchemaVersion


@dataclass(frozen=True)
class Compiled:
    """Per schema version: quick as-written tests per field, and the key sets checked in one C operation."""

    quick_top: dict[str, Callable[[Any], bool]]
    quick_item: dict[str, Callable[[Any], bool]]
    item_rules: Mapping[str, FieldRule]
    required: frozenset[str]
    known: frozenset[str]
    complete: bool  # every finding field has a quick test, so a finding can be accepted as written
    # Fields whose quick test a valid typed Struct with clean strings can still fail (a path holding a
    # backslash, when those are coerced): the only ones a typed finding out of place is checked for.
    typed_suspects: tuple[str, ...]
    # Plain findings may be screened by converting them to the typed Struct (see Findings.converts_as_written).
    convertible: bool
    # What the C check of plain findings reads (plaincheck.py), None when the findings are beyond it.
    plain: tuple[Any, ...] | None


class Findings:
    """Checks the findings of documents for one contract (its roles and coercions)."""

    def __init__(self, contract: Contract, typed: Mapping[SchemaVersion, TypedShape], *, speedups: bool) -> None:
        self._contract = contract
        self._marks = native_marks if speedups else None
        self._plain_check = native_check if speedups else None
        self._ids_repeat = native_repeats if speedups and native_repeats is not None else _ids_repeat
        self._keep_marked = native_keep_marked if speedups and native_keep_marked is not None else _keep_marked
        self._typed = typed
        self._compiled_by_version: dict[SchemaVersion, Compiled] = {}
        self._coercions = contract.coercions
        self._items_path = paths.member(None, contract.items)
        self._id_field = contract.roles.id
        self._plans: dict[tuple[SchemaVersion, bool, bool], _Plan] = {}  # see _plan
        roles = contract.roles
        self._roles: dict[str, Role] = {}
        for name, role in ((roles.line, LINE), (roles.end_line, LINE), (roles.path, PATH)):
            if name is not None:
                self._roles[name] = role

    def compiled(self, shape: OutputShape) -> Compiled:
        compiled = self._compiled_by_version.get(shape.version)
        if compiled is None:

            def quick(rules: Mapping[str, FieldRule]) -> dict[str, Callable[[Any], bool]]:
                tests = {
                    name: compile_quick(rule, self._roles.get(name, PLAIN), self._coercions)
                    for name, rule in rules.items()
                }
                return {name: test for name, test in tests.items() if test is not None}

            quick_item = quick(shape.item.properties)
            path = self._contract.roles.path
            suspects = (path,) if path is not None and self._coercions.path_separators else ()
            # Strings nested deeper than an array of strings are not among the typed shape's free strings.
            nested = any(
                rule.items is not None and (rule.items.items is not None or "array" in rule.items.types)
                for rule in shape.item.properties.values()
            )
            compiled = Compiled(
                quick_top=quick(shape.top.properties),
                quick_item=quick_item,
                item_rules=shape.item.properties,
                required=frozenset(shape.item.required),
                known=frozenset(shape.item.properties),
                complete=len(quick_item) == len(shape.item.properties) and not shape.item.additional,
                typed_suspects=tuple(s for s in suspects if s in shape.item.properties),
                convertible=not nested,
                plain=plain_spec(self._contract, shape.item, self._roles, quick_item, PLAIN),
            )
            self._compiled_by_version[shape.version] = compiled
        return compiled

    def check(
        self,
        items: list[Any],
        shape: OutputShape,
        tolerant: bool,
        document: Document,
        changed: ChangedFiles,
        diags: list[Diagnostic],
    ) -> tuple[list[Any], tuple[int, int], bool]:
        """The kept findings, (seen, coerced) counts, and whether some kept finding is a typed Struct."""
        plan = self._plan(shape, tolerant, document.checked_versions is not None)
        kept: list[Any] = []
        kept_ids: list[tuple[int, str | None]] = []
        coerced = 0
        has_structs = False
        typed = plan.typed
        # Typed findings that are in place are kept as they are: one C pass marks them with their ids.
        marks: list[Any] | None = None
        if typed is not None:
            if self._marks is not None:
                listed = changed.listed_plain if typed.plain_paths else changed.listed  # typed.listed, inlined
                marks = self._marks(items, plan.item_type, *typed.place_fields, listed, UNSET)
            else:
                marks = typed.marks(items, changed)
            has_structs = marks.count(UNSET) != len(marks)
        count = len(items)
        after = 0  # the index after the last finding looked at
        while after < count:
            if marks is None:
                index = after
            else:  # marked findings are kept as they are, a run at a time
                index = self._keep_marked(items, marks, UNSET, kept, kept_ids, after)
                if index == count:
                    break
            after = index + 1
            item = items[index]
            is_struct = type(item) is plan.item_type
            if is_struct:
                item = msgspec.to_builtins(item)
            finding_id = _finding_id(item, self._id_field)
            base = paths.element(self._items_path, index)
            if type(item) is not dict:
                diags.append(_drop(Code.NOT_AN_OBJECT, base, f"{base} is not an object", index, finding_id))
                continue
            repeated = document.item_duplicates.get(index)
            if repeated is not None:
                where = f"{base}{'.' if not repeated.startswith('[') else ''}{repeated}"
                diags.append(
                    _drop(Code.DUPLICATE_KEY, where, f"{where}: key appears more than once", index, finding_id)
                )
                continue
            applied: list[Coercion] = []
            ignored: list[Diagnostic] = []
            if is_struct and plan.typed_shortcut:  # valid as written, but not in place: the checks below say why
                checked = self._typed_finding(item, base, plan.compiled, changed, applied)
            elif plan.as_is and (
                (plan.converter is not None and self._converts_as_written(item, plan.converter, changed))
                or self._kept_as_written(item, plan.compiled, changed)
            ):
                kept.append(_schema_ordered(item, plan.compiled.item_rules))
                kept_ids.append((index, finding_id))
                continue
            else:
                native = plan.plain_check(item, plan.compiled.plain, base, changed) if plan.plain_check else None
                if native is None:  # no C check, or one it leaves to Python
                    checked = self._finding(item, base, shape, tolerant, changed, applied, ignored)
                elif type(native) is tuple:
                    checked, applied = native
                else:
                    checked = native
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
        if self._id_field is not None and self._ids_repeat(kept_ids):
            diags.extend(duplicate_ids(kept_ids, self._items_path, self._id_field))
        seen = len(items)
        truncation = document.truncation
        if truncation is not None and truncation.cut_item is not None:
            where = paths.element(self._items_path, truncation.cut_item)
            diags.append(_drop(Code.TRUNCATED, where, f"{where} is cut off", truncation.cut_item, None))
            seen += 1
        if seen and not kept:
            diags.append(
                Diagnostic(Code.ALL_FINDINGS_DROPPED, WARNING, self._items_path, f"all {seen} findings were dropped")
            )
        return kept, (seen, coerced), has_structs

    def _plan(self, shape: OutputShape, tolerant: bool, screened: bool) -> _Plan:
        """What ``check`` reads for the findings of one schema version, read tolerantly or not, from a typed
        envelope (``screened``: its plain findings already failed typed decoding) or not; built once."""
        key = (shape.version, tolerant, screened)
        plan = self._plans.get(key)
        if plan is None:
            compiled = self.compiled(shape)
            typed = self._typed.get(shape.version)
            # A finding that passes every quick test as written is kept without field-by-field checks.
            as_is = compiled.complete and not tolerant and not self._contract.null_means_absent and not screened
            plan = _Plan(
                compiled=compiled,
                typed=typed,
                item_type=typed.item_type if typed is not None else None,
                as_is=as_is,
                converter=typed if as_is and compiled.convertible else None,
                plain_check=self._plain_check if not tolerant and compiled.plain else None,
                # A typed Struct's builtins are in schema order, with no unknown, missing or (allowed) null member.
                typed_shortcut=compiled.complete and not self._contract.null_means_absent,
            )
            self._plans[key] = plan
        return plan

    def _kept_as_written(self, item: dict[str, Any], compiled: Compiled, changed: ChangedFiles) -> bool:
        keys = item.keys()
        if not compiled.required <= keys or not keys <= compiled.known:
            return False
        quick = compiled.quick_item
        for key, value in item.items():
            if not quick[key](value):
                return False
        roles = self._contract.roles
        line, end = roles.line, roles.end_line
        if line is not None and end is not None and end in item and item[end] < item[line]:
            return False
        return roles.path is None or roles.path not in item or item[roles.path] in changed.normal

    def _converts_as_written(self, item: dict[str, Any], typed: TypedShape, changed: ChangedFiles) -> bool:
        """``_kept_as_written`` in C for the usual finding: it converts to the typed Struct, its strings are
        clean and it is in place. False only means the quick tests decide (a typed Struct with clean strings
        passes every quick test, which is what keeping marked Structs as they are relies on)."""
        try:
            struct = msgspec.convert(item, typed.item_type)
        except DECODE_ERRORS:
            return False
        return bool(typed.strings_clean_one(struct) and typed.in_place_one(struct, changed))

    def _typed_finding(
        self, out: dict[str, Any], base: str, compiled: Compiled, changed: ChangedFiles, applied: list[Coercion]
    ) -> dict[str, Any] | Problem:
        """``_finding`` for a typed Struct out of place (``out`` its builtins, in schema order): every field
        passes its quick test but the ``typed_suspects``, so only those and the placement rules are checked."""
        problems: list[Problem] = []
        quick = compiled.quick_item
        for key in compiled.typed_suspects:
            value = out.get(key, UNSET)
            if value is UNSET or quick[key](value):
                continue
            rule = compiled.item_rules[key]
            checked = check_value(rule, value, base, key, self._roles.get(key, PLAIN), self._coercions, applied)
            if isinstance(checked, Problem):
                problems.append(checked)
            else:
                out[key] = checked
        if problems:
            return min(problems, key=_rank)
        return self._placement(out, base, changed)

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
        compiled = self.compiled(shape)
        if self._contract.null_means_absent:
            drop_nulls(item, object_shape)
        keys = item.keys()
        if not compiled.required <= keys:
            for name in object_shape.required:
                if name not in item:
                    where = paths.member(base, name)
                    return Problem(0, Code.MISSING_REQUIRED_FIELD, where, f"required field {where} is missing")
        if not object_shape.additional and not keys <= compiled.known:
            for key in item:
                if key not in rules:
                    where = paths.member(base, key)
                    if not tolerant:
                        return Problem(0, Code.UNKNOWN_FIELD, where, f"unknown field {where}")
                    ignored.append(ignored_note(where, shape))
        out: dict[str, Any] = {}
        problems: list[Problem] = []
        quick = compiled.quick_item
        for key, value in item.items():
            test = quick.get(key)
            if test is not None and test(value):
                out[key] = value
                continue
            rule = rules.get(key)
            if rule is None:
                if object_shape.additional:
                    out[key] = value
                continue
            checked = check_value(rule, value, base, key, self._roles.get(key, PLAIN), self._coercions, applied)
            if isinstance(checked, Problem):
                problems.append(checked)
            else:
                out[key] = checked
        if problems:
            return min(problems, key=_rank)  # min is stable: ties go to the earlier field
        return self._placement(_schema_ordered(out, rules), base, changed)


@dataclass(frozen=True, slots=True)
class _Plan:
    """What ``Findings.check`` reads on every call, for one (schema version, tolerant, screened)."""

    compiled: Compiled
    typed: TypedShape | None
    item_type: type | None
    as_is: bool  # a plain finding passing every quick test as written is kept as written
    converter: TypedShape | None  # with as_is: screen plain findings in C by converting them to the typed Struct
    plain_check: Callable[..., Any] | None  # the C check of plain findings (plaincheck.py), where it applies
    typed_shortcut: bool  # a typed finding out of place needs only its suspects and its placement checked


_second = operator.itemgetter(1)
_rank = operator.attrgetter("rank")


def _keep_marked(
    items: list[Any], marks: list[Any], unset: Any, kept: list[Any], kept_ids: list[tuple[int, Any]], start: int
) -> int:
    """From ``start`` on, keep each finding marked with its id (not ``unset``) and its (index, id) pair; the index
    of the first one marked ``unset``, else ``len(items)`` (reference for plaincheck.native_keep_marked)."""
    for index in range(start, len(items)):
        mark = marks[index]
        if mark is unset:
            return index
        kept.append(items[index])
        kept_ids.append((index, mark))
    return len(items)


def _ids_repeat(kept_ids: list[tuple[int, str | None]]) -> bool:
    """Some id occurs twice (None included): only then is ``duplicate_ids``'s walk worth making."""
    return len(set(map(_second, kept_ids))) != len(kept_ids)


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


def _drop(code: Code, path: str, message: str, index: int, finding_id: str | None) -> Diagnostic:
    return Diagnostic(code, WARNING, path, f"finding dropped: {message}", index, finding_id)


def coercion_diag(coercion: Coercion, index: int | None = None, finding_id: str | None = None) -> Diagnostic:
    return Diagnostic(coercion.code, INFO, coercion.path, coercion.message, index, finding_id)


def ignored_note(where: str, shape: OutputShape) -> Diagnostic:
    return Diagnostic(
        Code.UNKNOWN_FIELD_IGNORED,
        INFO,
        where,
        f"{where}: not in schema {shape.version}, ignored (the response declares a newer minor)",
    )
