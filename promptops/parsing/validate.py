"""The diagnostic path: validate a decoded document step by step.

Order, as the spec demands: top level (shape, duplicate keys, versions before anything else), then each finding
on its own (drop, never fail the response), then reconciliation with the changed files, then the partial
fallback and duplicate ids. A rejected response carries only the wrapper/truncation notes and its one error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from promptops.core.contract import Contract
from promptops.core.errors import PolicyError, VersionError
from promptops.core.policy import ParserPolicy
from promptops.core.shape import FieldRule, OutputShape
from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.parsing import paths
from promptops.parsing.diagnostics import (
    ERROR,
    WARNING,
    Code,
    Diagnostic,
    ParseOutcome,
    extraction_note,
)
from promptops.parsing.fields import PLAIN, Coercion, Problem, check_value, count_items
from promptops.parsing.findings import Findings, coercion_diag, drop_nulls, ignored_note
from promptops.parsing.jsontext import Document
from promptops.parsing.reconcile import ChangedFiles
from promptops.parsing.typed import DECODE_ERRORS, Outline, TypedShape
from promptops.parsing.versions import VersionGate

_decode = msgspec.json.decode
_to_builtins = msgspec.to_builtins
_PLAIN = Document(None)  # a document read whole, with no repeated key: what an Outline is (never changed here)


class _Rejected(Exception):
    def __init__(self, code: Code, path: str | None, message: str) -> None:
        self.code = code
        self.path = path
        self.message = message


class Validator:
    """Validates decoded documents for one contract under one policy, with full diagnostics."""

    def __init__(
        self,
        contract: Contract,
        policy: ParserPolicy,
        gate: VersionGate,
        typed: Mapping[SchemaVersion, TypedShape | None],
        max_findings: int,
    ) -> None:
        self._contract = contract
        self._findings = Findings(contract, typed)
        self._max_findings = max_findings
        self._gate = gate
        self._coercions = contract.coercions
        self._items = contract.items
        self._items_path = paths.member(None, contract.items)
        self._version_rules = contract.shape(policy.schema_floor).top.properties
        # Version declarations (schema, prompt texts) judged so far: what they decided when the rules accept them
        # with no coercion, else None. Traffic repeats a few pairs; the fast path reads it too (versions_as_written).
        self.judged_versions: dict[tuple[Any, Any], tuple[str, str, OutputShape, bool] | None] = {}

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
            schema, prompt = self.declared(document.value, request_versions)
            return ParseOutcome(
                accepted=False,
                reason=rejected.code,
                diagnostics=notes,
                schema_version=schema,
                prompt_version=prompt,
                extracted=document.extracted,
                truncated=truncation is not None,
            )

    def validate_outline(self, outline: Outline, changed: ChangedFiles, extracted: bool) -> ParseOutcome | None:
        """The outcome of a response whose top level is clean as written (the fast path's Outline): only the
        findings it could not take as written are read and checked here. None when one of them is not JSON
        that reads on its own (the whole text then goes through ``validate``)."""
        written = outline.clean
        items = list(written)
        raw = outline.raw
        try:
            for index in [i for i, as_written in enumerate(written) if as_written is None]:
                items[index] = _decode(raw[index])
        except DECODE_ERRORS:
            return None
        diags = [extraction_note()] if extracted else []
        kept, counts = self._findings.check(items, outline.shape, False, _PLAIN, changed, diags, written)
        result: dict[str, Any] = _to_builtins(outline.top)
        result[self._items] = kept
        return ParseOutcome.checked(
            diags, result, outline.versions, (counts[0], len(kept), counts[1]), extracted, False
        )

    def declared(self, top: Any, request_versions: tuple[str, str] | None) -> tuple[str | None, str | None]:
        """The versions a response declares (or its request states), as far as they can be read: what a
        rejection still reports, so that the versions of refused responses can be counted."""
        fields = self._contract.versions
        found: list[str | None] = []
        for index, field in enumerate((fields.schema, fields.prompt)):
            if field is None:
                found.append(request_versions[index] if request_versions is not None else None)
                continue
            value = top.get(field) if type(top) is dict else None
            if type(value) is str and self._coercions.trim_strings:
                value = value.strip()
            found.append(value if type(value) is str and value else None)
        return found[0], found[1]

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
        applied: list[Coercion] = []
        schema_text, prompt_text, shape, tolerant = self._versions(top, request_versions, applied)
        result: dict[str, Any] = {}
        ignored: list[Diagnostic] = []
        fields = self._contract.versions
        for name, text in ((fields.schema, schema_text), (fields.prompt, prompt_text)):
            if name is not None:
                result[name] = text  # checked (and any coercion logged) with the versions
        self._top_level(top, shape, tolerant, document, applied, result, ignored)
        outcome_diags = notes + [coercion_diag(c) for c in applied] + ignored
        items = top.get(self._items)
        assert isinstance(items, list)
        kept, counts = self._findings.check(items, shape, tolerant, document, changed, outcome_diags)
        result[self._items] = kept
        return ParseOutcome.checked(
            outcome_diags,
            result,
            (schema_text, prompt_text),
            (counts[0], len(kept), counts[1]),
            document.extracted,
            document.truncation is not None,
        )

    # ---- top level -------------------------------------------------------------------------------------

    def _versions(
        self, top: dict[str, Any], request_versions: tuple[str, str] | None, applied: list[Coercion]
    ) -> tuple[str, str, OutputShape, bool]:
        """The declared versions as checked, the schema to read the response with, and whether tolerantly."""
        fields = self._contract.versions
        schema, prompt = request_versions or (None, None)
        key = (
            top.get(fields.schema, schema) if fields.schema else schema,
            top.get(fields.prompt, prompt) if fields.prompt else prompt,
        )
        plain = type(key[0]) is str and type(key[1]) is str
        known = self.judged_versions.get(key) if plain else None
        if known is not None:
            return known
        coercions = len(applied)
        decided = self._judge_versions(top, request_versions, applied)
        if plain and len(applied) == coercions:
            self._remember(key, decided)
        return decided

    def versions_as_written(self, versions: tuple[str, str]) -> tuple[str, str, OutputShape, bool] | None:
        """What the declaration ``versions`` (schema, prompt texts, from the output or the request) decides when
        the version rules accept it exactly as written, else None: the fast path's version test, by the same
        rules. Remembered either way, in ``judged_versions``."""
        if type(versions[0]) is not str or type(versions[1]) is not str:
            return None  # request versions given as something else: the diagnostic path says what is wrong
        if versions in self.judged_versions:
            return self.judged_versions[versions]
        fields = self._contract.versions
        top = {name: text for name, text in zip((fields.schema, fields.prompt), versions, strict=True) if name}
        applied: list[Coercion] = []
        try:
            decided: tuple[str, str, OutputShape, bool] | None = self._versions(top, None if top else versions, applied)
        except _Rejected:
            decided = None
        if applied:
            decided = None
        self._remember(versions, decided)
        return decided

    def _remember(self, key: tuple[Any, Any], decided: tuple[str, str, OutputShape, bool] | None) -> None:
        if len(self.judged_versions) >= 4096:  # declarations come from model output: keep it bounded
            self.judged_versions.clear()
        self.judged_versions[key] = decided

    def _judge_versions(
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
                text = self._check_top(field, top[field], self._version_rules[field], applied)
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
        cut = document.truncation.cut_member if document.truncation else None
        if self._contract.null_means_absent:
            drop_nulls(top, shape.top)
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
                ignored.append(ignored_note(where, shape))
        items = top[self._items]
        if type(items) is not list:
            raise _Rejected(Code.FINDINGS_NOT_ARRAY, self._items_path, f"{self._items_path} is not an array")
        items_rule = rules[self._items]
        if items_rule.min_items is not None and len(items) < items_rule.min_items:
            raise _Rejected(
                Code.INVALID_TOP_LEVEL_FIELD, self._items_path, f"fewer than {count_items(items_rule.min_items)}"
            )
        if items_rule.max_items is not None and len(items) > items_rule.max_items:
            raise _Rejected(
                Code.INVALID_TOP_LEVEL_FIELD, self._items_path, f"more than {count_items(items_rule.max_items)}"
            )
        if len(items) > self._max_findings:
            message = f"{self._items_path} holds {len(items)} items, over the {self._max_findings} limit"
            raise _Rejected(Code.TOO_LARGE, self._items_path, message)
        for key, value in top.items():
            if key == self._items or key in result:
                continue
            if key in rules:
                result[key] = self._check_top(key, value, rules[key], applied)
            elif shape.top.additional:
                result[key] = value
        # Results list fields in schema order (then any extra members), whatever order the model used.
        ordered = {key: result.get(key) for key in rules if key in result or key == self._items}
        ordered.update((key, value) for key, value in result.items() if key not in ordered)
        result.clear()
        result.update(ordered)

    def _check_top(self, name: str, value: Any, rule: FieldRule, applied: list[Coercion]) -> Any:
        checked = check_value(rule, value, None, name, PLAIN, self._coercions, applied)
        if isinstance(checked, Problem):
            raise _Rejected(Code.INVALID_TOP_LEVEL_FIELD, paths.member(None, name), checked.message)
        return checked
