"""Review signals: what the evidence says, and whether it blocks.

Conflicts block, each with the role inferred from the file's ``agent``; an ``error`` field and a parse failure
are advisory and come from the System. The role vocabulary and its inference rule are promptops decisions (the
format only says "inferred from agent"): see :func:`infer_role`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from promptops.review_gate.consensus import ConsensusRecord
from promptops.review_gate.topology import is_repo_relative


class SignalKind(StrEnum):
    CONTRADICTION = "Contradiction"
    OTHER = "Other"


class Severity(StrEnum):
    BLOCK = "Block"
    ADVISORY = "Advisory"


class Origin(StrEnum):
    ROLE = "Role"
    SYSTEM = "System"


class Role(StrEnum):
    ARCHITECT = "Architect"
    IMPLEMENTER = "Implementer"
    VALIDATOR = "Validator"
    JUDGE = "Judge"
    SIDECAR_CRITIC = "SidecarCritic"
    UNKNOWN = "Unknown"


# First match wins, on the lower-cased agent name. Order matters: "implementer-validator" is an Implementer.
_ROLE_KEYWORDS: tuple[tuple[tuple[str, ...], Role], ...] = (
    (("architect",), Role.ARCHITECT),
    (("implement",), Role.IMPLEMENTER),
    (("valid",), Role.VALIDATOR),
    (("judge", "audit"), Role.JUDGE),
    (("sidecar", "critic"), Role.SIDECAR_CRITIC),
)


def infer_role(agent: str | None) -> Role:
    """The reviewer role an ``agent`` name stands for.

    Case-insensitive substring match against the keywords above. A missing, empty or unrecognized agent (a
    bare model name such as ``claude``) is :attr:`Role.UNKNOWN`; we never guess from the file name, because it
    always contains the stage slug (``spec-implement_...`` would make every reviewer an Implementer).
    """
    if not agent:
        return Role.UNKNOWN
    lowered = agent.lower()
    for keywords, role in _ROLE_KEYWORDS:
        if any(keyword in lowered for keyword in keywords):
            return role
    return Role.UNKNOWN


@dataclass(frozen=True)
class ReviewSignal:
    """One thing the evidence says. ``evidence_path`` is repo-relative; ``agent`` is the raw agent name."""

    kind: SignalKind
    severity: Severity
    origin: Origin
    message: str
    role: Role | None = None
    agent: str | None = None
    evidence_path: str | None = None
    # What a reviewer output lost, for signals about it: the finding's severity as written, the parser's
    # reason, the file it named (the review gate's reviewer-output rules). Absent for consensus signals.
    detail: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if (self.origin is Origin.ROLE) != (self.role is not None):
            raise ValueError("a signal has a role exactly when its origin is Role")
        if self.evidence_path is not None and not is_repo_relative(self.evidence_path):
            raise ValueError(f"evidence_path must be repo-relative, got {self.evidence_path!r}")

    @property
    def blocking(self) -> bool:
        return self.severity is Severity.BLOCK

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind.value,
            "severity": self.severity.value,
            "origin": self.origin.value,
            "role": None if self.role is None else self.role.value,
            "agent": self.agent,
            "message": self.message,
            "evidence_path": self.evidence_path,
        }
        if self.detail is not None:
            out["detail"] = dict(self.detail)
        return out


def consensus_signals(record: ConsensusRecord, evidence_path: str) -> list[ReviewSignal]:
    """Signals from one parsed consensus file: one blocking Contradiction per conflict, then the error.

    Every element of ``consensus.conflicts`` counts, even an empty string (one signal per
    conflict; a gate fails closed). ``error`` counts whenever it is a string, even an empty one ("present").
    """
    role = infer_role(record.agent)
    signals = [
        ReviewSignal(
            kind=SignalKind.CONTRADICTION,
            severity=Severity.BLOCK,
            origin=Origin.ROLE,
            role=role,
            agent=record.agent,
            message=conflict,
            evidence_path=evidence_path,
        )
        for conflict in record.conflicts or ()
    ]
    if record.error is not None:
        signals.append(
            ReviewSignal(
                kind=SignalKind.OTHER,
                severity=Severity.ADVISORY,
                origin=Origin.SYSTEM,
                agent=record.agent,
                message=record.error,
                evidence_path=evidence_path,
            )
        )
    return signals


def parse_failure_signal(
    evidence_path: str, error: str, holds_conflict: bool = False, strict_artifacts: bool = False
) -> ReviewSignal:
    """The signal for a consensus file that is not ConsensusJson: advisory, unless the file may hold a
    conflict (which the gate cannot read, so it fails closed) or ``--strict-artifacts`` asks that evidence the
    gate cannot read blocks. The text is exact; a blocking one says why at its end."""
    message = f"Failed to parse consensus file: {evidence_path}: {error}"
    if holds_conflict:
        message += " (it holds a conflict the gate cannot read: blocking)"
    elif strict_artifacts:
        message += " (--strict-artifacts: blocking)"
    return ReviewSignal(
        kind=SignalKind.OTHER,
        severity=Severity.BLOCK if holds_conflict or strict_artifacts else Severity.ADVISORY,
        origin=Origin.SYSTEM,
        message=message,
        evidence_path=evidence_path,
    )
