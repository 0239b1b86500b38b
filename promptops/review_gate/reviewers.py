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
import stat
from collections.abc import Mapping
from dataclasses import dataclass, replace

from promptops.core.contract import Contract
from promptops.merge import MergedFinding, ReviewerOutput, merge
from promptops.parsing import ChangedFiles, tiers
from promptops.review_gate.errors import ReviewGateError
from promptops.review_gate.losses import lost_signals
from promptops.review_gate.providers import EvidenceContext, ProviderReport
from promptops.review_gate.signals import Origin, ReviewSignal, Severity, SignalKind, infer_role

# reviewer-<slug>_<contract>[.<tier>]_<name>.json; a contract's name may hold '.' (see _contract_and_tier)
_FILE = re.compile(r"reviewer-(?P<slug>[a-z]+)_(?P<target>[a-z0-9.-]+)_(?P<name>.+)\.json\Z")
HIGHEST_SEVERITY = "critical"
DEFAULT_BLOCK_CONFIDENCE = 0.75


@dataclass(frozen=True)
class ReviewerOutputs:
    """The signal provider. ``contracts`` are the promptops contracts by name (from the promptops project);
    ``changed_files`` are the review target's paths (None: outputs are found but not evaluated, and one
    signal says why). ``strict_artifacts``: an output that cannot be evaluated blocks instead of warning."""

    contracts: Mapping[str, Contract]
    changed_files: ChangedFiles | None
    block_confidence: float = DEFAULT_BLOCK_CONFIDENCE
    strict_artifacts: bool = False

    def __call__(self, context: EvidenceContext) -> ProviderReport:
        directory = context.path(context.consensus_dir)
        if not directory.is_dir():
            return ProviderReport()
        slug = context.checkpoint.stage_slug
        try:
            # every entry: one named like an output that is not a regular file is refused when read, not skipped
            names = sorted(entry.name for entry in directory.iterdir())
        except OSError as problem:
            raise ReviewGateError(f"{context.consensus_dir}: cannot list: {problem.strerror}") from None
        found = [(name, match) for name in names if (match := _FILE.match(name)) and match["slug"] == slug]
        if not found:
            return ProviderReport()
        artifacts = tuple(f"{context.consensus_dir}/{name}" for name, _ in found)
        if self.changed_files is None:
            outputs_text = "1 reviewer output" if len(found) == 1 else f"{len(found)} reviewer outputs"
            message = (
                f"{outputs_text} not evaluated: no changed files were given "
                "(pass --git-diff BASE...HEAD, --changed-file or --changed-files-from)"
            )
            return ProviderReport((self._unevaluated(message, artifacts[0]),), artifacts)
        signals: list[ReviewSignal] = []
        outputs: list[ReviewerOutput] = []
        for (_, match), artifact in zip(found, artifacts, strict=True):
            name, tier = self._contract_and_tier(match["target"])
            contract = self.contracts.get(name)
            if contract is None:
                known = ", ".join(sorted(self.contracts)) or "none"
                signals.append(self._unevaluated(f"{artifact}: unknown contract {name!r} (known: {known})", artifact))
                continue
            if tier is not None:
                if tier not in tiers.tiers(contract):
                    signals.append(
                        self._unevaluated(f"{artifact}: contract {contract.name} has no tier {tier!r}", artifact)
                    )
                    continue
                contract = tiers.tier(contract, tier)
            raw = _read_output(context, artifact, contract.default_policy.limits.max_bytes)
            outputs.append(ReviewerOutput(contract=contract, raw=raw, source=artifact, label=match["name"]))
        report = merge(outputs, self.changed_files)
        for output, source in zip(outputs, report.sources, strict=True):
            signals.extend(lost_signals(source, output.contract, output.raw))
        signals.extend(self._finding_signal(finding) for finding in report.findings)
        return ProviderReport(tuple(signals), artifacts)

    def _contract_and_tier(self, target: str) -> tuple[str, str | None]:
        """``acme.security`` names that contract when it exists, else contract ``acme`` and its tier
        ``security``; the contract's name wins, and a tier never holds a '.'."""
        if target in self.contracts or "." not in target:
            return target, None
        name, _, tier = target.rpartition(".")
        return name, tier

    def _unevaluated(self, message: str, evidence_path: str) -> ReviewSignal:
        """An output that cannot be evaluated: a warning, or a blocking signal under --strict-artifacts."""
        signal = _system(message, evidence_path)
        return replace(signal, severity=Severity.BLOCK) if self.strict_artifacts else signal

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


def _read_output(context: EvidenceContext, artifact: str, max_bytes: int) -> bytes:
    """A reviewer output's bytes: regular files only, at most one byte past the contract's size limit (the
    parser rejects it as too large), so a FIFO or ``/dev/zero`` behind the name cannot stall the gate."""
    path = context.path(artifact)
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise ReviewGateError(f"{artifact}: not a regular file")
        with path.open("rb") as handle:
            return handle.read(max_bytes + 1)
    except OSError as problem:
        raise ReviewGateError(f"{artifact}: cannot read: {problem.strerror}") from None


def _system(message: str, evidence_path: str) -> ReviewSignal:
    return ReviewSignal(
        kind=SignalKind.OTHER,
        severity=Severity.ADVISORY,
        origin=Origin.SYSTEM,
        message=message,
        evidence_path=evidence_path,
    )
