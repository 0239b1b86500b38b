"""A merged report as a contract document (json), Markdown for people (md) and SARIF 2.1.0 (sarif).

The JSON result is a document of the *target* contract (``promptops merge`` uses agent-output: its
aggregator returns an AgentOutput), written through the target's field roles and ``merge:`` section, so it
validates with that contract's parser. What the target has no field for travels as extra members, which the
target must allow (agent-output does: Zod's default strips unknown keys, it does not reject them):
per finding ``confidence``, ``score``, ``rank`` and ``reported_by`` (provenance); at the top level ``files``
(the grouping), ``suppressed``, ``sources`` and ``merge`` (the settings and counts).
"""

from __future__ import annotations

import re
from typing import Any

from promptops.core import sarif
from promptops.core.contract import Contract
from promptops.core.errors import ContractError
from promptops.core.escape import one_line
from promptops.core.wording import count
from promptops.merge.model import MergedFinding, MergedReport
from promptops.parsing.semantics import SEVERITY_WEIGHTS, MergeSemantics, merge_semantics, section_hint

FORMATS = ("md", "json", "sarif")
FINDING_EXTRAS = ("confidence", "score", "rank", "reported_by")
TOP_EXTRAS = ("files", "suppressed", "sources", "merge")
_SARIF_LEVELS = {"critical": "error", "high": "error", "medium": "warning", "low": "note", "info": "note"}


def summary(report: MergedReport) -> str:
    """One paragraph: counts first, then the top finding."""
    reviewers = len({s.reviewer for s in report.sources})
    parts = [
        f"{count(len(report.findings), 'finding')} from {count(len(report.sources), 'reviewer output')} "
        f"({count(reviewers, 'reviewer')}): {count(report.duplicates, 'duplicate')} merged, "
        f"{len(report.suppressed):,} suppressed by report filters, {count(len(report.rejected), 'output')} rejected."
    ]
    if report.findings:
        top = report.findings[0]
        parts.append(f"Most important: {_inline(top.title)} ({top.severity}{_place(top)}).")
    return " ".join(parts)


def to_result(report: MergedReport, target: Contract) -> dict[str, Any]:
    """The report as a document of ``target`` (checked: every required field is written, extras allowed)."""
    semantics = _writable(target)
    roles = target.roles
    severities = _severity_values(semantics)
    findings = []
    for merged in report.findings:
        item: dict[str, Any] = {}
        values: list[tuple[str | None, Any]] = [
            (roles.id, merged.id),
            (semantics.title, merged.title),
            (semantics.severity_field, severities[merged.severity]),
            (semantics.category, merged.category),
            (roles.path, merged.file),
            (roles.line, merged.line),
            (semantics.message[0], merged.message or merged.title),
            (semantics.suggestion, merged.suggestion),
        ]
        for name, value in values:
            if name is not None and value is not None and name not in item:
                item[name] = value
        item["confidence"] = round(merged.confidence, 4)
        item["score"] = round(merged.score, 4)
        item["rank"] = merged.rank
        item["reported_by"] = [s.provenance() for s in merged.sources]
        findings.append(item)
    document: dict[str, Any] = {target.items: findings}
    if semantics.summary is not None:
        document[semantics.summary] = summary(report)
    document["files"] = [{"file": file, "findings": [f.id for f in group]} for file, group in report.by_file()]
    document["suppressed"] = [s.to_dict() for s in report.suppressed]
    document["sources"] = [s.to_dict() for s in report.sources]
    document["merge"] = {
        "contract": target.name,
        "similarity_threshold": report.options.similarity,
        "report_filters": report.options.report_filters,
        "findings_in": report.findings_in,
        "duplicates_merged": report.duplicates,
        "suppressed": len(report.suppressed),
        "rejected_outputs": len(report.rejected),
    }
    return document


def to_markdown(report: MergedReport) -> str:
    lines = ["# Merged review", "", summary(report), ""]
    for file, group in report.by_file():
        lines += [f"## {_inline(file) if file else '(no file: the change as a whole)'}", ""]
        for merged in group:
            where = f" (line {merged.line})" if merged.line is not None else ""
            lines += [f"### {merged.rank}. [{merged.severity}] {_inline(merged.title)}{where}", ""]
            lines.append(
                f"Score {merged.score:.2f} = {merged.severity} {SEVERITY_WEIGHTS[merged.severity]:.1f} x confidence "
                f"{merged.confidence:.2f}. Reported by {_reporters(merged)}."
            )
            if merged.message and merged.message != merged.title:
                lines += ["", _inline(merged.message)]
            if merged.suggestion:
                lines += ["", "Suggested fix:", "", _fenced(merged.suggestion)]
            lines.append("")
    if report.suppressed:
        lines += ["## Suppressed by report filters", ""]
        for held in report.suppressed:
            f = held.finding
            file = _inline(f.file) if f.file else ""
            where = f" ({file}:{f.line})" if f.file and f.line else f" ({file})" if f.file else ""
            lines.append(f"- {_inline(f.title)}{where}, {_inline(f.reviewer)} ({f.contract}): {_inline(held.reason)}")
        lines.append("")
    lines += ["## Reviewer outputs", "", "| output | contract | reviewer | outcome | kept | suppressed |"]
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for source in report.sources:
        outcome = source.outcome
        verdict = outcome.outcome if outcome.accepted else f"rejected: {outcome.reason}"
        contract = source.contract + (f" ({source.tier} tier)" if source.tier else "")
        lines.append(
            f"| {_cell(source.source)} | {contract} | {_cell(source.reviewer)} | {verdict} | "
            f"{outcome.findings_kept} of {outcome.findings_seen} | {source.findings_suppressed} |"
        )
    return "\n".join(lines) + "\n"


