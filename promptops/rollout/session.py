"""Gate, promote, roll back and report on one rollout: the library calls behind ``promptops rollout``.

Everything that varies comes in as a value: the store (a ``CountsSource``; None: the caller has no store, which the
CLI refuses rather than read as no data), the time, who is acting. Transitions are appended to the plan's
history (promptops.rollout.plan).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

from promptops.core.contract import Contract
from promptops.core.errors import PromptopsError
from promptops.core.outcomes import Verdict
from promptops.rollout.gate import GateResult, Purpose, evaluate, read_window
from promptops.rollout.looks import read_looks
from promptops.rollout.plan import Arm, Plan, Transition, append_transition
from promptops.rollout.readiness import parser_readiness
from promptops.store import catalogue
from promptops.store.source import CountsSource, Window


class RolloutRefused(PromptopsError):
    """A transition the gate does not allow (exit 2), with the gate's result."""

    def __init__(self, message: str, result: GateResult | None = None) -> None:
        super().__init__(message)
        self.result = result


def plan_at_step(plan: Plan, step: int) -> Plan:
    """``plan`` as it stood while ``step`` was current (for gating an earlier step again)."""
    if not 0 <= step < len(plan.steps):
        raise PromptopsError(f"{plan.source}: no step {step} (steps 0 to {len(plan.steps) - 1})")
    if step == plan.step:
        return plan
    entered = [i for i, t in enumerate(plan.history) if t.to_step == step]
    if not entered and step != 0:
        raise PromptopsError(f"{plan.source}: step {step} was never reached")
    return plan._replace(history=plan.history[: entered[-1] + 1] if entered else ())


def run_gate(
    root: Path,
    plan: Plan,
    contract: Contract,
    source: CountsSource | None,
    now: datetime,
    purpose: Purpose = Purpose.MONITOR,
    *,
    strict_warnings: bool = False,
    strict_artifacts: bool = False,
) -> GateResult:
    """Judge the plan's current step from the store (``source``; None: no responses stored anywhere yet)."""
    until = store_time(now)  # a replay: nothing logged after ``now`` counts
    readiness = parser_readiness(root, plan, contract, source, schema_class=plan.step == 0, until=until)
    since = plan.step_started
    start = store_time(since) if since is not None else None
    looks, counts = ((), {}) if source is None else read_looks(source, plan, start, until)
    useful = any(catalogue.metric(slo.metric).unit == "pull_request" for slo in plan.slos)
    window = Window(plan.contract, plan.rollout_id, start, until)
    feedback = source.feedback(window, until) if useful and source is not None else None
    return evaluate(
        plan,
        counts,
        readiness,
        now,
        purpose,
        strict_warnings=strict_warnings,
        strict_artifacts=strict_artifacts,
        looks=looks,
        feedback=feedback,
    )


def promote(
    path: Path, plan: Plan, result: GateResult, *, by: str, now: datetime, force_reason: str | None = None
) -> Plan:
    """Move the plan one step on (or re-enable a rolled-back step) when ``result`` allows it.

    ``force_reason`` overrides a refusal; the override is recorded with the gate's verdict and the reason.
    ``result`` was judged on ``plan``; if another writer changed the plan's history meanwhile, the promotion
    is refused (run the gate again) rather than applied to a plan the gate never saw.
    """
    if plan.rolled_back and force_reason is None:
        raise RolloutRefused(
            f"{plan.source}: rolled back at step {plan.step}: re-enable the candidate with `rollout resume` "
            "once the cause is fixed, or point the rollout at a new candidate with `rollout retarget`",
            result,
        )
    if plan.step == len(plan.steps) - 1 and not plan.rolled_back:
        raise RolloutRefused(f"{plan.source}: already at the last step ({plan.steps[-1].name})", result)
    allowed = result.verdict in (Verdict.PASSED, Verdict.PASSED_WITH_WARNINGS)
    if not allowed and force_reason is None:
        raise RolloutRefused(f"promotion refused: {result.verdict}: {result.sentence}", result)
    target = plan.step if plan.rolled_back else plan.step + 1
    reason = force_reason if not allowed and force_reason is not None else result.sentence
    transition = Transition(
        at=now,
        by=by,
        action="promote",
        from_step=plan.step,
        to_step=target,
        verdict=str(result.verdict),
        reason=reason,
        forced=not allowed,
    )

    def unchanged(current: Plan) -> Transition:
        if current.history != plan.history:
            raise RolloutRefused(f"{plan.source}: the plan changed while the gate ran; run the promotion again")
        return transition

    return append_transition(path, plan.source, unchanged)


def rollback(path: Path, plan: Plan, *, by: str, now: datetime, reason: str) -> Plan:
    """Send every unit back to the baseline (the candidate's weight becomes 0), keeping the step."""
    if not reason.strip():
        raise PromptopsError("a rollback needs a reason")
    return append_transition(
        path,
        plan.source,
        lambda current: Transition(now, by, "rollback", current.step, current.step, "RolledBack", reason),
    )


def resume(path: Path, plan: Plan, *, by: str, now: datetime, reason: str) -> Plan:
    """Re-enable the same candidate at the step it was rolled back from, once the cause is fixed.

    No gate is needed: the step's window starts afresh at the resume, and the step's gate must pass on the
    new responses before the next promotion. Candidate responses rejected for their version before the
    resume no longer count against the parser's readiness.
    """
    if not reason.strip():
        raise PromptopsError("a resume needs a reason: say what was fixed")

    def make(current: Plan) -> Transition:
        if not current.rolled_back:
            raise RolloutRefused(f"{current.source}: not rolled back (step {current.step}): nothing to resume")
        return Transition(now, by, "resume", current.step, current.step, "Resumed", reason)

    return append_transition(path, plan.source, make)


