"""The diagnostic path: validate a decoded document step by step (seed 000 §5.3.2-5.3.4, DESIGN.md §3.5-3.9).

Order, as the spec demands: top level (shape, duplicate keys, versions before anything else), then each finding
on its own (drop, never fail the response), then reconciliation with the changed files, then the partial
fallback and duplicate ids. A rejected response carries only the wrapper/truncation notes and its one error.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from promptops.contract import Contract
from promptops.errors import PolicyError, VersionError
from promptops.parsing import paths
from promptops.parsing.diagnostics import (
    ERROR,
    INFO,
    WARNING,
    Code,
    Diagnostic,
    ParseOutcome,
    duplicate_ids,
    extraction_note,
)
from promptops.parsing.fields import LINE, PATH, PLAIN, Coercion, Problem, Role, check_value, compile_quick
from promptops.parsing.jsontext import Document
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.scan import native_marks
from promptops.parsing.typed import UNSET, TypedShape
from promptops.parsing.versions import VersionGate
from promptops.policy import ParserPolicy
from promptops.shape import FieldRule, ObjectShape, OutputShape
from promptops.versioning import PromptVersion, SchemaVersion


class _Rejected(Exception):
    def __init__(self, code: Code, path: str | None, message: str) -> None:
        self.code = code
        self.path = path
        self.message = message


@dataclass(frozen=True)
class _Compiled:
    """Per schema version: quick as-written tests per field, and the key sets checked in one C operation."""

    quick_top: dict[str, Callable[[Any], bool]]
    quick_item: dict[str, Callable[[Any], bool]]
    required: frozenset[str]
    known: frozenset[str]
    complete: bool  # every finding field has a quick test, so a finding can be accepted as written


class Validator:
    """Validates decoded documents for one contract under one policy, with full diagnostics."""

    def __init__(
        self,
        contract: Contract,
        policy: ParserPolicy,
        gate: VersionGate,
        typed: Mapping[SchemaVersion, TypedShape] | None = None,
        *,
        speedups: bool = True,
    ) -> None:
        self._contract = contract
        self._marks = native_marks if speedups else None
        # Documents from the itemwise reader hold findings already checked in C as typed Structs.
        self._typed = dict(typed or {})
        self._compiled_by_version: dict[SchemaVersion, _Compiled] = {}
        self._typed_shapes: dict[str, OutputShape] = {}  # declared schema text -> shape, for typed documents
        self._gate = gate
        self._coercions = contract.coercions
        self._items = contract.items
        self._items_path = paths.member(None, contract.items)
        self._version_rules = contract.shape(policy.schema_floor).top.properties
        self._version_quick = {
            name: test
            for name, rule in self._version_rules.items()
            if (test := compile_quick(rule, PLAIN, contract.coercions)) is not None
        }
        roles = contract.roles
        self._roles: dict[str, Role] = {}
        for name, role in ((roles.line, LINE), (roles.end_line, LINE), (roles.path, PATH)):
            if name is not None:
                self._roles[name] = role

    def validate(
        self, document: Document, changed: ChangedFiles, request_versions: tuple[str, str] | None
    ) -> ParseOutcome:
        notes: list[Diagnostic] = []
        if document.extracted:
            notes.append(extraction_note())
        truncation = document.truncation
        if truncation is not None:
            lost = f"; {truncation.cut_member} was cut short and is treated as absent" if truncation.cut_member else ""
            notes.append(Diagnostic(Code.TRUNCATED_OUTPUT, WARNING, None, f"response is cut off{lost}"))
        try:
            return self._validate(document, changed, request_versions, notes)
        except _Rejected as rejected:
            notes.append(Diagnostic(rejected.code, ERROR, rejected.path, rejected.message))
            return ParseOutcome(
                accepted=False,
                reason=rejected.code,
                diagnostics=notes,
                extracted=document.extracted,
                truncated=truncation is not None,
            )

    def _validate(
        self,
        document: Document,
        changed: ChangedFiles,
        request_versions: tuple[str, str] | None,
        notes: list[Diagnostic],
    ) -> ParseOutcome:
        top = document.value
        if type(top) is not dict:
            raise _Rejected(Code.NOT_AN_OBJECT, None, "response is not a JSON object")
        if document.top_duplicates:
            key = document.top_duplicates[0]
            raise _Rejected(Code.DUPLICATE_KEY, paths.member(None, key), f"key {key!r} appears more than once")
        if document.member_duplicates:
            for key in top:
                if key in document.member_duplicates:
                    where = document.member_duplicates[key]
                    raise _Rejected(Code.DUPLICATE_KEY, where, f"{where}: key appears more than once")
        result: dict[str, Any]
        if document.checked_versions is not None:  # typed envelope: versions and top level already proven
            (schema_text, prompt_text), tolerant = document.checked_versions, False
            shape = self._typed_shape_of(document)
            result = dict(top)
            del result[self._items]
            outcome_diags = notes
        else:
            applied: list[Coercion] = []
            schema_text, prompt_text, shape, tolerant = self._versions(top, request_versions, applied)
            result = {}
            ignored: list[Diagnostic] = []
            self._top_level(top, shape, tolerant, document, applied, result, ignored)
            outcome_diags = notes + [_coercion_diag(c) for c in applied] + ignored
        items = top.get(self._items)
        assert isinstance(items, list)
        kept, counts, has_structs = self._findings(items, shape, tolerant, document, changed, outcome_diags)
        result[self._items] = kept
        # Typed findings stay Structs until someone reads the result.
        materialize = functools.partial(msgspec.to_builtins, result) if has_structs else None
        return ParseOutcome.checked(
            outcome_diags,
            None if has_structs else result,
            materialize,
            (schema_text, prompt_text),
            (counts[0], len(kept), counts[1]),
            document.extracted,
            document.truncation is not None,
        )

    # ---- top level -------------------------------------------------------------------------------------

    def _versions(
        self, top: dict[str, Any], request_versions: tuple[str, str] | None, applied: list[Coercion]
    ) -> tuple[str, str, OutputShape, bool]:
        fields = self._contract.versions
        texts: list[str] = []
        parsed: list[Any] = []
        for field, parse, index in ((fields.schema, SchemaVersion.parse, 0), (fields.prompt, PromptVersion.parse, 1)):
            if field is None:
                if request_versions is None:
                    raise PolicyError(f"contract {self._contract.name} declares no versions in its output: pass them")
                text = request_versions[index]
                where = None
            else:
                if field not in top:
                    raise _Rejected(Code.MISSING_REQUIRED_FIELD, field, f"required field {field} is missing")
                value, quick = top[field], self._version_quick.get(field)
                checked = (
                    value
                    if quick is not None and quick(value)
                    else self._check_top(field, value, self._version_rules[field], applied)
                )
                text = checked
                where = field
            try:
                parsed.append(parse(text))
            except VersionError as exc:
                code = Code.INVALID_TOP_LEVEL_FIELD if where else Code.INCOMPATIBLE_VERSION
                raise _Rejected(code, where, str(exc)) from None
            texts.append(text)
        verdict = self._gate.judge(parsed[0], parsed[1])
        if not verdict.accepted:
            in_output = verdict.field in (fields.schema, fields.prompt)
            raise _Rejected(Code.INCOMPATIBLE_VERSION, verdict.field if in_output else None, verdict.message)
        assert verdict.shape is not None
        return texts[0], texts[1], verdict.shape, verdict.tolerant

    def _top_level(
        self,
        top: dict[str, Any],
        shape: OutputShape,
        tolerant: bool,
        document: Document,
        applied: list[Coercion],
        result: dict[str, Any],
        ignored: list[Diagnostic],
    ) -> None:
        rules = shape.top.properties
        version_fields = (self._contract.versions.schema, self._contract.versions.prompt)
        cut = document.truncation.cut_member if document.truncation else None
        if self._contract.null_means_absent:
            _drop_nulls(top, shape.top)
        for name in shape.top.required:
            if name not in top:
                why = "; the response is cut off before it" if cut is not None or document.truncation else ""
                raise _Rejected(
                    Code.MISSING_REQUIRED_FIELD, paths.member(None, name), f"required field {name} is missing{why}"
                )
        for key in top:
            if key not in rules and not shape.top.additional:
                where = paths.member(None, key)
                if not tolerant:
                    raise _Rejected(Code.ADDITIONAL_PROPERTY, where, f"unknown top-level field {where}")
                ignored.append(_ignored(where, shape))
        items = top[self._items]
        if type(items) is not list:
            raise _Rejected(Code.FINDINGS_NOT_ARRAY, self._items_path, f"{self._items_path} is not an array")
        items_rule = rules[self._items]
        if items_rule.min_items is not None and len(items) < items_rule.min_items:
            raise _Rejected(Code.INVALID_TOP_LEVEL_FIELD, self._items_path, f"fewer than {items_rule.min_items} items")
        if items_rule.max_items is not None and len(items) > items_rule.max_items:
            raise _Rejected(Code.INVALID_TOP_LEVEL_FIELD, self._items_path, f"more than {items_rule.max_items} items")
        quick_top = self._compiled(shape).quick_top
        for key, value in top.items():
            if key == self._items:
                continue
            quick = quick_top.get(key)
            if quick is not None and quick(value):
                result[key] = value
            elif key in version_fields:
                result[key] = self._check_top(key, value, rules[key], [])  # already logged
            elif key in rules:
                result[key] = self._check_top(key, value, rules[key], applied)
            elif shape.top.additional:
                result[key] = value
        # Results list fields in schema order (then any extra members), whatever order the model used.
        ordered = {key: result.get(key) for key in rules if key in result or key == self._items}
        ordered.update((key, value) for key, value in result.items() if key not in ordered)
        result.clear()
        result.update(ordered)

    def _kept_as_written(self, item: dict[str, Any], compiled: _Compiled, changed: ChangedFiles) -> bool:
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

    def _typed_shape_of(self, document: Document) -> OutputShape:
        """The schema the itemwise reader decoded with (the one of its typed findings)."""
        assert document.checked_versions is not None
        text = document.checked_versions[0]
        shape = self._typed_shapes.get(text)
        if shape is None:
            if len(self._typed_shapes) >= 4096:  # texts come from model output: keep the cache bounded
                self._typed_shapes.clear()
            shape = self._typed_shapes[text] = self._contract.shape(SchemaVersion.parse(text))
        return shape

    def _compiled(self, shape: OutputShape) -> _Compiled:
        compiled = self._compiled_by_version.get(shape.version)
        if compiled is None:

            def quick(rules: Mapping[str, FieldRule]) -> dict[str, Callable[[Any], bool]]:
                tests = {
                    name: compile_quick(rule, self._roles.get(name, PLAIN), self._coercions)
                    for name, rule in rules.items()
                }
                return {name: test for name, test in tests.items() if test is not None}

            quick_item = quick(shape.item.properties)
            compiled = _Compiled(
                quick_top=quick(shape.top.properties),
                quick_item=quick_item,
                required=frozenset(shape.item.required),
                known=frozenset(shape.item.properties),
                complete=len(quick_item) == len(shape.item.properties) and not shape.item.additional,
            )
            self._compiled_by_version[shape.version] = compiled
        return compiled

    def _check_top(self, name: str, value: Any, rule: FieldRule, applied: list[Coercion]) -> Any:
        checked = check_value(rule, value, None, name, PLAIN, self._coercions, applied)
        if isinstance(checked, Problem):
            raise _Rejected(Code.INVALID_TOP_LEVEL_FIELD, paths.member(None, name), checked.message)
        return checked

    # ---- findings --------------------------------------------------------------------------------------

    def _findings(
        self,
        items: list[Any],
        shape: OutputShape,
        tolerant: bool,
        document: Document,
        changed: ChangedFiles,
        diags: list[Diagnostic],
    ) -> tuple[list[Any], tuple[int, int], bool]:
        kept: list[Any] = []
        coerced = 0
        has_structs = False
        compiled = self._compiled(shape)
        # A finding that passes every quick test as written is kept without field-by-field checks.
        screened = document.checked_versions is not None  # plain findings there already failed typed decoding
        as_is = compiled.complete and not tolerant and not self._contract.null_means_absent and not screened
        rules = shape.item.properties
        id_field = self._contract.roles.id
        kept_ids: list[tuple[int, str | None]] = []
        typed = self._typed.get(shape.version)
        item_type = typed.item_type if typed is not None else None
        # Typed findings that are in place are kept as they are: one C pass marks them with their ids.
        marks: list[Any] | None = None
        if typed is not None:
            if self._marks is not None:
                marks = self._marks(items, item_type, *typed.place_fields, typed.listed(changed), UNSET)
            else:
                marks = typed.marks(items, changed)
            has_structs = marks.count(UNSET) != len(marks)
        for index, item in enumerate(items):
            if marks is not None:
                mark = marks[index]
                if mark is not UNSET:
                    kept.append(item)
                    kept_ids.append((index, mark))
                    continue
                if type(item) is item_type:  # valid as written, but not in place: the checks below say why
                    item = msgspec.to_builtins(item)
            finding_id = _finding_id(item, id_field)
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
            if as_is and self._kept_as_written(item, compiled, changed):
                kept.append(_schema_ordered(item, rules))
                kept_ids.append((index, finding_id))
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
                diags.append(_coercion_diag(coercion, index, finding_id))
            for note in ignored:
                note.finding_index, note.finding_id = index, finding_id
                diags.append(note)
            kept_ids.append((index, finding_id))
        if id_field is not None and _ids_repeat(kept_ids):
            diags.extend(duplicate_ids(kept_ids, self._items_path, id_field))
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
        compiled = self._compiled(shape)
        if self._contract.null_means_absent:
            _drop_nulls(item, object_shape)
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
                    ignored.append(_ignored(where, shape))
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
            return min(problems, key=lambda p: p.rank)  # min is stable: ties go to the earlier field
        out = _schema_ordered(out, rules)
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


_second = operator.itemgetter(1)


def _ids_repeat(kept_ids: list[tuple[int, str | None]]) -> bool:
    """Some id occurs twice (None included): only then is ``duplicate_ids``'s walk worth making."""
    return len(set(map(_second, kept_ids))) != len(kept_ids)


def _schema_ordered(values: dict[str, Any], rules: Any) -> dict[str, Any]:
    ordered = {key: values[key] for key in rules if key in values}
    if len(ordered) != len(values):
        ordered.update((key, value) for key, value in values.items() if key not in ordered)
    return ordered


def _drop_nulls(obj: dict[str, Any], shape: ObjectShape) -> None:
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


def _coercion_diag(coercion: Coercion, index: int | None = None, finding_id: str | None = None) -> Diagnostic:
    return Diagnostic(coercion.code, INFO, coercion.path, coercion.message, index, finding_id)


def _ignored(where: str, shape: OutputShape) -> Diagnostic:
    return Diagnostic(
        Code.UNKNOWN_FIELD_IGNORED,
        INFO,
        where,
        f"{where}: not in schema {shape.version}, ignored (the response declares a newer minor)",
    )
