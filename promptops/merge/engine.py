"""The synthesizer (reviewer-finding) and aggregator (agent-output): validate, filter, dedupe, rank, group.

1. Each reviewer output is parsed with its own contract (or tier) and changed files; a rejected output
   contributes no findings and is reported as such.
2. Report filters (e.g. code-review-findings') hold back findings below their threshold; each is listed with its reason.
3. Every kept finding is put on the common scales of its contract's ``merge:`` section
   (``promptops.parsing.semantics``): a severity weight and a confidence in [0, 1].
4. Duplicates are linked and merged (connected components, so the result does not depend on input order):
   - *same id*: both contracts declare ``global_ids`` (reviewer-finding: the id hashes file+line+description) and the
     ids are equal, and so are the files; equal ids on different files are a collision, not one issue;
   - *same place, near-equal text*: same normalized file and same line (both absent counts as the same,
     so two file-wide findings on one file can merge) and a text similarity at or above the threshold
     (``promptops.merge.similarity``).
5. Each merged finding is led by its best report (highest severity x confidence, then severity, then input
   order) and findings are ranked by that score, then severity, then how many reviewers reported them,
   then file, line and id, so every ordering is total and deterministic.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from promptops.core.contract import Contract
from promptops.core.errors import ContractError
from promptops.merge import similarity
from promptops.merge.model import (
    MergedFinding,
    MergedReport,
    MergeOptions,
    ReviewerOutput,
    SourceFinding,
    SourceReport,
    SuppressedFinding,
)
from promptops.merge.report_filter import report_filter
from promptops.parsing import ChangedFiles, Parser, normalize_repo_path
from promptops.parsing.semantics import MergeSemantics, merge_semantics, section_hint, unmapped_severities

_TITLE_LIMIT = 80
_FIRST_CLAUSE = re.compile(r"(?<=[.!?])\s|:\s")


def merge(
    outputs: Sequence[ReviewerOutput],
    changed_files: ChangedFiles | Iterable[str],
    options: MergeOptions | None = None,
) -> MergedReport:
    """Merge reviewer outputs for one review target into a ranked, deduplicated report.

    Raises ContractError when a contract has no ``merge:`` section or its severity map misses a value.
    Never raises for anything a model wrote.
    """
    options = options or MergeOptions()
    changed = changed_files if isinstance(changed_files, ChangedFiles) else ChangedFiles(changed_files)
    parsers: dict[tuple[str, str | None, Any], Parser] = {}
    reports: list[SourceReport] = []
    kept: list[SourceFinding] = []
    suppressed: list[SuppressedFinding] = []
    for output in outputs:
        semantics = _semantics(output.contract)
        policy = output.policy or output.contract.default_policy
        key = (output.contract.name, output.contract.tier_name, policy)
        if key not in parsers:
            parsers[key] = Parser(output.contract, policy)
        outcome = parsers[key].parse(
            output.raw, changed, schema_version=str(policy.schema_floor), prompt_version=str(policy.prompt_version)
        )
        result = outcome.result if outcome.accepted else None
        reviewer = _output_reviewer(output, semantics, result)
        held = 0
        screen = report_filter(output.contract) if options.report_filters else None
        for finding in (result or {}).get(output.contract.items, []):
            source = _source_finding(output, semantics, reviewer, finding, len(kept) + len(suppressed))
            decision = screen.decide(finding) if screen else None
            if decision is not None and not decision.reported:
                assert screen is not None and decision.rule is not None
                suppressed.append(SuppressedFinding(source, screen.reason(finding, decision.rule)))
                held += 1
            else:
                kept.append(source)
        tier = output.contract.tier_name
        reported = outcome.findings_kept - held
        reports.append(SourceReport(output.source, output.contract.name, tier, reviewer, outcome, reported, held))
    merged = _rank(_dedupe(kept, options.similarity))
    return MergedReport(tuple(merged), tuple(reports), tuple(suppressed), options)


def _semantics(contract: Contract) -> MergeSemantics:
    source = f"{contract.directory}/contract.yaml"
    semantics = merge_semantics(contract)
    if semantics is None:
        raise ContractError(
            source,
            "no merge section: promptops merge cannot put its findings on a common scale; add to it "
            + section_hint(contract.shape(contract.default_policy.schema_floor), contract.roles.names),
        )
    for version, shape in contract.shapes.items():
        missing = unmapped_severities(semantics, shape)
        if missing:
            raise ContractError(source, f"merge.severity.map does not map {missing} (schema {version})")
    return semantics


def _output_reviewer(output: ReviewerOutput, semantics: MergeSemantics, result: Mapping[str, Any] | None) -> str:
    named = result.get(semantics.reviewer_top) if result is not None and semantics.reviewer_top else None
    if isinstance(named, str) and named.strip():
        return named
    if result is not None and semantics.reviewer_item:  # the reviewers its findings name
        items = result.get(output.contract.items, [])
        names = dict.fromkeys(n for n in (semantics.text(f, semantics.reviewer_item) for f in items) if n)
        if names:
            return ", ".join(names)
    return output.label or PurePosixPath(output.source).stem or output.source


def _source_finding(
    output: ReviewerOutput, semantics: MergeSemantics, reviewer: str, finding: Mapping[str, Any], order: int
) -> SourceFinding:
    contract = output.contract
    roles = contract.roles
    item_reviewer = semantics.text(finding, semantics.reviewer_item)
    message = semantics.message_of(finding) or ""
    title = semantics.text(finding, semantics.title) or _title_from(message)
    raw_file = finding.get(roles.path) if roles.path else None
    file = (normalize_repo_path(raw_file) or raw_file) if isinstance(raw_file, str) else None
    line = finding.get(roles.line) if roles.line else None
    finding_id = finding.get(roles.id) if roles.id else None
    scale = semantics.confidence
    return SourceFinding(
        source=output.source,
        contract=contract.name,
        tier=contract.tier_name,
        reviewer=item_reviewer or reviewer,
        order=order,
        finding=finding,
        id=finding_id if isinstance(finding_id, str) and finding_id else None,
        global_id=semantics.global_ids,
        file=file,
        line=line if isinstance(line, int) else None,
        severity=semantics.severity(finding),
        severity_value=finding.get(semantics.severity_field),
        confidence=scale.normalize(finding),
        confidence_value=finding.get(scale.field) if scale.field else None,
        title=title,
        message=message,
        category=semantics.text(finding, semantics.category),
        suggestion=semantics.text(finding, semantics.suggestion),
        texts=tuple(similarity.tokens(t) for t in dict.fromkeys((title, message)) if t),
    )


def _title_from(message: str) -> str:
    """A title for contracts without one: the message's first clause, cut at a word near 80 characters."""
    first = _FIRST_CLAUSE.split(message.strip(), maxsplit=1)[0].rstrip(".")
    if len(first) <= _TITLE_LIMIT:
        return first
    cut = first[: _TITLE_LIMIT - 3].rsplit(" ", 1)[0]
    return f"{cut}..."


