"""Rollout plans: ``rollout/<contract>/<id>.yaml``.

A plan names the baseline and candidate versions, how traffic is assigned (unit, salt), the steps (weight,
minimum responses, minimum duration) and the SLOs per metric; its ``history`` records every transition (who,
when, verdict, reason) so each change is reviewable in git. Loading validates everything, range-checks every
number and names the key at fault; the history is appended by round-tripping the YAML under the plans' lock
(promptops.rollout.planfile), so comments and layout survive and concurrent writers all keep their entry.

Transitions: ``promote`` moves one step on; ``rollback`` sends every unit to the baseline, keeping the step;
``resume`` re-enables the same candidate at that step (its window starts afresh); ``retarget`` replaces the
candidate with a new release and starts again from the first step (the parser stage).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NamedTuple

import msgspec

if TYPE_CHECKING:
    from ruamel.yaml import YAML

from promptops.core import specs
from promptops.core.files import write_atomic
from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.rollout.planfile import PlanError, plan_lock, read_plan_text, remove_dead_temps
from promptops.rollout.stats import ALWAYS_VALID
from promptops.store import catalogue

__all__ = ["PlanError"]  # raised by every loader here; defined beside the file reader

ROLLOUT_DIR = "rollout"
UNITS = ("pr", "repo", "request")
_DURATION = re.compile(r"(\d{1,12})([smhdw])\Z")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# Ranges of a plan's numbers: beyond them the statistics overflow or ask for more responses than exist.
ALPHA_RANGE = (1e-6, 0.5)  # exclusive of 0.5
RATE_MIN = 1e-6  # smallest SLO or margin: a zero-failure sample of ~14 million responses at alpha 1e-6
MAX_MIN_RESPONSES = 10**9
MAX_DURATION = timedelta(days=3660)  # ten years
MAX_STEPS = 100


# NamedTuples, not dataclasses: a dataclass compiles its methods with exec at import, which every gate pays at
# start-up. Copy one with ``_replace``.
class Arm(NamedTuple):
    prompt_version: PromptVersion
    schema_version: SchemaVersion

    def to_dict(self) -> dict[str, str]:
        return {"prompt_version": str(self.prompt_version), "schema_version": str(self.schema_version)}


class Step(NamedTuple):
    name: str
    weight: float  # share of units that get the candidate
    min_responses: int = 0  # per arm, before the step can be promoted
    min_duration: timedelta = timedelta(0)


class Slo(NamedTuple):
    metric: str
    slo: float  # highest acceptable rate (a floor for a higher-is-better metric: docs/usefulness.md)
    severity: str = "critical"  # critical: a breach fails the gate; warning: it warns
    margin: float | None = None  # largest acceptable change for the worse from the baseline (non-inferiority)


class Transition(NamedTuple):
    at: datetime
    by: str
    action: str
    from_step: int
    to_step: int
    verdict: str
    reason: str
    forced: bool = False
    candidate: Arm | None = None  # retarget: the new candidate
    previous: Arm | None = None  # retarget: the candidate it replaced

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "at": self.at.isoformat(),
            "by": self.by,
            "action": self.action,
            "from_step": self.from_step,
            "to_step": self.to_step,
            "verdict": self.verdict,
            "reason": self.reason,
            "forced": self.forced,
        }
        if self.candidate is not None:
            out["candidate"] = self.candidate.to_dict()
        if self.previous is not None:
            out["previous_candidate"] = self.previous.to_dict()
        return out


class Plan(NamedTuple):
    rollout_id: str
    contract: str
    baseline: Arm
    candidate: Arm
    unit: str
    salt: str
    alpha: float
    steps: tuple[Step, ...]
    slos: tuple[Slo, ...]
    legacy_window: timedelta
    history: tuple[Transition, ...]
    source: str  # repo-relative file
    statistics: str = ALWAYS_VALID  # always-valid: bounds hold at every look; fixed: valid for a single look

    @property
    def step(self) -> int:
        """The current step: every promotion moved one forward; a rollback keeps the index."""
        return self.history[-1].to_step if self.history else 0

    @property
    def rolled_back(self) -> bool:
        return bool(self.history) and self.history[-1].action == "rollback"

    @property
    def weight(self) -> float:
        """The candidate's current share of units (0 after a rollback)."""
        return 0.0 if self.rolled_back else self.steps[self.step].weight

    @property
    def step_started(self) -> datetime | None:
        """When the current step began (the last transition), None before any."""
        return self.history[-1].at if self.history else None

    @property
    def attempt_started(self) -> datetime | None:
        """When the current candidate got its current chance (the last resume or retarget), None if never:
        what the candidate's responses did before is history, not evidence about the fixed candidate."""
        return next((t.at for t in reversed(self.history) if t.action in ("resume", "retarget")), None)


