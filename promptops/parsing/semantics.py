"""What a contract's finding fields mean beyond their schema: the common scales merging and ranking use.

Reviewer contracts grade findings differently: P0-P3 (code-review-findings), critical..info (review-result),
critical..low (agent-output, reviewer-finding); confidence as anchors 0-100 (code-review-findings), a 0-1 float
(reviewer-finding), high/medium/low (review-result) or not at all (agent-output). A contract's ``merge:`` section in
``contract.yaml`` maps its fields onto one common scale, so nothing that merges or ranks findings ever reads a field
name or a contract name::

    merge:
      severity: {field: severity, map: {P0: critical, P1: high, P2: medium, P3: low}}
      confidence: {field: confidence, divide_by: 100}   # or map: {high: 0.8, ...}; default: when absent
      title: title                                      # optional: else the message's first sentence
      message: [why_it_matters, title]                  # first non-empty one wins
      category: category                                # optional: else the reviewer's name
      suggestion: suggested_fix                         # optional
      reviewer: {top: reviewer}                         # or {item: reviewer}; else the output's label
      global_ids: false                                 # true: ids identify an issue across reviewers
      summary: summary                                  # top-level text field (written by merge)

``merge_semantics(contract)`` reads and checks the section. It sits with the parser, below merge, because more
than merge reads it: the finding ids and the store's severity column (promptops.parsing.ids), the review gate.

Common severities and their weights: critical 1.0, high 0.8, medium 0.6, low 0.4, info 0.2 (evenly spaced, so
one step of severity is worth the same everywhere). Confidence is normalized to [0, 1].
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Annotated, Any, NamedTuple

import msgspec

from promptops.core import specs
from promptops.core.contract import Contract
from promptops.core.errors import ContractError
from promptops.core.shape import FieldRule, OutputShape

SEVERITY_WEIGHTS: Mapping[str, float] = {"critical": 1.0, "high": 0.8, "medium": 0.6, "low": 0.4, "info": 0.2}


class ConfidenceScale(NamedTuple):
    field: str | None = None
    divide_by: float | None = None  # numeric confidence: value / divide_by
    map: Mapping[str, float] | None = None  # enum confidence: value -> [0, 1]
    default: float = 0.6  # when the contract has no confidence field or the finding leaves it out

    def normalize(self, finding: Mapping[str, Any]) -> float:
        value = finding.get(self.field) if self.field is not None else None
        if self.map is not None and isinstance(value, str) and value in self.map:
            return self.map[value]
        if self.divide_by is not None and isinstance(value, int | float) and not isinstance(value, bool):
            return min(1.0, max(0.0, value / self.divide_by))
        return self.default


class MergeSemantics(NamedTuple):
    severity_field: str
    severity_map: Mapping[str, str]  # contract value -> common severity
    confidence: ConfidenceScale
    message: tuple[str, ...]
    title: str | None = None
    category: str | None = None
    suggestion: str | None = None
    reviewer_top: str | None = None
    reviewer_item: str | None = None
    global_ids: bool = False
    summary: str | None = None  # a top-level text field, for contracts merge writes its result in

    def severity(self, finding: Mapping[str, Any]) -> str:
        """The common severity of a validated finding (``info`` if it has none the map knows)."""
        return self.severity_map.get(str(finding.get(self.severity_field)), "info")

    def text(self, finding: Mapping[str, Any], name: str | None) -> str | None:
        value = finding.get(name) if name is not None else None
        return value if isinstance(value, str) and value.strip() else None

    def message_of(self, finding: Mapping[str, Any]) -> str | None:
        return next((t for t in (self.text(finding, n) for n in self.message) if t is not None), None)


_Name = Annotated[str, msgspec.Meta(min_length=1)]
_Share = Annotated[float, msgspec.Meta(ge=0, le=1)]


class _SeveritySpec(msgspec.Struct, forbid_unknown_fields=True):
    field: _Name
    map: dict[str, str]  # contract value -> common severity


class _ConfidenceSpec(msgspec.Struct, forbid_unknown_fields=True):
    field: _Name | None = None
    divide_by: Annotated[float, msgspec.Meta(gt=0)] | None = None
    map: dict[str, _Share] | None = None
    default: _Share = 0.6


class _ReviewerSpec(msgspec.Struct, forbid_unknown_fields=True):
    top: _Name | None = None
    item: _Name | None = None


class _MergeSpec(msgspec.Struct, forbid_unknown_fields=True):
    severity: _SeveritySpec
    message: Annotated[list[_Name], msgspec.Meta(min_length=1)] | _Name
    confidence: _ConfidenceSpec = msgspec.field(default_factory=_ConfidenceSpec)
    reviewer: _ReviewerSpec = msgspec.field(default_factory=_ReviewerSpec)
    title: _Name | None = None
    category: _Name | None = None
    suggestion: _Name | None = None
    global_ids: bool = False
    summary: _Name | None = None


def merge_semantics(contract: Contract) -> MergeSemantics | None:
    """The contract's ``merge:`` section, or None when it has none."""
    return contract.read(_read)


