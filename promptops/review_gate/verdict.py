"""Resolution and display verdict (the invariant and the verdict table of docs/review-gate.md).

Resolution is the gate decision: AutoApply or Escalate; it exists only when evidence was evaluated (None for
Skipped and NotApplicable). The display verdict adds the skip and warning cases; the exit code
(``promptops.core.outcomes.exit_code``) applies the policy's strict flags. NotApplicable (Specify) is a promptops
addition: exit 0 always, because the stage has no review point, so nothing is missing and nothing failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from promptops.core.outcomes import Verdict
from promptops.review_gate.signals import ReviewSignal


class Resolution(StrEnum):
    AUTO_APPLY = "AutoApply"
    ESCALATE = "Escalate"


class ReasonCode(StrEnum):
    CLEAN = "Clean"
    ADVISORY_SIGNALS = "AdvisorySignals"
    BLOCKING_SIGNALS = "BlockingSignals"
    NO_ARTIFACTS_FOUND = "NoArtifactsFound"
    NOT_APPLICABLE_TO_STAGE = "NotApplicableToStage"


@dataclass(frozen=True)
class Reason:
    """Why the verdict is what it is: a stable code and one sentence for people."""

    code: ReasonCode
    message: str


def resolve(signals: Sequence[ReviewSignal]) -> Resolution:
    """Escalate when any signal blocks, else AutoApply."""
    proposed = Resolution.ESCALATE if any(s.blocking for s in signals) else Resolution.AUTO_APPLY
    return enforce_invariant(proposed, signals)


def enforce_invariant(resolution: Resolution, signals: Sequence[ReviewSignal]) -> Resolution:
    """``resolution == AutoApply => no blocking signals``: a resolution breaking it becomes Escalate."""
    if resolution is Resolution.AUTO_APPLY and any(s.blocking for s in signals):
        return Resolution.ESCALATE
    return resolution


def display_verdict(resolution: Resolution | None, signals: Sequence[ReviewSignal]) -> Verdict:
    """The verdict table; ``resolution`` None means no artifacts were collected (Skipped)."""
    if resolution is None:
        return Verdict.SKIPPED
    if resolution is Resolution.ESCALATE:
        return Verdict.FAILED
    return Verdict.PASSED_WITH_WARNINGS if signals else Verdict.PASSED
