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
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ruamel.yaml import YAML

from promptops import strict_yaml
from promptops.errors import VersionError
from promptops.files import write_atomic
from promptops.rollout.planfile import PlanError, plan_lock, read_plan_text, remove_dead_temps
from promptops.rollout.stats import ALWAYS_VALID, METHODS
from promptops.store import catalogue
from promptops.versioning import PromptVersion, SchemaVersion

__all__ = ["PlanError"]  # raised by every loader here; defined beside the file reader

ROLLOUT_DIR = "rollout"
UNITS = ("pr", "repo", "request")
SEVERITIES = ("critical", "warning")
ACTIONS = ("promote", "rollback", "resume", "retarget")
_DURATION = re.compile(r"(\d{1,12})([smhdw])\Z")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# Ranges of a plan's numbers: beyond them the statistics overflow or ask for more responses than exist.
ALPHA_RANGE = (1e-6, 0.5)  # exclusive of 0.5
RATE_MIN = 1e-6  # smallest SLO or margin: a zero-failure sample of ~14 million responses at alpha 1e-6
MAX_MIN_RESPONSES = 10**9
MAX_DURATION = timedelta(days=3660)  # ten years
MAX_STEPS = 100


@dataclass(frozen=True)
class Arm:
    prompt_version: PromptVersion
    schema_version: SchemaVersion

    def to_dict(self) -> dict[str, str]:
        return {"prompt_version": str(self.prompt_version), "schema_version": str(self.schema_version)}


@dataclass(frozen=True)
class Step:
    name: str
    weight: float  # share of units that get the candidate
    min_responses: int = 0  # per arm, before the step can be promoted
    min_duration: timedelta = timedelta(0)


@dataclass(frozen=True)
class Slo:
    metric: str
    slo: float  # highest acceptable rate of the per-response indicator
    severity: str = "critical"  # critical: a breach fails the gate; warning: it warns
    margin: float | None = None  # largest acceptable increase over the baseline (non-inferiority)


@dataclass(frozen=True)
class Transition:
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


@dataclass(frozen=True)
class Plan:
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
    data = _read(path, source)
    return _Reader(data, source).plan(path.stem)


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


def parse_duration(text: str) -> timedelta:
    match = _DURATION.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{_short(text)} is not a duration such as 30m, 24h or 14d")
    seconds = int(match[1]) * _SECONDS[match[2]]
    if seconds > MAX_DURATION.total_seconds():
        raise ValueError(f"{_short(text)} is longer than {MAX_DURATION.days} days")
    return timedelta(seconds=seconds)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _yaml() -> YAML:
    from ruamel.yaml import YAML  # only appends round-trip; reading uses PyYAML's C scanner

    round_trip = YAML()  # comments, order and quoting survive an append
    round_trip.preserve_quotes = True
    round_trip.width = 4096
    return round_trip


def _read(path: Path, source: str) -> Any:
    text = read_plan_text(path, source)
    try:
        data = strict_yaml.parse(text)  # duplicate keys refused, the line named
    except strict_yaml.YamlProblem as problem:
        raise PlanError(f"{source}: {problem}") from None
    if not isinstance(data, Mapping):
        raise PlanError(f"{source}: a rollout plan is a YAML mapping")
    return data


