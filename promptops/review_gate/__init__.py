"""Review gate: turn a spec's review evidence into one verdict and exit code.

Usage::

    from promptops.review_gate import ReviewPolicy, ReviewRequest, Stage, review

    result = review(ReviewRequest(Path("."), "SPEC-KIT-921", Stage.PLAN, ReviewPolicy(strict_artifacts=True)))
    result.verdict, result.exit_code, result.dumps()

Modules, one concept each: ``topology`` (where evidence lives), ``stages`` (stage to checkpoint),
``consensus`` (file selection and parsing), ``signals`` (what blocks and what warns), ``telemetry``
(enrichment), ``evidence`` (file-system lookups), ``verdict`` (resolution, verdict, exit code), ``result``
(the result and its JSON), ``providers`` (extension point for more evidence), ``render`` (text), ``review``
(the orchestration).
"""

from promptops.core.outcomes import Verdict
from promptops.review_gate.consensus import (
    ConsensusParseError,
    ConsensusRecord,
    parse_consensus,
    select_latest,
)
from promptops.review_gate.errors import ReviewGateError
from promptops.review_gate.policy import ReviewPolicy
from promptops.review_gate.providers import EvidenceContext, ProviderReport, SignalProvider
from promptops.review_gate.render import headline, render_text, stderr_notice
from promptops.review_gate.result import EvidenceRefs, ReviewResult
from promptops.review_gate.review import ReviewRequest, review
from promptops.review_gate.signals import Origin, ReviewSignal, Role, Severity, SignalKind, infer_role
from promptops.review_gate.stages import Checkpoint, Stage, StageResolution, resolve_stage
from promptops.review_gate.telemetry import Telemetry, TelemetryFile
from promptops.review_gate.topology import Topology
from promptops.review_gate.verdict import Reason, ReasonCode, Resolution

__all__ = [
    "Checkpoint",
    "ConsensusParseError",
    "ConsensusRecord",
    "EvidenceContext",
    "EvidenceRefs",
    "Origin",
    "ProviderReport",
    "Reason",
    "ReasonCode",
    "Resolution",
    "ReviewGateError",
    "ReviewPolicy",
    "ReviewRequest",
    "ReviewResult",
    "ReviewSignal",
    "Role",
    "Severity",
    "SignalKind",
    "SignalProvider",
    "Stage",
    "StageResolution",
    "Telemetry",
    "TelemetryFile",
    "Topology",
    "Verdict",
    "headline",
    "infer_role",
    "parse_consensus",
    "render_text",
    "resolve_stage",
    "review",
    "select_latest",
    "stderr_notice",
]