def _read(contract: Contract, document: specs.Document) -> MergeSemantics | None:
    if not document.data.get("merge"):
        return None
    spec = document.convert(_MergeSpec, ("merge",))
    scale = spec.confidence
    if scale.field is not None and (scale.divide_by is None) == (scale.map is None):
        raise document.fail(("merge", "confidence", "field"), "give exactly one of divide_by (numeric) or map (enum)")
    if spec.reviewer.top and spec.reviewer.item:
        raise document.fail(("merge", "reviewer", "top"), "give one of top or item")
    semantics = MergeSemantics(
        severity_field=spec.severity.field,
        severity_map=spec.severity.map,
        confidence=ConfidenceScale(scale.field, scale.divide_by, scale.map, scale.default),
        message=(spec.message,) if isinstance(spec.message, str) else tuple(spec.message),
        title=spec.title,
        category=spec.category,
        suggestion=spec.suggestion,
        reviewer_top=spec.reviewer.top,
        reviewer_item=spec.reviewer.item,
        global_ids=spec.global_ids,
        summary=spec.summary,
    )
    for version, shape in sorted(contract.shapes.items()):
        _check(semantics, shape, contract.roles.id, contract.schema_files[version])
    return semantics


def _check(semantics: MergeSemantics, shape: OutputShape, id_role: str | None, source: str) -> None:
    """Raise ContractError unless every field the section names exists in ``shape`` with a fitting rule."""
    item = shape.item.properties
    severity = item.get(semantics.severity_field)
    if severity is None or severity.enum is None:
        raise ContractError(source, f"merge.severity.field {semantics.severity_field!r} must be an enum finding field")
    unknown = [v for v in semantics.severity_map.values() if v not in SEVERITY_WEIGHTS]
    if unknown:
        raise ContractError(source, f"merge.severity.map: {unknown} not among {list(SEVERITY_WEIGHTS)}")
    scale = semantics.confidence
    if scale.field is not None:
        rule = item.get(scale.field)
        if rule is None:
            raise ContractError(source, f"merge.confidence.field {scale.field!r} is not a finding property")
        if scale.map is not None:
            missing = [v for v in rule.enum_strings or () if v not in scale.map]
            if rule.enum is None or missing:
                raise ContractError(source, f"merge.confidence.map must map every value of {scale.field!r}")
    for key in ("title", "category", "suggestion", "reviewer_item"):
        name = getattr(semantics, key)
        if name is not None and name not in item:
            raise ContractError(source, f"merge.{key.replace('_', '.')} {name!r} is not a finding property")
    for name in semantics.message:
        if name not in item:
            raise ContractError(source, f"merge.message names {name!r}, which is not a finding property")
    if semantics.summary is not None and semantics.summary not in shape.top.properties:
        raise ContractError(source, f"merge.summary {semantics.summary!r} is not a top-level property")
    if semantics.reviewer_top is not None and semantics.reviewer_top not in shape.top.properties:
        raise ContractError(source, f"merge.reviewer.top {semantics.reviewer_top!r} is not a top-level property")
    if semantics.global_ids and id_role is None:
        raise ContractError(source, "merge.global_ids needs an id field (fields.id)")


def unmapped_severities(semantics: MergeSemantics, shape: OutputShape) -> list[str]:
    """Severity values of ``shape`` the map does not place on the common scale.

    Checked by the tools that rank (``promptops merge``), not when a contract loads: a schema minor that adds
    a severity value must not stop the parser, but ranking it blindly would be wrong.
    """
    rule = shape.item.properties.get(semantics.severity_field)
    values = rule.enum_strings if rule is not None else None
    return [v for v in values or () if v not in semantics.severity_map]


COMMON_SEVERITIES = tuple(SEVERITY_WEIGHTS)
_SEVERITY_FIELDS = ("severity", "risk", "priority", "level", "impact")
_MESSAGE_FIELDS = ("message", "detail", "details", "description", "explanation", "body", "rationale", "title")
_PRIORITIES = {"p0": "critical", "p1": "high", "p2": "medium", "p3": "low", "p4": "info"}
_CONFIDENCE_WORDS = {"very high": 0.9, "high": 0.8, "medium": 0.6, "moderate": 0.6, "low": 0.4, "very low": 0.2}
_CHOOSE = "<critical|high|medium|low|info>"


