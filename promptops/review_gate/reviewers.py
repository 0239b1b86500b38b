"""Reviewer outputs beside the consensus files (issue 9, part 4): validated, merged, turned into signals.

A file ``reviewer-<stage_slug>_<contract>[.<tier>]_<name>.json`` in a spec's consensus directory holds one
reviewer's raw answer under a promptops contract. For the checkpoint under review, every such file is
validated with its contract and all of them are merged (promptops.merge: dedupe, rank by severity x
confidence). A merged finding at the highest common severity (``critical``, which P0 maps to) with confidence
at or above ``block_confidence`` is a blocking signal; every other merged finding, and every output the
contract rejected, is advisory. The signals carry the reviewer's role (inferred from its name like a
consensus ``agent``) and the repo-relative output file, so they go through the gate's usual resolution.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from promptops.contract import Contract
from promptops.merge import MergedFinding, ReviewerOutput, merge
from promptops.parsing import ChangedFiles
from promptops.review_gate.errors import ReviewGateError
from promptops.review_gate.providers import EvidenceContext, ProviderReport
from promptops.review_gate.signals import Origin, ReviewSignal, Severity, SignalKind, infer_role

_FILE = re.compile(
    r"reviewer-(?P<slug>[a-z]+)_(?P<contract>[a-z0-9-]+)(?:\.(?P<tier>[a-z0-9-]+))?_(?P<name>.+)\.json\Z"
)
HIGHEST_SEVERITY = "critical"
DEFAULT_BLOCK_CONFIDENCE = 0.75


@dataclass(frozen=True)
class ReviewerOutputs:
    """The signal provider. ``contracts`` are the promptops contracts by name (from the promptops project);
    ``changed_files`` are the review target's paths (None: outputs are found but not evaluated, and one
    advisory signal says why)."""

    contracts: Mapping[str, Contract]
    changed_files: ChangedFiles | None
    block_confidence: float = DEFAULT_BLOCK_CONFIDENCE

    def __call__(self, context: EvidenceContext) -> ProviderReport:
        directory = context.path(context.consensus_dir)
        if not directory.is_dir():
            return ProviderReport()
        slug = context.checkpoint.stage_slug
        try:
            names = sorted(entry.name for entry in directory.iterdir() if entry.is_file())
        except OSError as problem:
            raise ReviewGateError(f"{context.consensus_dir}: cannot list: {problem.strerror}") from None
        found = [(name, match) for name in names if (match := _FILE.match(name)) and match["slug"] == slug]
        if not found:
            return ProviderReport()
        artifacts = tuple(f"{context.consensus_dir}/{name}" for name, _ in found)
        if self.changed_files is None:
            message = (
                f"{len(found)} reviewer output(s) not evaluated: no changed files were given "
                "(pass --git-diff BASE...HEAD, --changed-file or --changed-files-from)"
            )
            return ProviderReport((_system(message, artifacts[0]),), artifacts)
        signals: list[ReviewSignal] = []
        outputs: list[ReviewerOutput] = []
        for (_, match), artifact in zip(found, artifacts, strict=True):
            contract = self.contracts.get(match["contract"])
            if contract is None:
                known = ", ".join(sorted(self.contracts)) or "none"
                signals.append(
                    _system(f"{artifact}: unknown contract {match['contract']!r} (known: {known})", artifact)
                )
                continue
            if match["tier"] is not None:
                if match["tier"] not in contract.tiers:
                    signals.append(
                        _system(f"{artifact}: contract {contract.name} has no tier {match['tier']!r}", artifact)
                    )
                    continue
                contract = contract.tier(match["tier"])
            try:
                raw = context.path(artifact).read_bytes()
            except OSError as problem:
                raise ReviewGateError(f"{artifact}: cannot read: {problem.strerror}") from None
            outputs.append(ReviewerOutput(contract=contract, raw=raw, source=artifact, label=match["name"]))
        report = merge(outputs, self.changed_files)
        for source in report.rejected:
            reason = source.outcome.reason
            signals.append(
                _system(f"{source.source}: rejected by contract {source.contract} ({reason})", source.source)
            )
        signals.extend(self._finding_signal(finding) for finding in report.findings)
        return ProviderReport(tuple(signals), artifacts)

    def _finding_signal(self, finding: MergedFinding) -> ReviewSignal:
        lead = finding.lead
        blocking = finding.severity == HIGHEST_SEVERITY and finding.confidence >= self.block_confidence
        where = f"{finding.file}:{finding.line}" if finding.line is not None else finding.file or "(whole change)"
        reviewers = ", ".join(finding.reviewers)
        message = (
            f"{finding.severity} (confidence {finding.confidence:.2f}) at {where}: {finding.title} "
            f"[reported by {reviewers}]"
        )
        return ReviewSignal(
            kind=SignalKind.OTHER,
            severity=Severity.BLOCK if blocking else Severity.ADVISORY,
            origin=Origin.ROLE,
            role=infer_role(lead.reviewer),
            agent=lead.reviewer,
            message=message,
            evidence_path=lead.source,
        )


def _system(message: str, evidence_path: str) -> ReviewSignal:
    return ReviewSignal(
        kind=SignalKind.OTHER,
        severity=Severity.ADVISORY,
        origin=Origin.SYSTEM,
        message=message,
        evidence_path=evidence_path,
    )