def _dedupe(findings: list[SourceFinding], threshold: float) -> list[list[SourceFinding]]:
    parent = list(range(len(findings)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def link(i: int, j: int) -> None:
        a, b = root(i), root(j)
        if a != b:
            parent[max(a, b)] = min(a, b)

    by_id: dict[tuple[str, str | None], int] = {}
    by_place: dict[tuple[str | None, int | None], list[int]] = {}
    for i, finding in enumerate(findings):
        if finding.global_id and finding.id is not None:
            first = by_id.setdefault((finding.id, finding.file), i)
            if first != i:
                link(first, i)
        place = by_place.setdefault((finding.file, finding.line), [])
        for j in place:
            if similarity.similarity(findings[j].texts, finding.texts) >= threshold:
                link(j, i)
        place.append(i)
    groups: dict[int, list[SourceFinding]] = {}
    for i, finding in enumerate(findings):
        groups.setdefault(root(i), []).append(finding)
    return list(groups.values())


def _lead_key(finding: SourceFinding) -> tuple[float, float, int]:
    return (-round(finding.score, 9), -finding.weight, finding.order)


def _rank(groups: list[list[SourceFinding]]) -> list[MergedFinding]:
    def order(group: list[SourceFinding]) -> tuple[Any, ...]:
        lead = group[0]
        reviewers = len({s.reviewer for s in group})
        return (*_lead_key(lead)[:2], -reviewers, lead.file is None, lead.file or "", lead.line or 0, lead.order)

    ranked = sorted((sorted(group, key=_lead_key) for group in groups), key=order)
    return [
        MergedFinding(id_, rank, tuple(group))
        for rank, (group, id_) in enumerate(zip(ranked, _ids(ranked), strict=True), start=1)
    ]


def _ids(groups: list[list[SourceFinding]]) -> list[str]:
    """A stable id per merged finding, in rank order: its lead's id when that names the issue across
    reviewers, else a short hash of the lead's file, line and title; a repeat gets a -2, -3... suffix."""
    out: list[str] = []
    used: dict[str, int] = {}
    for group in groups:
        lead = group[0]
        if lead.global_id and lead.id is not None:
            base = lead.id
        else:
            digest = hashlib.sha256(f"{lead.file or ''}\0{lead.line or ''}\0{lead.title}".encode()).hexdigest()
            base = f"M-{digest[:10]}"
        used[base] = used.get(base, 0) + 1
        out.append(base if used[base] == 1 else f"{base}-{used[base]}")
    return out