def missing_guards(plan: Plan) -> tuple[str, ...]:
    """One sentence per guard metric (the catalogue's ``guard``) the plan lacks as a critical SLO, key first."""
    severities = {slo.metric: slo.severity for slo in plan.slos}
    problems = []
    for metric in (m for m in catalogue.METRICS if m.guard is not None):
        add = f"`{metric.name}: {{slo: {metric.guard:g}, severity: critical}}`"
        if metric.name not in severities:
            problems.append(f"slos.{metric.name}: missing: add {add}")
        elif severities[metric.name] != "critical":
            problems.append(f"slos.{metric.name}.severity: must be critical ({add})")
    return tuple(problems)


def require_guards(plan: Plan) -> None:
    """Refuse to judge a plan that could pass a candidate whose every answer is rejected or loses every finding:
    it needs ``rejected`` and ``all_findings_dropped`` as critical SLOs (loading alone never refuses it, so
    routing and a rollback keep working)."""
    problems = missing_guards(plan)
    if problems:
        raise PlanError(
            f"{plan.source}: {'; '.join(problems)} (no gate judges a plan that would pass a candidate whose every "
            "answer is rejected or loses every finding)"
        )


def plan_path(root: Path, contract: str, rollout_id: str) -> Path:
    return root / ROLLOUT_DIR / contract / f"{rollout_id}.yaml"


def load_plan(path: Path, source: str) -> Plan:
    """Read and check the plan at ``path`` (``source`` is how errors name it, repo-relative)."""
    try:
        return _plan(specs.parse_yaml(read_plan_text(path, source), source), path.stem)
    except specs.SpecError as problem:
        raise PlanError(str(problem)) from None


def append_transition(path: Path, source: str, transition: Transition | Callable[[Plan], Transition]) -> Plan:
    """Append a transition to the plan's history, keeping the rest of the file as written; return the plan.

    ``transition`` may be a function of the plan as it stands under the lock (what a concurrent writer
    appended is seen, never overwritten); it may raise to refuse. The file is replaced atomically, so an
    interrupted write leaves the previous plan intact.
    """
    from ruamel.yaml.error import YAMLError

    with plan_lock(path, source):
        remove_dead_temps(path.parent)  # a killed promote or rollback's; no live writer holds the lock
        current = load_plan(path, source)
        chosen = transition(current) if callable(transition) else transition
        round_trip = _yaml()
        try:
            data = round_trip.load(read_plan_text(path, source))
        except YAMLError as problem:
            raise PlanError(f"{source}: invalid YAML: {getattr(problem, 'problem', None) or problem}") from None
        history = data.get("history")
        if history is None:
            history = data["history"] = []
        entry = chosen.to_dict()
        if not chosen.forced:
            del entry["forced"]
        if chosen.candidate is not None:
            data["candidate"] = chosen.candidate.to_dict()  # the plan names the candidate it now serves
        history.append(entry)
        buffer = io.StringIO()
        round_trip.dump(data, buffer)
        write_atomic(path, buffer.getvalue().encode("utf-8"), mode=0o644, shown=source)
        return load_plan(path, source)


def _yaml() -> YAML:
    from ruamel.yaml import YAML  # only appends round-trip; reading uses PyYAML's C scanner

    round_trip = YAML()  # comments, order and quoting survive an append
    round_trip.preserve_quotes = True
    round_trip.width = 4096
    return round_trip


class Duration(timedelta):
    """A plan's duration, written 30m, 24h or 14d."""

    @classmethod
    def read(cls, text: Any) -> Duration:
        match = _DURATION.match(text.strip()) if isinstance(text, str) else None
        shown = repr(text) if len(repr(text)) <= 40 else f"{repr(text)[:37]}..."
        if match is None:
            raise ValueError(f"{shown} is not a duration such as 30m, 24h or 14d")
        if (seconds := int(match[1]) * _SECONDS[match[2]]) > MAX_DURATION.total_seconds():
            raise ValueError(f"{shown} is longer than {MAX_DURATION.days} days")
        return cls(seconds=seconds)


specs.DESCRIPTIONS[Duration] = "a duration such as 30m, 24h or 14d"
_Text = Annotated[str, msgspec.Meta(pattern=r"\S", max_length=200)]


class When(datetime):
    """A history time: ISO 8601 as written (strict_yaml leaves timestamps as text), UTC when no zone is given."""

    @classmethod
    def read(cls, value: Any) -> When:
        try:
            at = cls.fromisoformat(str(value))
        except ValueError as problem:
            raise ValueError(f"not an ISO 8601 time ({problem})") from None
        return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


_PARSERS = {
    **specs.VERSIONS,
    Duration: Duration.read,
    When: When.read,
}


class _ArmSpec(msgspec.Struct, forbid_unknown_fields=True):
    prompt_version: specs.PromptText
    schema_version: specs.SchemaText