def propose_section(item: Mapping[str, Any], *, roles: Collection[str] = ()) -> dict[str, Any]:
    """A ``merge:`` section for findings with the JSON Schema properties ``item`` when the schema makes it
    obvious, else {}: a severity-like enum (severity, risk, priority, level, impact) whose every value is a common
    severity (any case) or a priority P0-P4, and a text field for the message (a usual name, else the first
    string field that plays no role). A confidence field on a 0-1, 0-10 or 0-100 scale, or of high/medium/low
    words, is added. ``roles`` are the id, path and line fields, never a message."""
    severity = next(
        (s for s in _severities(item) if s["field"].lower() in _SEVERITY_FIELDS and all(s["map"].values())), None
    )
    message = _message(item, roles)
    if severity is None or message is None:
        return {}
    section: dict[str, Any] = {"severity": severity, "message": message}
    if "title" in item and _is_string(item["title"]) and "title" not in message:
        section["title"] = "title"
    confidence = _confidence(item.get("confidence"))
    if confidence is not None:
        section["confidence"] = confidence
    return section


def section_hint(shape: OutputShape, roles: Collection[str]) -> str:
    """The ``merge:`` section to add, as one line of YAML, with ``<...>`` where the schema leaves the choice to
    the contract's owner (which field grades severity, or where a value falls on the common scale)."""
    item = {name: _as_schema(rule) for name, rule in shape.item.properties.items()}
    section = propose_section(item, roles=roles)
    if not section:
        candidates = _severities(item)
        field, values = (candidates[0]["field"], candidates[0]["map"]) if candidates else ("<an enum field>", {})
        severity = {"field": field, "map": {k: v or _CHOOSE for k, v in values.items()} or {"<value>": _CHOOSE}}
        section = {"severity": severity, "message": _message(item, roles) or ["<a text field>"]}
    return "merge: " + _flow(section)


def _severities(item: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each string-enum field as a severity proposal, severity-like names first; unknown values map to ""."""
    found: list[dict[str, Any]] = []
    for key, rule in item.items():
        enum = rule.get("enum") if isinstance(rule, Mapping) else None
        if not isinstance(enum, list) or not enum or not all(isinstance(v, str) for v in enum):
            continue
        mapped = {v: v.lower() if v.lower() in COMMON_SEVERITIES else _PRIORITIES.get(v.lower(), "") for v in enum}
        found.append({"field": key, "map": mapped})
    return sorted(found, key=lambda proposal: proposal["field"].lower() not in _SEVERITY_FIELDS)


def _message(item: Mapping[str, Any], roles: Collection[str]) -> list[str] | None:
    usual = [k for k in item if k.lower() in _MESSAGE_FIELDS and _is_string(item[k])]
    if usual:
        return usual
    plain = [k for k, r in item.items() if k not in roles and _is_string(r) and not r.get("enum")]
    return plain[:1] or None


def _confidence(rule: Any) -> dict[str, Any] | None:
    if not isinstance(rule, Mapping):
        return None
    if rule.get("type") in ("number", "integer"):
        top = rule.get("maximum", 1)
        return {"field": "confidence", "divide_by": top if top in (1, 10, 100) else 1}
    enum = rule.get("enum")
    if isinstance(enum, list) and enum and all(isinstance(v, str) and v.lower() in _CONFIDENCE_WORDS for v in enum):
        return {"field": "confidence", "map": {v: _CONFIDENCE_WORDS[v.lower()] for v in enum}}
    return None


def _is_string(rule: Any) -> bool:
    return isinstance(rule, Mapping) and rule.get("type") == "string"


def _as_schema(rule: FieldRule) -> dict[str, Any]:
    """The JSON Schema keywords ``propose_section`` reads, from a compiled ``FieldRule``."""
    out: dict[str, Any] = {}
    if len(rule.types - {"null"}) == 1:
        out["type"] = next(iter(rule.types - {"null"}))
    if rule.enum:
        out["enum"] = list(rule.enum)
    if rule.maximum is not None:
        out["maximum"] = rule.maximum
    return out


def _flow(value: Any) -> str:
    """YAML flow style on one line (json.dumps of each scalar keeps odd names and values valid YAML)."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_flow(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    if isinstance(value, str) and _PLAIN.fullmatch(value):
        return value
    return json.dumps(value)


_PLAIN = re.compile(r"[A-Za-z_][\w\-]*")
