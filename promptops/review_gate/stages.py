"""Stage to checkpoint mapping and the file-name slug each checkpoint's evidence uses."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

UNLOCK_ALIAS_MESSAGE = "Reviewing Audit output"
SPECIFY_NOT_APPLICABLE_MESSAGE = "Run /speckit.status or review Plan"


class Stage(StrEnum):
    """A stage a user asks to review (its documented spelling is the value)."""

    SPECIFY = "Specify"
    PLAN = "Plan"
    TASKS = "Tasks"
    IMPLEMENT = "Implement"
    VALIDATE = "Validate"
    AUDIT = "Audit"
    UNLOCK = "Unlock"

    @classmethod
    def parse(cls, text: str) -> Stage:
        """Case-insensitive: ``plan``, ``Plan`` and ``PLAN`` all name :attr:`PLAN`."""
        for stage in cls:
            if stage.value.lower() == text.strip().lower():
                return stage
        raise ValueError(f"unknown stage {text!r} (one of {', '.join(s.value for s in cls)})")


class Checkpoint(StrEnum):
    """Where the review actually runs."""

    AFTER_PLAN = "AfterPlan"
    AFTER_TASKS = "AfterTasks"
    AFTER_IMPLEMENT = "AfterImplement"
    AFTER_VALIDATE = "AfterValidate"
    BEFORE_UNLOCK = "BeforeUnlock"

    @property
    def stage_slug(self) -> str:
        """The ``<stage_slug>`` in ``spec-<stage_slug>_*.json``."""
        return _SLUGS[self]


_SLUGS = {
    Checkpoint.AFTER_PLAN: "plan",
    Checkpoint.AFTER_TASKS: "tasks",
    Checkpoint.AFTER_IMPLEMENT: "implement",
    Checkpoint.AFTER_VALIDATE: "validate",
    Checkpoint.BEFORE_UNLOCK: "audit",
}


@dataclass(frozen=True)
class StageResolution:
    """What a requested stage means: a checkpoint to evaluate (with an alias note), or not applicable.

    ``checkpoint`` is None exactly when the stage has no review point; ``note`` then says what to do instead.
    ``canonical`` is False for the opt-in diagnostic reviews (Implement, Validate).
    """

    requested: Stage
    checkpoint: Checkpoint | None
    note: str | None
    canonical: bool

    @property
    def applicable(self) -> bool:
        return self.checkpoint is not None


def resolve_stage(stage: Stage) -> StageResolution:
    """The stage-to-checkpoint table (docs/review-gate.md), row for row."""
    return _TABLE[stage]


_TABLE = {
    Stage.PLAN: StageResolution(Stage.PLAN, Checkpoint.AFTER_PLAN, None, canonical=True),
    Stage.TASKS: StageResolution(Stage.TASKS, Checkpoint.AFTER_TASKS, None, canonical=True),
    Stage.AUDIT: StageResolution(Stage.AUDIT, Checkpoint.BEFORE_UNLOCK, None, canonical=True),
    Stage.IMPLEMENT: StageResolution(Stage.IMPLEMENT, Checkpoint.AFTER_IMPLEMENT, None, canonical=False),
    Stage.VALIDATE: StageResolution(Stage.VALIDATE, Checkpoint.AFTER_VALIDATE, None, canonical=False),
    Stage.UNLOCK: StageResolution(Stage.UNLOCK, Checkpoint.BEFORE_UNLOCK, UNLOCK_ALIAS_MESSAGE, canonical=True),
    Stage.SPECIFY: StageResolution(Stage.SPECIFY, None, SPECIFY_NOT_APPLICABLE_MESSAGE, canonical=False),
}