class _StepSpec(msgspec.Struct, forbid_unknown_fields=True):
    weight: Annotated[float, msgspec.Meta(ge=0, le=1)]
    name: Annotated[str, msgspec.Meta(max_length=100)] | int | None = None
    min_responses: Annotated[int, msgspec.Meta(ge=0, le=MAX_MIN_RESPONSES)] = 0
    min_duration: Duration = Duration(0)


class _SloSpec(msgspec.Struct, forbid_unknown_fields=True):
    slo: Annotated[float, msgspec.Meta(ge=RATE_MIN, lt=1)]
    margin: Annotated[float, msgspec.Meta(ge=RATE_MIN, lt=1)] | None = None
    severity: Literal["critical", "warning"] = "critical"


class _CountSloSpec(_SloSpec, forbid_unknown_fields=True):  # a mean per pull request, not a rate
    slo: Annotated[float, msgspec.Meta(ge=0, le=1000)]
    margin: Annotated[float, msgspec.Meta(ge=0, le=1000)] | None = None


class _TransitionSpec(msgspec.Struct):  # keys a later promptops may write are ignored
    at: When
    by: str
    action: Literal["promote", "rollback", "resume", "retarget"]
    from_step: Annotated[int, msgspec.Meta(ge=0)]
    to_step: Annotated[int, msgspec.Meta(ge=0)]
    verdict: str
    reason: str
    forced: bool = False
    candidate: _ArmSpec | None = None
    previous_candidate: _ArmSpec | None = None


class _PlanSpec(msgspec.Struct, forbid_unknown_fields=True):
    rollout: _Text
    contract: _Text
    baseline: _ArmSpec
    candidate: _ArmSpec
    unit: Literal["pr", "repo", "request"]
    salt: _Text
    steps: Annotated[list[_StepSpec], msgspec.Meta(min_length=1, max_length=MAX_STEPS)]
    slos: Annotated[dict[str, dict[str, Any]], msgspec.Meta(min_length=1)]
    alpha: Annotated[float, msgspec.Meta(ge=ALPHA_RANGE[0], lt=ALPHA_RANGE[1])] = 0.05
    statistics: Literal["always-valid", "fixed"] = "always-valid"  # stats.METHODS, stats.ALWAYS_VALID
    legacy_window: Duration = Duration(days=14)
    history: list[_TransitionSpec] | None = None
    description: Any = None


def _arm(spec: _ArmSpec) -> Arm:
    return Arm(spec.prompt_version.version, spec.schema_version.version)


def _plan(doc: specs.Document, stem: str) -> Plan:
    """The checked plan; the spec holds the types and bounds, this the rules across keys."""
    if not isinstance(doc.data, Mapping):
        raise specs.SpecError(doc.source, "a rollout plan is a YAML mapping")
    spec = doc.convert(_PlanSpec, parsers=_PARSERS)
    if spec.rollout != stem:
        raise doc.fail(("rollout",), f"is {spec.rollout!r} but the file is {stem}.yaml")
    steps: list[Step] = []
    for index, step in enumerate(spec.steps):
        if steps and step.weight < steps[-1].weight:
            raise doc.fail(("steps", index, "weight"), "weights never decrease: a unit in a slice stays in it")
        name = f"step {index}" if step.name is None else str(step.name)
        steps.append(Step(name, step.weight, step.min_responses, step.min_duration))
    known = [m.name for m in catalogue.METRICS]
    slos: list[Slo] = []
    for metric in spec.slos:
        if metric not in known:
            raise doc.fail(("slos", metric), f"unknown metric (known: {', '.join(known)})")
        kind = _CountSloSpec if metric == "acted_on_per_pr" else _SloSpec
        slo = doc.convert(kind, ("slos", metric), _PARSERS)
        slos.append(Slo(metric, slo.slo, slo.severity, slo.margin))
    history: list[Transition] = []
    for index, item in enumerate(spec.history or ()):
        if max(item.from_step, item.to_step) >= len(steps):
            raise doc.fail(
                ("history", index),
                f"malformed transition (from_step and to_step are step indexes, 0 to {len(steps) - 1})",
            )
        arms = (item.candidate, item.previous_candidate) if item.action == "retarget" else (None, None)
        if item.action == "retarget" and None in arms:
            raise doc.fail(
                ("history", index), "malformed transition (a retarget records candidate and previous_candidate)"
            )
        candidate, previous = (None if arm is None else _arm(arm) for arm in arms)
        fields = msgspec.structs.asdict(item) | {"candidate": candidate}
        del fields["previous_candidate"]
        history.append(Transition(**fields, previous=previous))
    return Plan(
        rollout_id=spec.rollout,
        contract=spec.contract,
        baseline=_arm(spec.baseline),
        candidate=_arm(spec.candidate),
        unit=spec.unit,
        salt=spec.salt,
        alpha=spec.alpha,
        statistics=spec.statistics,
        steps=tuple(steps),
        slos=tuple(slos),
        legacy_window=spec.legacy_window,
        history=tuple(history),
        source=doc.source,
    )
