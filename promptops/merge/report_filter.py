"""Report filters: which valid findings a report shows, and an account of the ones it holds back.

The code-review-findings contract anchors confidence (0, 25, 50, 75, 100) and says what to report: "Below anchor 75
-- do not report. Exception: P0 findings at anchor 50+ may be reported". A contract states such a rule as data::

    report_filter:
      field: confidence          # a numeric finding property
      rules:                     # the first rule whose `when` matches the finding decides
        - when: {severity: P0}
          min: 50
        - min: 75                # no `when`: matches every finding

A finding is *reported* when its value is at least the deciding rule's ``min`` and *suppressed* otherwise. A
finding no rule matches, or one without the field, is reported (the filter never hides what it cannot judge).
Suppression is not parsing: suppressed findings are valid and are returned with the rule that held each back,
so callers count them (``promptops merge`` lists them under ``suppressed``) instead of losing them.
``report_filter(contract)`` reads and checks the section (ContractError naming the file, line and key).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, NamedTuple

import msgspec

from promptops.core import specs
from promptops.core.contract import Contract
from promptops.core.errors import ContractError
from promptops.core.shape import OutputShape, json_equal
from promptops.parsing.tiers import derive_shape, tiers


class FilterRule(NamedTuple):
    when: Mapping[str, Any]  # finding field -> required value (all must match); empty matches everything
    min: float

    def matches(self, finding: Mapping[str, Any]) -> bool:
        return all(key in finding and json_equal(finding[key], value) for key, value in self.when.items())

    def describe(self, field: str) -> str:
        """``"severity P0: confidence >= 50"`` or ``"confidence >= 75"``."""
        condition = ", ".join(f"{key} {value}" for key, value in self.when.items())
        bound = f"{field} >= {_number(self.min)}"
        return f"{condition}: {bound}" if condition else bound


class Decision(NamedTuple):
    reported: bool
    rule: FilterRule | None  # the deciding rule; None when no rule matched or the field is absent


class Suppressed(NamedTuple):
    position: int  # in the findings given to ``apply``
    finding: Mapping[str, Any]
    reason: str  # e.g. "confidence 50 is below the threshold (confidence >= 75)"


class FilterResult(NamedTuple):
    reported: list[Mapping[str, Any]]
    suppressed: list[Suppressed]


class ReportFilter(NamedTuple):
    field: str
    rules: tuple[FilterRule, ...]

    def decide(self, finding: Mapping[str, Any]) -> Decision:
        value = finding.get(self.field)
        if not isinstance(value, int | float) or isinstance(value, bool):
            return Decision(True, None)
        for rule in self.rules:
            if rule.matches(finding):
                return Decision(value >= rule.min, rule)
        return Decision(True, None)

    def apply(self, findings: Iterable[Mapping[str, Any]]) -> FilterResult:
        reported: list[Mapping[str, Any]] = []
        suppressed: list[Suppressed] = []
        for index, finding in enumerate(findings):
            decision = self.decide(finding)
            if decision.reported:
                reported.append(finding)
                continue
            assert decision.rule is not None
            suppressed.append(Suppressed(index, finding, self.reason(finding, decision.rule)))
        return FilterResult(reported, suppressed)

    def reason(self, finding: Mapping[str, Any], rule: FilterRule) -> str:
        value = finding.get(self.field)
        return f"{self.field} {_number(value)} is below the threshold ({rule.describe(self.field)})"


class _RuleSpec(msgspec.Struct, forbid_unknown_fields=True):
    min: float
    when: dict[str, Any] = {}


class _FilterSpec(msgspec.Struct, forbid_unknown_fields=True):
    field: Annotated[str, msgspec.Meta(min_length=1)]
    rules: Annotated[list[_RuleSpec], msgspec.Meta(min_length=1)]


def report_filter(contract: Contract) -> ReportFilter | None:
    """The contract's ``report_filter:`` section, or None when it has none."""
    return contract.read(_read)


def _read(contract: Contract, document: specs.Document) -> ReportFilter | None:
    if not document.data.get("report_filter"):
        return None
    spec = document.convert(_FilterSpec, ("report_filter",))
    found = ReportFilter(spec.field, tuple(FilterRule(rule.when, rule.min) for rule in spec.rules))
    for version, shape in sorted(contract.shapes.items()):
        source = contract.schema_files[version]
        _check(found, shape, source)
        for tier in tiers(contract).values():  # the filter must still work on every tier's findings
            _check(found, derive_shape(shape, tier), source, f" (tier {tier.name})")
    return found


def _check(report_filter: ReportFilter, shape: OutputShape, source: str, label: str = "") -> None:
    """Raise ContractError unless the filter's fields are finding properties of ``shape`` with fitting values."""
    where = f"report_filter{label}"
    rule = shape.item.properties.get(report_filter.field)
    if rule is None:
        raise ContractError(source, f"{where}.field {report_filter.field!r} is not a finding property")
    if not rule.types or not rule.types <= {"integer", "number", "null"}:
        raise ContractError(source, f"{where}.field {report_filter.field!r} must be a numeric finding property")
    for index, filter_rule in enumerate(report_filter.rules):
        for key, value in filter_rule.when.items():
            condition = shape.item.properties.get(key)
            if condition is None:
                raise ContractError(source, f"{where}.rules[{index}].when names {key!r}, not a finding property")
            if condition.enum is not None and not any(json_equal(value, v) for v in condition.enum):
                allowed = ", ".join(condition.enum_strings or ())
                raise ContractError(source, f"{where}.rules[{index}].when.{key}: {value!r} is not one of {allowed}")


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)
