"""The review policy: everything that shapes a verdict besides the evidence, as one value.

Built once by an adapter (the CLI reads flags and pyproject.toml) and passed in the request; nothing below it
reads the environment. It is echoed in the result so a reader can tell why an exit code is
what it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from promptops.review_gate.topology import Topology


@dataclass(frozen=True)
class ReviewPolicy:
    """``strict_warnings``: PassedWithWarnings exits 1. ``strict_artifacts``: Skipped exits 2."""

    strict_warnings: bool = False
    strict_artifacts: bool = False
    topology: Topology = field(default_factory=Topology)

    def to_dict(self) -> dict[str, Any]:
        return {
            "strict_warnings": self.strict_warnings,
            "strict_artifacts": self.strict_artifacts,
            "topology": self.topology.to_dict(),
        }
