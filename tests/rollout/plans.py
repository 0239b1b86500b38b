"""A valid rollout plan as text, for tests that need one on disk."""

from __future__ import annotations

from pathlib import Path

PLAN = """\
# A staged rollout of prompt 1.1.0 (schema 1.1) for review-result.
rollout: review-1.1
contract: review-result
baseline: {prompt_version: "1.0.0", schema_version: "1.0"}
candidate: {prompt_version: "1.1.0", schema_version: "1.1"}
unit: pr
salt: review-1.1
alpha: 0.05
legacy_window: 14d
steps:
  - {name: parser, weight: 0}          # read-compat: the parser that accepts 1.1 ships first
  - {name: canary, weight: 0.05, min_responses: 300, min_duration: 24h}
  - {name: ramp, weight: 0.25, min_responses: 1500, min_duration: 24h}
  - {name: full, weight: 1.0}
slos:
  dropped_finding: {slo: 0.02, margin: 0.01, severity: critical}
  incompatible_version: {slo: 0.01, severity: critical}
  coercion: {slo: 0.2, severity: warning}
  rejected: {slo: 0.02, severity: critical}
  all_findings_dropped: {slo: 0.02, severity: critical}
"""


def write_plan(directory: Path, text: str = PLAN, name: str = "review-1.1") -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(text)
    return path
