"""Text rendering of a result, shared by every adapter so the terminal and CI logs read the same."""

from __future__ import annotations

from promptops.core.escape import one_line
from promptops.core.outcomes import Verdict
from promptops.review_gate.result import ReviewResult
from promptops.review_gate.signals import ReviewSignal


def headline(result: ReviewResult) -> str:
    """The verdict and why, in one sentence."""
    where = (
        f"{result.spec_id} {result.requested_stage.value}"
        if result.evaluated_checkpoint is None
        else f"{result.spec_id} {result.requested_stage.value} at {result.evaluated_checkpoint.value}"
    )
    return one_line(f"{result.verdict.value} ({where}): {result.reason.message}")


def render_text(result: ReviewResult) -> list[str]:
    """The headline, the alias note, the signals (one per line), then evidence and telemetry in brief."""
    lines = [headline(result)]
    if result.stage_note and result.verdict is not Verdict.NOT_APPLICABLE:
        lines.append(f"note: {result.stage_note}")
    if result.signals:
        lines.append("signals:")
        lines.extend(f"  {_signal_line(signal)}" for signal in result.signals)
    refs = result.evidence_refs
    if refs.consensus_file is not None:
        extra = len(refs.consensus_candidates) - 1
        older = f" (latest of {len(refs.consensus_candidates)} matching files)" if extra else ""
        lines.append(f"evidence: {refs.consensus_file}{older}")
    if result.telemetry is not None and result.telemetry.files:
        bad = sum(1 for item in result.telemetry.files if item.status != "ok")
        unusable = f", {bad} unusable" if bad else ""
        count = len(result.telemetry.files)
        lines.append(f"telemetry: {count} file(s) in {result.telemetry.directory}{unusable}")
    lines.append(f"exit code: {result.exit_code}")
    return [one_line(line) for line in lines]


def stderr_notice(result: ReviewResult) -> str | None:
    """What goes to stderr whatever the format: the Skipped warning, or the NotApplicable note."""
    if result.verdict is Verdict.SKIPPED:
        return one_line(f"warning: review skipped: {result.reason.message}")
    if result.verdict is Verdict.NOT_APPLICABLE:
        return one_line(f"note: {result.reason.message}")
    return None


def _signal_line(signal: ReviewSignal) -> str:
    origin = signal.origin.value if signal.role is None else f"{signal.origin.value}:{signal.role.value}"
    agent = f" agent={signal.agent}" if signal.agent is not None else ""
    message = signal.message if signal.message else "(empty)"
    where = f" [{signal.evidence_path}]" if signal.evidence_path else ""
    return f"{signal.severity.value.upper():<8} {signal.kind.value} from {origin}{agent}: {message}{where}"