def to_sarif(report: MergedReport, tool_version: str) -> dict[str, Any]:
    """One SARIF result per merged finding, one rule per category, in rank order.

    A finding without a line points at line 1 of its file (GitHub code scanning needs a region); one without
    a file has no location (valid SARIF; code scanning does not display it).
    """
    categories = list(dict.fromkeys(f.category for f in report.findings))
    index = {category: i for i, category in enumerate(categories)}
    rules = [
        sarif.rule(
            rule_id=category,
            name=re.sub(r"[^A-Za-z0-9]+", "-", category).strip("-") or "finding",
            summary=f"Merged reviewer finding: {category}",
            description=f"Findings that reviewer agents reported under {category}, merged by promptops.",
            help_text="Deduplicated and ranked by severity x confidence; see the result's properties for who "
            "reported it.",
            level="warning",
            tags=["review", "merged"],
        )
        for category in categories
    ]
    fingerprints = sarif.Fingerprints()
    results = []
    for merged in report.findings:
        locations = [sarif.location(merged.file, sarif.region(merged.line or 1))] if merged.file else []
        message = merged.title if merged.message in ("", merged.title) else f"{merged.title}: {merged.message}"
        results.append(
            sarif.result(
                rule_id=merged.category,
                rule_index=index[merged.category],
                level=_SARIF_LEVELS[merged.severity],
                message=message,
                locations=locations,
                fingerprint=fingerprints(merged.category, merged.file or "", merged.title),
                properties={
                    "id": merged.id,
                    "rank": merged.rank,
                    "severity": merged.severity,
                    "confidence": round(merged.confidence, 4),
                    "score": round(merged.score, 4),
                    "reportedBy": [f"{s.reviewer} ({s.contract})" for s in merged.sources],
                },
            )
        )
    return sarif.log(tool_version=tool_version, rules=rules, results=results, automation_id="promptops-merge/")


def _writable(target: Contract) -> MergeSemantics:
    source = f"{target.directory}/contract.yaml"
    semantics = merge_semantics(target)
    if semantics is None:
        raise ContractError(
            source,
            "no merge section: merge cannot write its result in this contract; add to it "
            + section_hint(target.shape(target.default_policy.schema_floor), target.roles.names),
        )
    shape = target.shape(target.default_policy.schema_floor)
    roles = target.roles
    written = {roles.id, semantics.title, semantics.severity_field, semantics.category, roles.path, roles.line}
    written |= {semantics.message[0], semantics.suggestion}
    missing = [name for name in shape.item.required if name not in written]
    missing += [name for name in shape.top.required if name not in (target.items, semantics.summary)]
    if missing:
        raise ContractError(source, f"merge cannot fill required field(s) {missing} of {target.name}")
    clash = [n for n in FINDING_EXTRAS if n in shape.item.properties] + [
        n for n in TOP_EXTRAS if n in shape.top.properties
    ]
    if not (shape.item.additional and shape.top.additional) or clash:
        raise ContractError(source, f"{target.name} must accept merge's extra members {FINDING_EXTRAS + TOP_EXTRAS}")
    return semantics


def _severity_values(semantics: MergeSemantics) -> dict[str, Any]:
    """Common severity -> the target's value; a level the target lacks takes its nearest (ties: the higher)."""
    inverse: dict[str, str] = {}
    for value, common in semantics.severity_map.items():
        inverse.setdefault(common, value)
    out: dict[str, Any] = {}
    for common, weight in SEVERITY_WEIGHTS.items():
        nearest = min(inverse, key=lambda c: (abs(SEVERITY_WEIGHTS[c] - weight), -SEVERITY_WEIGHTS[c]))
        out[common] = inverse[nearest]
    return out


def _reporters(merged: MergedFinding) -> str:
    shown = []
    for s in merged.sources:
        value = f"{s.severity_value}" + (f", confidence {s.confidence_value}" if s.confidence_value is not None else "")
        shown.append(f"{_inline(s.reviewer)} ({s.contract}: {value})")
    return "; ".join(shown)


def _place(merged: MergedFinding) -> str:
    if merged.file is None:
        return ""
    file = _inline(merged.file)
    return f", {file}:{merged.line}" if merged.line is not None else f", {file}"


def _inline(text: str) -> str:
    """Model text on one Markdown line: whitespace folded, so it cannot open headings or lists of its own, and
    what is left unprintable escaped (``promptops.core.escape``)."""
    return one_line(" ".join(text.split()))


def _cell(text: str) -> str:
    return _inline(text).replace("|", "\\|")


def _fenced(text: str) -> str:
    """A code fence longer than any backtick run inside, so the text cannot close it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text.rstrip(chr(10))}\n{fence}"
