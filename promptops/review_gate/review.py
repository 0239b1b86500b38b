"""The review itself: one request in, one result out.

``review`` reads evidence files and nothing else: no environment, no printing, no exiting. Evidence problems
become verdicts and signals; only an infrastructure failure raises (:class:`ReviewGateError`, exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from promptops.core.outcomes import Verdict
from promptops.core.wording import count
from promptops.review_gate.consensus import ConsensusParseError, ConsensusRecord, holds_conflict, parse_consensus
from promptops.review_gate.evidence import (
    ConsensusEvidence,
    check_repo_root,
    find_consensus,
    read_evidence,
    spec_packet_ref,
)
from promptops.review_gate.policy import ReviewPolicy
from promptops.review_gate.providers import EvidenceContext, SignalProvider
from promptops.review_gate.result import EvidenceRefs, ReviewResult
from promptops.review_gate.signals import ReviewSignal, consensus_signals, parse_failure_signal
from promptops.review_gate.stages import Stage, resolve_stage
from promptops.review_gate.telemetry import read_telemetry
from promptops.review_gate.topology import check_spec_id
from promptops.review_gate.verdict import Reason, ReasonCode, display_verdict, resolve


@dataclass(frozen=True)
class ReviewRequest:
    """Review ``stage`` of ``spec_id`` in the repository at ``repo_root`` under ``policy``.

    ``signal_providers`` is the extension point for more evidence (:mod:`promptops.review_gate.providers`).
    """

    repo_root: Path
    spec_id: str
    stage: Stage
    policy: ReviewPolicy = field(default_factory=ReviewPolicy)
    signal_providers: tuple[SignalProvider, ...] = ()


def review(request: ReviewRequest) -> ReviewResult:
    spec_id = check_spec_id(request.spec_id)
    root = request.repo_root
    check_repo_root(root)
    policy = request.policy
    stage = resolve_stage(request.stage)
    if stage.checkpoint is None:
        reason = Reason(
            ReasonCode.NOT_APPLICABLE_TO_STAGE, f"{request.stage.value} has no review checkpoint: {stage.note}."
        )
        return ReviewResult(
            spec_id=spec_id,
            requested_stage=request.stage,
            evaluated_checkpoint=None,
            stage_note=stage.note,
            verdict=Verdict.NOT_APPLICABLE,
            resolution=None,
            reason=reason,
            artifacts_collected=0,
            signals=(),
            evidence_refs=EvidenceRefs(),
            consensus=None,
            telemetry=None,
            policy=policy,
        )

    topology = policy.topology
    evidence = find_consensus(root, topology.consensus(spec_id), stage.checkpoint.stage_slug)
    signals: list[ReviewSignal] = []
    record: ConsensusRecord | None = None
    if evidence.selected is not None:
        data = read_evidence(root, evidence.selected)
        try:
            record = parse_consensus(data)
        except ConsensusParseError as problem:
            # A file the gate cannot read exactly as written never passes what it might say: it blocks when
            # it may name a conflict, and under --strict-artifacts whatever it holds.
            conflict = holds_conflict(data)
            signal = parse_failure_signal(evidence.selected, str(problem), conflict, policy.strict_artifacts)
            signals.append(signal)
        else:
            signals.extend(consensus_signals(record, evidence.selected))

    context = EvidenceContext(root, spec_id, stage.checkpoint, topology)
    provided: set[str] = set()
    for provider in request.signal_providers:
        report = provider(context)
        signals.extend(report.signals)
        provided.update(report.artifacts)

    telemetry = read_telemetry(root, topology.commands(spec_id))
    refs = EvidenceRefs(
        spec_packet=spec_packet_ref(root, topology.spec_packet(spec_id)),
        consensus_dir=evidence.directory,
        consensus_file=evidence.selected,
        consensus_candidates=evidence.candidates,
        telemetry_dir=telemetry.directory,
        telemetry_files=tuple(item.path for item in telemetry.files),
        provider_artifacts=tuple(sorted(provided)),
    )
    collected = (1 if evidence.selected is not None else 0) + len(provided)
    # Skipped means nothing to evaluate. A provider signal without an artifact still counts as evidence, so a
    # blocking signal can never be dropped by skipping.
    resolution = resolve(signals) if collected or signals else None
    verdict = display_verdict(resolution, signals)
    return ReviewResult(
        spec_id=spec_id,
        requested_stage=request.stage,
        evaluated_checkpoint=stage.checkpoint,
        stage_note=stage.note,
        verdict=verdict,
        resolution=resolution,
        reason=_reason(verdict, signals, evidence),
        artifacts_collected=collected,
        signals=tuple(signals),
        evidence_refs=refs,
        consensus=record,
        telemetry=telemetry,
        policy=policy,
    )


def _reason(verdict: Verdict, signals: list[ReviewSignal], evidence: ConsensusEvidence) -> Reason:
    """One sentence; paths appear only where they explain the verdict (where nothing was found)."""
    blocking = sum(1 for s in signals if s.blocking)
    advisory = len(signals) - blocking
    if verdict is Verdict.SKIPPED:
        if not evidence.exists:
            context = "the directory does not exist"
        elif evidence.other_stage_files:
            context = f"only {count(evidence.other_stage_files, 'file')} for other stages"
        else:
            context = "no stage evidence there"
        return Reason(
            ReasonCode.NO_ARTIFACTS_FOUND,
            f"No consensus artifacts match {evidence.pattern} in {evidence.directory} ({context}).",
        )
    if verdict is Verdict.FAILED:
        verb = "requires" if blocking == 1 else "require"
        also = f"; {count(advisory, 'advisory signal')} also raised" if advisory else ""
        message = f"{count(blocking, 'blocking signal')} {verb} human review{also}."
        return Reason(ReasonCode.BLOCKING_SIGNALS, message)
    if verdict is Verdict.PASSED_WITH_WARNINGS:
        return Reason(
            ReasonCode.ADVISORY_SIGNALS, f"No blocking signals; {count(advisory, 'advisory signal')} (warnings only)."
        )
    return Reason(ReasonCode.CLEAN, "The review evidence raised no signals.")