def retarget(path: Path, plan: Plan, candidate: Arm, *, by: str, now: datetime, reason: str) -> Plan:
    """Point a rolled-back rollout at a new candidate release; it starts again from the first step.

    The plan's ``candidate`` is rewritten and the history records the old and new candidates. The first step
    (the parser stage) checks that the new release is locked and readable before it gets any traffic.
    """
    if not reason.strip():
        raise PromptopsError("a retarget needs a reason")

    def make(current: Plan) -> Transition:
        if not current.rolled_back:
            raise RolloutRefused(
                f"{current.source}: not rolled back (step {current.step}): roll back before changing the candidate"
            )
        if candidate == current.candidate:
            raise RolloutRefused(
                f"{current.source}: the candidate is already prompt {candidate.prompt_version} "
                f"(schema {candidate.schema_version}): use `rollout resume` to re-enable it"
            )
        if candidate == current.baseline:
            raise RolloutRefused(f"{current.source}: prompt {candidate.prompt_version} is the baseline")
        return Transition(
            now, by, "retarget", current.step, 0, "Retargeted", reason, candidate=candidate, previous=current.candidate
        )

    return append_transition(path, plan.source, make)


def current_gate(root: Path, plan: Plan, contract: Contract, source: CountsSource | None, now: datetime) -> GateResult:
    """The gate a reader of the rollout needs (status and the dashboard show the same one).

    After a rollback the step's window restarts empty; what matters is the gate that held it: the step as
    it stood, judged at the moment of the rollback (or at ``now`` for a replay before it).
    """
    if not plan.rolled_back:
        return run_gate(root, plan, contract, source, now, Purpose.MONITOR)
    held_at = min(plan.history[-1].at, now)
    return run_gate(root, plan._replace(history=plan.history[:-1]), contract, source, held_at, Purpose.MONITOR)


class Status(NamedTuple):
    plan: Plan
    gate: GateResult
    needed: dict[str, int]  # responses each arm still needs at this step
    time_left_seconds: float
    legacy_note: str | None

    def to_dict(self) -> dict[str, Any]:
        plan = self.plan
        return {
            "rollout": plan.rollout_id,
            "contract": plan.contract,
            "step": plan.step,
            "step_name": plan.steps[plan.step].name,
            "weights": {"candidate": plan.weight, "baseline": 1 - plan.weight},
            "rolled_back": plan.rolled_back,
            "verdict": str(self.gate.verdict),
            "reason": None if self.gate.reason is None else str(self.gate.reason),
            "sentence": self.gate.sentence,
            "still_needed": {"responses": self.needed, "seconds": self.time_left_seconds},
            "legacy": self.legacy_note,
            "history": [t.to_dict() for t in plan.history],
        }


def status(root: Path, plan: Plan, contract: Contract, source: CountsSource | None, now: datetime) -> Status:
    from promptops.rollout.sizing import plan_needs  # the gate itself never needs the sample-size tables

    result = current_gate(root, plan, contract, source, now)
    need = plan_needs(plan)[plan.step]
    have = result.window.get("responses", {})
    needed = {
        "candidate": max(0, need.candidate_needed - have.get("candidate", 0)),
        "baseline": max(0, need.baseline_needed - have.get("baseline", 0)),
    }
    step = plan.steps[plan.step]
    started = plan.step_started
    left = 0.0 if started is None else max(0.0, (step.min_duration - (now - started)).total_seconds())
    if plan.rolled_back:  # nothing accrues while rolled back: the next move is a resume or a retarget
        needed, left = {"candidate": 0, "baseline": 0}, 0.0
    return Status(plan, result, needed, left, _legacy_note(plan, source, now))


def _legacy_note(plan: Plan, source: CountsSource | None, now: datetime) -> str | None:
    """Once baseline traffic has been zero for the plan's legacy window, the floor can rise in the next major."""
    if plan.weight < 1 or plan.step_started is None:
        return None
    quiet_since = plan.step_started
    baseline = None
    if source is not None:
        baseline = read_window(source, plan, None, store_time(now), arm="baseline").get("baseline")
    if baseline is not None and baseline.last is not None:
        quiet_since = max(quiet_since, baseline.last.replace(tzinfo=UTC))
    quiet = now - quiet_since
    if quiet < plan.legacy_window:
        return None
    if plan.candidate.schema_version.major > plan.baseline.schema_version.major:
        return (
            f"No baseline traffic for {quiet.days} days (legacy window {plan.legacy_window.days} days): major line "
            f"{plan.baseline.schema_version.major} can be retired (`promptops rollout retire {plan.source}`), "
            f"dropping support for prompt {plan.baseline.prompt_version}."
        )
    return (
        f"No baseline traffic for {quiet.days} days (legacy window {plan.legacy_window.days} days): the parser "
        f"floor can be raised to schema {plan.candidate.schema_version} in the next major, dropping support for "
        f"prompt {plan.baseline.prompt_version}."
    )


def store_time(moment: datetime) -> datetime:
    """The store keeps UTC times without an offset."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo is not None else moment
