"""The values of a merge: what goes in (reviewer outputs, options) and what comes out (a ranked report)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from promptops.core.contract import Contract
from promptops.core.policy import ParserPolicy
from promptops.merge.similarity import DEFAULT_THRESHOLD
from promptops.parsing import ParseOutcome
from promptops.parsing.semantics import SEVERITY_WEIGHTS

_T = TypeVar("_T")


@dataclass(frozen=True)
class ReviewerOutput:
    """One reviewer's raw answer and how to read it.

    ``contract`` may be a tier of a contract (``promptops.parsing.tiers.tier(contract, "merge")``). ``policy``
    defaults to the contract's; its pins are also the request's versions for contracts whose output declares none.
    ``label`` names the reviewer when neither the output nor its findings do (agent-output has no reviewer
    field; the CLI uses the file name).
    """

    contract: Contract
    raw: str | bytes
    source: str  # repo-relative path or another label: shown in provenance
    label: str | None = None
    policy: ParserPolicy | None = None


@dataclass(frozen=True)
class MergeOptions:
    similarity: float = DEFAULT_THRESHOLD  # near-duplicate threshold (promptops.merge.similarity)
    report_filters: bool = True  # apply each contract's report filter (suppressed findings are listed)


@dataclass(frozen=True)
class SourceFinding:
    """One validated finding as one reviewer reported it, with its values on the common scales."""

    source: str
    contract: str
    tier: str | None
    reviewer: str
    order: int  # position among all findings of the merge (input order), the last tie-breaker
    finding: Mapping[str, Any] = field(repr=False)
    id: str | None
    global_id: bool  # the id names the issue across reviewers (contract merge.global_ids)
    file: str | None  # normalized repository path
    line: int | None
    severity: str  # common severity
    severity_value: Any  # as the reviewer wrote it
    confidence: float  # in [0, 1]
    confidence_value: Any  # as the reviewer wrote it (None when the contract has no confidence)
    title: str
    message: str
    category: str | None
    suggestion: str | None
    texts: tuple[frozenset[str], ...] = field(repr=False)  # title and message tokens, for near-duplicates

    @property
    def weight(self) -> float:
        return SEVERITY_WEIGHTS[self.severity]

    @property
    def score(self) -> float:
        """Severity x confidence, both normalized (reviewer-finding: "Ranks by severity x confidence product")."""
        return self.weight * self.confidence

    def provenance(self) -> dict[str, Any]:
        out: dict[str, Any] = {"reviewer": self.reviewer, "contract": self.contract}
        if self.tier is not None:
            out["tier"] = self.tier
        out["output"] = self.source
        if self.id is not None:
            out["id"] = self.id
        out["title"] = self.title
        out["severity"] = self.severity_value
        if self.confidence_value is not None:
            out["confidence"] = self.confidence_value
        out["score"] = round(self.score, 4)
        return out


class _FromLead(Generic[_T]):
    """A read-only attribute of a merged finding that is its lead's attribute of the same name."""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, finding: MergedFinding | None, owner: type | None = None) -> _T:
        if finding is None:  # read on the class (introspection): the descriptor, as a property gives
            return cast(_T, self)
        return cast(_T, getattr(finding.lead, self._name))


@dataclass(frozen=True)
class MergedFinding:
    """One issue after deduplication.

    It is presented as its most important report, the *lead* (highest severity x confidence): severity,
    confidence, score, place and wording are the lead's, so the numbers shown always multiply out. Every
    report stays in ``sources`` (provenance), and a suggestion comes from the first report that has one.
    """

    id: str
    rank: int  # 1 = most important
    sources: tuple[SourceFinding, ...]  # best first

    @property
    def lead(self) -> SourceFinding:
        return self.sources[0]

    score = _FromLead[float]()
    severity = _FromLead[str]()
    confidence = _FromLead[float]()
    file = _FromLead[str | None]()
    line = _FromLead[int | None]()
    title = _FromLead[str]()
    message = _FromLead[str]()

    @property
    def category(self) -> str:
        return self.lead.category or self.lead.reviewer

    @property
    def suggestion(self) -> str | None:
        return next((s.suggestion for s in self.sources if s.suggestion), None)

    @property
    def reviewers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(s.reviewer for s in self.sources))


@dataclass(frozen=True)
class SourceReport:
    """What happened to one reviewer output: its parse outcome and how many findings the report shows."""

    source: str
    contract: str
    tier: str | None
    reviewer: str
    outcome: ParseOutcome = field(repr=False)
    findings_reported: int = 0
    findings_suppressed: int = 0

    def to_dict(self) -> dict[str, Any]:
        outcome = self.outcome
        return {
            "output": self.source,
            "contract": self.contract,
            "tier": self.tier,
            "reviewer": self.reviewer,
            "outcome": outcome.outcome,
            "reason": None if outcome.reason is None else str(outcome.reason),
            "findings_seen": outcome.findings_seen,
            "findings_kept": outcome.findings_kept,
            "findings_suppressed": self.findings_suppressed,
            # what was lost, and why (coercions and notes are in promptops validate's output)
            "diagnostics": [d.to_dict() for d in outcome.diagnostics if d.level in ("error", "warning")],
        }


@dataclass(frozen=True)
class SuppressedFinding:
    finding: SourceFinding
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.finding.provenance(),
            "file": self.finding.file,
            "line": self.finding.line,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class MergedReport:
    findings: tuple[MergedFinding, ...]  # in rank order
    sources: tuple[SourceReport, ...]  # in input order
    suppressed: tuple[SuppressedFinding, ...]
    options: MergeOptions

    @property
    def findings_in(self) -> int:
        """Source findings that entered deduplication (after report filters)."""
        return sum(len(f.sources) for f in self.findings)

    @property
    def duplicates(self) -> int:
        return self.findings_in - len(self.findings)

    @property
    def rejected(self) -> tuple[SourceReport, ...]:
        return tuple(s for s in self.sources if not s.outcome.accepted)

    @property
    def has_warnings(self) -> bool:
        return any(s.outcome.has_warnings for s in self.sources)

    def by_file(self) -> list[tuple[str | None, list[MergedFinding]]]:
        """Findings grouped by file for presentation: files in order of their best finding, each in rank
        order; findings without a file come last."""
        groups: dict[str | None, list[MergedFinding]] = {}
        for finding in self.findings:
            groups.setdefault(finding.file, []).append(finding)
        return sorted(groups.items(), key=lambda item: (item[0] is None, item[1][0].rank))