class _Reader:
    """Typed access to the plan mapping that names the key at fault in every error."""

    _KEYS = (
        "rollout",
        "contract",
        "description",
        "baseline",
        "candidate",
        "unit",
        "salt",
        "alpha",
        "statistics",
        "steps",
        "slos",
        "legacy_window",
        "history",
    )

    def __init__(self, data: Mapping[str, Any], source: str) -> None:
        self._data = data
        self._source = source

    def fail(self, key: str, problem: str) -> PlanError:
        return PlanError(f"{self._source}: {key}: {problem}")

    def plan(self, stem: str) -> Plan:
        unknown = [str(k) for k in self._data if k not in self._KEYS]
        if unknown:
            raise self.fail(unknown[0], "unknown key (check the spelling)")
        rollout_id = self._string("rollout")
        if rollout_id != stem:
            raise self.fail("rollout", f"is {rollout_id!r} but the file is {stem}.yaml")
        steps = self._steps()
        history = self._history(len(steps))
        unit = self._string("unit")
        if unit not in UNITS:
            raise self.fail("unit", f"must be one of {', '.join(UNITS)}")
        alpha = self._number("alpha", self._data.get("alpha", 0.05), *ALPHA_RANGE, exclusive_high=True)
        statistics = self._data.get("statistics", ALWAYS_VALID)
        if statistics not in METHODS:
            raise self.fail("statistics", f"must be one of {', '.join(METHODS)}, got {_short(statistics)}")
        legacy = self._data.get("legacy_window", "14d")
        try:
            legacy_window = parse_duration(legacy)
        except ValueError as problem:
            raise self.fail("legacy_window", str(problem)) from None
        return Plan(
            rollout_id=rollout_id,
            contract=self._string("contract"),
            baseline=self._arm("baseline"),
            candidate=self._arm("candidate"),
            unit=unit,
            salt=self._string("salt"),
            alpha=alpha,
            steps=steps,
            slos=self._slos(),
            legacy_window=legacy_window,
            history=history,
            source=self._source,
            statistics=str(statistics),
        )

    def _string(self, key: str) -> str:
        value = self._data.get(key)
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "required, a non-empty string")
        if len(value) > 200:
            raise self.fail(key, "longer than 200 characters")
        return value

    def _number(self, key: str, value: Any, low: float, high: float, *, exclusive_high: bool = False) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, "must be a number")
        try:
            number = float(value)
        except OverflowError:  # an integer too large for a float
            number = math.inf
        if not math.isfinite(number) or number < low or number > high or (exclusive_high and number == high):
            upper = f"up to, not including, {high:g}" if exclusive_high else f"to {high:g}"
            raise self.fail(key, f"must be a number from {low:g} {upper}")
        return number

    def _arm(self, key: str) -> Arm:
        value = self._data.get(key)
        if not isinstance(value, Mapping):
            raise self.fail(key, "required, a mapping with prompt_version and schema_version")
        extra = [str(k) for k in value if k not in ("prompt_version", "schema_version")]
        if extra:
            raise self.fail(f"{key}.{extra[0]}", "unknown key")
        try:
            prompt = PromptVersion.parse(str(value.get("prompt_version")))
        except VersionError as problem:
            raise self.fail(f"{key}.prompt_version", str(problem)) from None
        try:
            schema = SchemaVersion.parse(str(value.get("schema_version")))
        except VersionError as problem:
            raise self.fail(f"{key}.schema_version", str(problem)) from None
        return Arm(prompt, schema)

    def _steps(self) -> tuple[Step, ...]:
        raw = self._data.get("steps")
        if not isinstance(raw, list) or not raw:
            raise self.fail("steps", "required, a non-empty list")
        if len(raw) > MAX_STEPS:
            raise self.fail("steps", f"at most {MAX_STEPS} steps")
        steps: list[Step] = []
        for index, item in enumerate(raw):
            key = f"steps[{index}]"
            if not isinstance(item, Mapping):
                raise self.fail(key, "must be a mapping")
            extra = [str(k) for k in item if k not in ("name", "weight", "min_responses", "min_duration")]
            if extra:
                raise self.fail(f"{key}.{extra[0]}", "unknown key")
            name = item.get("name", f"step {index}")
            weight = self._number(f"{key}.weight", item.get("weight"), 0.0, 1.0)
            if steps and weight < steps[-1].weight:
                raise self.fail(f"{key}.weight", "weights never decrease: a unit in a slice stays in it")
            minimum = item.get("min_responses", 0)
            if isinstance(minimum, bool) or not isinstance(minimum, int) or not 0 <= minimum <= MAX_MIN_RESPONSES:
                raise self.fail(f"{key}.min_responses", f"must be a whole number from 0 to {MAX_MIN_RESPONSES:,}")
            try:
                duration = parse_duration(item.get("min_duration", "0s"))
            except ValueError as problem:
                raise self.fail(f"{key}.min_duration", str(problem)) from None
            if not isinstance(name, str | int) or len(str(name)) > 100:
                raise self.fail(f"{key}.name", "must be a short string")
            steps.append(Step(str(name), weight, minimum, duration))
        return tuple(steps)

    def _slos(self) -> tuple[Slo, ...]:
        raw = self._data.get("slos")
        if not isinstance(raw, Mapping) or not raw:
            raise self.fail("slos", "required, a mapping of metric to {slo, margin, severity}")
        slos: list[Slo] = []
        for metric, spec in raw.items():
            key = f"slos.{metric}"
            if metric not in (known := [m.name for m in catalogue.METRICS]):
                raise self.fail(key, f"unknown metric (known: {', '.join(known)})")
            if not isinstance(spec, Mapping):
                raise self.fail(key, "must be a mapping with slo, and optionally margin and severity")
            extra = [str(k) for k in spec if k not in ("slo", "margin", "severity")]
            if extra:
                raise self.fail(f"{key}.{extra[0]}", "unknown key")
            slo = self._number(f"{key}.slo", spec.get("slo"), RATE_MIN, 1.0, exclusive_high=True)
            margin = spec.get("margin")
            if margin is not None:
                margin = self._number(f"{key}.margin", margin, RATE_MIN, 1.0, exclusive_high=True)
            severity = spec.get("severity", "critical")
            if severity not in SEVERITIES:
                raise self.fail(f"{key}.severity", f"must be one of {', '.join(SEVERITIES)}")
            slos.append(Slo(str(metric), slo, severity, margin))
        return tuple(slos)

    def _history(self, steps: int) -> tuple[Transition, ...]:
        raw = self._data.get("history") or []
        if not isinstance(raw, list):
            raise self.fail("history", "must be a list")
        transitions: list[Transition] = []
        for index, item in enumerate(raw):
            key = f"history[{index}]"
            if not isinstance(item, Mapping):
                raise self.fail(key, "must be a mapping")
            try:
                at = datetime.fromisoformat(str(item["at"]))  # strict_yaml leaves timestamps as written
                if at.tzinfo is None:
                    at = at.replace(tzinfo=UTC)  # the history is written in UTC
                steps_moved = [item["from_step"], item["to_step"]]
                if any(isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < steps for s in steps_moved):
                    raise ValueError(f"from_step and to_step are step indexes, 0 to {steps - 1}")
                action = str(item["action"])
                if action not in ACTIONS:
                    raise ValueError(f"action must be one of {', '.join(ACTIONS)}")
                transition = Transition(
                    at=at,
                    by=str(item["by"]),
                    action=action,
                    from_step=steps_moved[0],
                    to_step=steps_moved[1],
                    verdict=str(item["verdict"]),
                    reason=str(item["reason"]),
                    forced=bool(item.get("forced", False)),
                    candidate=self._history_arm(item, "candidate", key) if action == "retarget" else None,
                    previous=self._history_arm(item, "previous_candidate", key) if action == "retarget" else None,
                )
            except (KeyError, TypeError, ValueError, OverflowError) as problem:
                raise self.fail(key, f"malformed transition ({str(problem)[:120]})") from None
            transitions.append(transition)
        return tuple(transitions)

    def _history_arm(self, item: Mapping[str, Any], name: str, key: str) -> Arm:
        value = item.get(name)
        if not isinstance(value, Mapping):
            raise ValueError(f"a retarget records {name} (prompt_version and schema_version)")
        try:
            return Arm(
                PromptVersion.parse(str(value.get("prompt_version"))),
                SchemaVersion.parse(str(value.get("schema_version"))),
            )
        except VersionError as problem:
            raise ValueError(f"{name}: {problem}") from None
