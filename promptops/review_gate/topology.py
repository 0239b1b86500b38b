"""Where evidence lives: the spec packet, consensus evidence and telemetry, as repo-relative
paths.

The defaults are the documented locations (docs/review-gate.md). A repository may move them (the CLI reads
``[tool.promptops.review-gate]`` from its pyproject.toml); the library only ever sees the resulting
:class:`Topology` value. Every path here is relative and free of ``..`` so that every evidence reference
built from it stays inside the repo.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import PurePosixPath

from promptops.review_gate.errors import ReviewGateError

SPEC_PACKET_ROOT = "docs"
EVIDENCE_ROOT = "docs/SPEC-OPS-004-integrated-coder-hooks/evidence"
CONSENSUS_DIR = "consensus"  # legacy name retained
COMMANDS_DIR = "commands"


@dataclass(frozen=True)
class Topology:
    """The four configurable locations; ``consensus_dir`` and ``commands_dir`` are under ``evidence_root``."""

    spec_packet_root: str = SPEC_PACKET_ROOT
    evidence_root: str = EVIDENCE_ROOT
    consensus_dir: str = CONSENSUS_DIR
    commands_dir: str = COMMANDS_DIR

    def __post_init__(self) -> None:
        for item in fields(self):
            object.__setattr__(self, item.name, _relative_path(item.name, getattr(self, item.name)))

    def spec_packet(self, spec_id: str) -> str:
        return _join(self.spec_packet_root, spec_id)

    def consensus(self, spec_id: str) -> str:
        return _join(self.evidence_root, self.consensus_dir, spec_id)

    def commands(self, spec_id: str) -> str:
        return _join(self.evidence_root, self.commands_dir, spec_id)

    def to_dict(self) -> dict[str, str]:
        return {item.name: getattr(self, item.name) for item in fields(self)}


def check_spec_id(spec_id: str) -> str:
    """A SPEC-ID names one directory: no separators, no ``.`` or ``..``, nothing that leaves the tree."""
    if (
        not isinstance(spec_id, str)
        or not spec_id.strip()
        or spec_id in {".", ".."}
        or any(ch in spec_id for ch in "/\\\0")
    ):
        raise ReviewGateError(f"invalid SPEC-ID {spec_id!r}: must be one path segment such as SPEC-KIT-921")
    return spec_id


def is_repo_relative(path: str) -> bool:
    """Repo-relative: no leading ``/``, no drive letter, no backslashes, no ``..`` segment."""
    return (
        bool(path)
        and not path.startswith("/")
        and "\\" not in path
        and not (len(path) > 1 and path[1] == ":")
        and ".." not in path.split("/")
    )


def _relative_path(key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ReviewGateError(f"{key}: must be a non-empty string, got {value!r}")
    text = value.strip()
    if "\\" in text or text.startswith("/") or (len(text) > 1 and text[1] == ":"):
        raise ReviewGateError(f"{key}: must be a repo-relative path with '/' separators, got {value!r}")
    parts = [part for part in PurePosixPath(text).parts if part != "."]
    if ".." in parts:
        raise ReviewGateError(f"{key}: must not contain '..', got {value!r}")
    if not parts:
        raise ReviewGateError(f"{key}: must name a directory inside the repo, got {value!r}")
    return "/".join(parts)


def _join(*parts: str) -> str:
    return "/".join(parts)
