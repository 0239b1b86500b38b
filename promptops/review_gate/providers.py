"""The extension point for more evidence: signal providers.

The review reads the ConsensusJson consensus file. A provider adds signals from other evidence of the
same checkpoint; promptops.review_gate.reviewers validates and merges reviewer outputs of promptops contracts beside
the consensus files (issue 9, part 4) and reports a merged finding at the highest severity with high
confidence as blocking. Provider signals go through the same resolution as consensus signals, so the
invariant ``AutoApply => no blocking signals`` holds for them too, and the artifacts a provider reports
count as collected (a stage with only reviewer outputs is reviewed, not skipped).

A provider is any callable ``(EvidenceContext) -> ProviderReport``. It must not print or read the
environment; it raises :class:`~promptops.review_gate.errors.ReviewGateError` for an infrastructure failure
(exit 3).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from promptops.review_gate.signals import ReviewSignal
from promptops.review_gate.stages import Checkpoint
from promptops.review_gate.topology import Topology, is_repo_relative


@dataclass(frozen=True)
class EvidenceContext:
    """What a provider may look at: the checkpoint under review and where its evidence lives."""

    repo_root: Path
    spec_id: str
    checkpoint: Checkpoint
    topology: Topology

    @property
    def consensus_dir(self) -> str:
        """Repo-relative consensus directory of this spec (where reviewer outputs sit)."""
        return self.topology.consensus(self.spec_id)

    def path(self, relative: str) -> Path:
        """The file-system path of a repo-relative reference, for reading."""
        return self.repo_root / relative


@dataclass(frozen=True)
class ProviderReport:
    """Signals and the repo-relative artifacts they came from."""

    signals: tuple[ReviewSignal, ...] = ()
    artifacts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for artifact in self.artifacts:
            if not is_repo_relative(artifact):
                raise ValueError(f"provider artifact must be repo-relative, got {artifact!r}")


class SignalProvider(Protocol):
    def __call__(self, context: EvidenceContext) -> ProviderReport: ...
