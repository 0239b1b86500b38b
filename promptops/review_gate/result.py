"""The review result and its stable JSON form.

The JSON form is the contract with CI: keys sorted, two-space indent, ASCII only, no timestamps, no absolute
paths. The library's :meth:`ReviewResult.dumps` and ``promptops review-gate --format json`` print the same
bytes for the same inputs (the CLI adds one trailing newline).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any

from promptops.core.outcomes import Verdict, exit_code
from promptops.review_gate.consensus import ConsensusRecord
from promptops.review_gate.policy import ReviewPolicy
from promptops.review_gate.signals import ReviewSignal
from promptops.review_gate.stages import Checkpoint, Stage
from promptops.review_gate.telemetry import Telemetry
from promptops.review_gate.topology import is_repo_relative
from promptops.review_gate.verdict import Reason, Resolution

RESULT_VERSION = 1


@dataclass(frozen=True)
class EvidenceRefs:
    """Every place the review looked, repo-relative. Empty for a stage with no review point."""

    spec_packet: str | None = None  # docs/<SPEC-ID>, when it exists
    consensus_dir: str | None = None  # where spec-<stage>_*.json files are looked for (even if absent)
    consensus_file: str | None = None  # the selected file (lexicographic max)
    consensus_candidates: tuple[str, ...] = ()  # every matching file, sorted
    telemetry_dir: str | None = None
    telemetry_files: tuple[str, ...] = ()
    provider_artifacts: tuple[str, ...] = ()  # from signal providers (extension point)

    def __post_init__(self) -> None:
        for path in self.paths():
            if not is_repo_relative(path):
                raise ValueError(f"evidence reference must be repo-relative, got {path!r}")

    def paths(self) -> list[str]:
        found: list[str] = []
        for item in fields(self):
            value = getattr(self, item.name)
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, tuple):
                found.extend(value)
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            item.name: list(value) if isinstance(value := getattr(self, item.name), tuple) else value
            for item in fields(self)
        }


@dataclass(frozen=True)
class ReviewResult:
    """One review's outcome. ``resolution`` is None when nothing was evaluated (Skipped, NotApplicable)."""

    spec_id: str
    requested_stage: Stage
    evaluated_checkpoint: Checkpoint | None
    stage_note: str | None  # the Unlock alias message, or what to do instead for a NotApplicable stage
    verdict: Verdict
    resolution: Resolution | None
    reason: Reason
    artifacts_collected: int
    signals: tuple[ReviewSignal, ...]
    evidence_refs: EvidenceRefs
    consensus: ConsensusRecord | None  # the selected file's fields, when it parsed
    telemetry: Telemetry | None  # None only when no checkpoint was evaluated
    policy: ReviewPolicy

    def __post_init__(self) -> None:
        # The resolution invariant, checked on every result however it was built.
        if self.resolution is Resolution.AUTO_APPLY and self.blocking_signals:
            raise ValueError("invariant violated: AutoApply with blocking signals (must be Escalate)")

    @property
    def blocking_signals(self) -> tuple[ReviewSignal, ...]:
        return tuple(s for s in self.signals if s.blocking)

    @property
    def advisory_signals(self) -> tuple[ReviewSignal, ...]:
        return tuple(s for s in self.signals if not s.blocking)

    @property
    def exit_code(self) -> int:
        policy = self.policy
        return exit_code(self.verdict, strict_warnings=policy.strict_warnings, strict_artifacts=policy.strict_artifacts)

    def to_dict(self) -> dict[str, Any]:
        checkpoint = self.evaluated_checkpoint
        return {
            "result_version": RESULT_VERSION,
            "spec_id": self.spec_id,
            "requested_stage": self.requested_stage.value,
            "evaluated_checkpoint": None if checkpoint is None else checkpoint.value,
            "stage_slug": None if checkpoint is None else checkpoint.stage_slug,
            "stage_note": self.stage_note,
            "verdict": self.verdict.value,
            "resolution": None if self.resolution is None else self.resolution.value,
            "reason": {"code": self.reason.code.value, "message": self.reason.message},
            "exit_code": self.exit_code,
            "artifacts_collected": self.artifacts_collected,
            "signal_counts": {"blocking": len(self.blocking_signals), "advisory": len(self.advisory_signals)},
            "signals": [signal.to_dict() for signal in self.signals],
            "consensus": None if self.consensus is None else self.consensus.metadata(),
            "evidence_refs": self.evidence_refs.to_dict(),
            "telemetry": None if self.telemetry is None else self.telemetry.to_dict(),
            "policy": self.policy.to_dict(),
        }

    def dumps(self) -> str:
        """The stable JSON form (no trailing newline)."""
        return json.dumps(self.to_dict(), sort_keys=True, indent=2, ensure_ascii=True, allow_nan=False)
