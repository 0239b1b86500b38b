"""Finding the evidence on disk: the consensus candidates and the spec packet.

Paths go in and out repo-relative; the repo root is joined only to touch the file system, so every reference
in a result is relative by construction. A directory that does not exist means "no artifacts"; any
other I/O error is a tool failure (:class:`ReviewGateError`, exit 3) because the gate cannot tell what is
there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from promptops.review_gate.consensus import consensus_pattern, matching_names
from promptops.review_gate.errors import ReviewGateError

_ANY_STAGE_PATTERN = "spec-*_*.json"


@dataclass(frozen=True)
class ConsensusEvidence:
    """What the consensus directory holds for one stage."""

    directory: str
    pattern: str
    exists: bool
    candidates: tuple[str, ...]  # repo-relative, sorted; the last one is the selection
    other_stage_files: int  # spec-*_*.json files for other stages (a stage mismatch)

    @property
    def selected(self) -> str | None:
        return self.candidates[-1] if self.candidates else None


def find_consensus(repo_root: Path, directory: str, stage_slug: str) -> ConsensusEvidence:
    """List ``directory`` (repo-relative) for ``spec-<stage_slug>_*.json`` regular files."""
    pattern = consensus_pattern(stage_slug)
    try:
        with os.scandir(repo_root / directory) as entries:
            names = [entry.name for entry in entries if entry.is_file()]
    except FileNotFoundError:
        return ConsensusEvidence(directory, pattern, False, (), 0)
    except OSError as problem:
        raise ReviewGateError(f"{directory}: cannot list consensus evidence: {_reason(problem)}") from None
    matches = matching_names(names, stage_slug)
    others = sum(1 for name in names if fnmatchcase(name, _ANY_STAGE_PATTERN)) - len(matches)
    candidates = tuple(f"{directory}/{name}" for name in matches)
    return ConsensusEvidence(directory, pattern, True, candidates, others)


def read_evidence(repo_root: Path, path: str) -> bytes:
    """The bytes of a repo-relative evidence file; an I/O error is a tool failure."""
    try:
        return (repo_root / path).read_bytes()
    except OSError as problem:
        raise ReviewGateError(f"{path}: cannot read: {_reason(problem)}") from None


def spec_packet_ref(repo_root: Path, directory: str) -> str | None:
    """The spec packet directory when it exists (provenance only; the verdict does not depend on it)."""
    return directory if (repo_root / directory).is_dir() else None


def check_repo_root(repo_root: Path) -> None:
    if not repo_root.is_dir():
        what = "does not exist" if not repo_root.exists() else "is not a directory"
        raise ReviewGateError(f"repository {repo_root.as_posix()} {what}")
    try:
        with os.scandir(repo_root):
            pass
    except OSError as problem:
        raise ReviewGateError(f"repository {repo_root.as_posix()}: cannot read: {_reason(problem)}") from None


def _reason(problem: OSError) -> str:
    return problem.strerror or str(problem)
