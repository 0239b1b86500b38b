"""The golden cases: fixture repo trees under fixtures/, expected JSON under golden/.

Each case states its verdict and exit code here as well, so regenerating the golden files
(``PROMPTOPS_UPDATE_GOLDEN=1 pytest tests/review_gate``) can never hide a change in the decision.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from promptops.review_gate import ReviewPolicy, ReviewRequest, ReviewResult, Stage, Topology, review

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
GOLDEN = HERE / "golden"
SPEC = "SPEC-KIT-100"

CUSTOM = Topology(spec_packet_root="specs", evidence_root="review/evidence", consensus_dir="votes", commands_dir="runs")


@dataclass(frozen=True)
class Case:
    name: str
    fixture: str
    stage: str
    verdict: str
    exit_code: int
    flags: tuple[str, ...] = ()
    # The topology the CLI reads from the fixture's pyproject.toml, given to the library directly.
    topology: Topology = field(default_factory=Topology)

    @property
    def repo(self) -> Path:
        return FIXTURES / self.fixture

    @property
    def golden(self) -> Path:
        return GOLDEN / f"{self.name}.json"

    def policy(self) -> ReviewPolicy:
        return ReviewPolicy(
            strict_warnings="--strict-warnings" in self.flags,
            strict_artifacts="--strict-artifacts" in self.flags,
            topology=self.topology,
        )

    def review(self) -> ReviewResult:
        return review(ReviewRequest(self.repo, SPEC, Stage.parse(self.stage), self.policy()))

    def cli_args(self, *, repo: str | None = None) -> list[str]:
        where = ["--repo", repo if repo is not None else str(self.repo)]
        return ["review-gate", "--spec", SPEC, "--stage", self.stage, *where, *self.flags, "--format", "json"]


CASES = [
    Case("conflict", "conflict", "Plan", "Failed", 2),
    Case("clean", "clean", "Plan", "Passed", 0),
    Case("clean_strict_warnings", "clean", "Plan", "Passed", 0, ("--strict-warnings",)),
    # The file is cut inside its conflicts: it may hold one, so the gate fails closed.
    Case("parse_error", "parse_error", "Plan", "Failed", 2),
    Case("parse_error_wrong_type", "wrong_type", "Plan", "PassedWithWarnings", 0),
    Case("parse_error_wrong_type_strict_artifacts", "wrong_type", "Plan", "Failed", 2, ("--strict-artifacts",)),
    Case("error_field", "error_field", "Tasks", "PassedWithWarnings", 0),
    Case("error_field_strict_warnings", "error_field", "Tasks", "PassedWithWarnings", 1, ("--strict-warnings",)),
    Case("parse_error_strict_warnings", "parse_error", "Plan", "Failed", 2, ("--strict-warnings",)),
    Case("conflict_and_error", "conflict_and_error", "Plan", "Failed", 2),
    Case(
        "conflict_and_error_strict_warnings",
        "conflict_and_error",
        "Plan",
        "Failed",
        2,
        ("--strict-warnings",),
    ),
    Case("stage_mismatch", "stage_mismatch", "Plan", "Skipped", 0),
    Case("stage_mismatch_strict_artifacts", "stage_mismatch", "Plan", "Skipped", 2, ("--strict-artifacts",)),
    Case("implement_diagnostic", "stage_mismatch", "Implement", "Passed", 0),
    Case("missing_artifacts", "missing", "Plan", "Skipped", 0),
    Case("missing_artifacts_strict_artifacts", "missing", "Plan", "Skipped", 2, ("--strict-artifacts",)),
    Case("audit", "audit", "Audit", "Passed", 0),
    Case("unlock_alias", "audit", "unlock", "Passed", 0),
    Case("specify", "conflict", "Specify", "NotApplicable", 0),
    Case(
        "specify_strict",
        "conflict",
        "Specify",
        "NotApplicable",
        0,
        ("--strict-artifacts", "--strict-warnings"),
    ),
    Case("lexmax", "lexmax", "Plan", "Passed", 0),
    Case("telemetry", "telemetry", "Plan", "Passed", 0),
    Case("telemetry_only", "telemetry_only", "Plan", "Skipped", 0),
    Case("custom_topology", "custom_topology", "Plan", "Failed", 2, topology=CUSTOM),
]

BY_NAME = {case.name: case for case in CASES}
