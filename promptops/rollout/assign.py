"""Sticky, monotone traffic assignment (docs/rollouts.md, Assignment).

``bucket = sha256(salt + "." + unit)`` mapped to [0, 1); the candidate serves a unit when its bucket is below
the current weight. A unit keeps its bucket for the whole rollout (the salt is fixed), so it keeps its arm
across calls, and raising the weight only adds units: one in the 5% slice stays in at 25%.

A unit is never routed to a candidate the parser cannot read yet: given the reason (``unreadable``, from
``promptops.rollout.policies.candidate_unreadable``), a unit whose bucket would pick the candidate gets the
baseline, and the assignment says why (``held``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from promptops.rollout.plan import Arm, Plan

BASELINE = "baseline"
CANDIDATE = "candidate"
_SCALE = 16**15  # the first 15 hex digits: 60 bits, exactly representable as a float's numerator


def bucket(salt: str, unit: str) -> float:
    digest = hashlib.sha256(f"{salt}.{unit}".encode()).hexdigest()
    return int(digest[:15], 16) / _SCALE


@dataclass(frozen=True)
class Assignment:
    rollout_id: str | None  # None: no rollout (a Serving without a plan)
    unit: str
    bucket: float
    weight: float
    arm: str
    versions: Arm  # what to render and parse for this unit
    held: str | None = None  # why a unit whose bucket picks the candidate was given the baseline

    def to_dict(self) -> dict[str, object]:
        return {
            "rollout": self.rollout_id,
            "unit": self.unit,
            "arm": self.arm,
            "bucket": self.bucket,
            "weight": self.weight,
            **self.versions.to_dict(),
            "held": self.held,
        }


def assign(plan: Plan, unit: str, weight: float | None = None, *, unreadable: str | None = None) -> Assignment:
    """The arm ``unit`` gets under ``plan`` at its current weight (or ``weight``, e.g. a later step's).

    ``unreadable``: why the parser cannot read the candidate yet; the unit then gets the baseline, held.
    """
    share = plan.weight if weight is None else weight
    value = bucket(plan.salt, unit)
    if value < share:
        if unreadable is not None:
            return Assignment(plan.rollout_id, unit, value, share, BASELINE, plan.baseline, unreadable)
        return Assignment(plan.rollout_id, unit, value, share, CANDIDATE, plan.candidate)
    return Assignment(plan.rollout_id, unit, value, share, BASELINE, plan.baseline)


def routes(plan: Plan, *, unreadable: str | None = None) -> dict[str, object]:
    """The current routing as plain data, for services that do not embed Python. With ``unreadable`` (the
    parser cannot read the candidate yet) the weight is 0 and ``held`` says why."""
    return {
        "rollout": plan.rollout_id,
        "contract": plan.contract,
        "unit": plan.unit,
        "salt": plan.salt,
        "step": plan.step,
        "step_name": plan.steps[plan.step].name,
        "weight": 0.0 if unreadable is not None else plan.weight,
        "held": unreadable,
        "rolled_back": plan.rolled_back,
        "bucket": "int(sha256(salt + '.' + unit).hexdigest()[:15], 16) / 16**15; candidate when bucket < weight",
        "arms": {BASELINE: plan.baseline.to_dict(), CANDIDATE: plan.candidate.to_dict()},
    }
