"""A service's parsers, built from the project's state in one call: the release lock and the active rollout.

``load_serving(root, contract)`` reads the contract, its lock and its active plan (the plan under
``rollout/<contract>/`` whose candidate is the newest prompt) and returns a ``Serving``: which arm a unit gets
(never a candidate the parser cannot read yet) and one parser per arm, each under its arm's policy
(``promptops.rollout.policies.arm_policy``). A promotion, a new rollout or a retired major line therefore needs
no edit of the contract's ``policy:``: rebuild the ``Serving`` when the project's files change. Without a plan,
both arms are the contract's default policy (the release it pins).

``Serving.build(contract, lock, plan)`` does the same from loaded objects. Nothing here reads the environment
or the clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from promptops.core.contract import Contract, load_contract
from promptops.core.errors import PromptopsError
from promptops.core.lock import ReleaseLock, load_lock
from promptops.parsing import ChangedFiles, ParseOutcome, Parser
from promptops.rollout.assign import BASELINE, CANDIDATE, Assignment, assign
from promptops.rollout.plan import ROLLOUT_DIR, Arm, Plan, load_plan
from promptops.rollout.policies import arm_policy, candidate_unreadable

ARMS = (BASELINE, CANDIDATE)


class ServingError(PromptopsError):
    """The project's state names no single active rollout, or an arm that does not exist."""


@dataclass(frozen=True)
class Serving:
    """What a service renders and parses for each unit, from the lock and the active plan."""

    contract: Contract
    plan: Plan | None
    arms: Mapping[str, Arm]  # the versions each arm renders and parses
    parsers: Mapping[str, Parser]  # one parser per arm, under the arm's policy
    unreadable: str | None  # why no unit gets the candidate yet (None: the parser reads it)

    @classmethod
    def build(
        cls, contract: Contract, lock: ReleaseLock, plan: Plan | None = None, *, fast_path: bool = True
    ) -> Serving:
        if plan is not None and plan.contract != contract.name:
            raise ServingError(f"{plan.source}: the plan is for contract {plan.contract}, not {contract.name}")
        if plan is None:
            policy = contract.default_policy
            release = lock.get(policy.prompt_version)
            schema = release.schema_version if release is not None else policy.schema_floor
            arm = Arm(policy.prompt_version, schema)
            parser = Parser(contract, policy, fast_path=fast_path)
            return cls(contract, None, {BASELINE: arm, CANDIDATE: arm}, {BASELINE: parser, CANDIDATE: parser}, None)
        arms = {BASELINE: plan.baseline, CANDIDATE: plan.candidate}
        parsers = {name: Parser(contract, arm_policy(contract, arm), fast_path=fast_path) for name, arm in arms.items()}
        return cls(contract, plan, arms, parsers, candidate_unreadable(contract, lock, plan))

    def assign(self, unit: str) -> Assignment:
        """The arm ``unit`` gets now; a unit the candidate would get while the parser cannot read it gets the
        baseline, and ``held`` says why."""
        if self.plan is None:
            return Assignment(None, unit, 1.0, 0.0, BASELINE, self.arms[BASELINE])
        return assign(self.plan, unit, unreadable=self.unreadable)

    def parser(self, arm: str | Assignment) -> Parser:
        name = arm.arm if isinstance(arm, Assignment) else arm
        if name not in self.parsers:
            raise ServingError(f"no arm {name!r} (the arms are {', '.join(ARMS)})")
        return self.parsers[name]

    def parse(
        self, raw: str | bytes, changed_files: ChangedFiles | Iterable[str], arm: str | Assignment
    ) -> ParseOutcome:
        """Parse a response served by ``arm`` (a name or the unit's ``Assignment``) under that arm's policy.
        A contract whose output declares no versions is given the arm's."""
        parser = self.parser(arm)
        versions = self.arms[arm.arm if isinstance(arm, Assignment) else arm]
        fields = self.contract.versions
        if fields.schema is None or fields.prompt is None:
            return parser.parse(
                raw,
                changed_files,
                schema_version=str(versions.schema_version),
                prompt_version=str(versions.prompt_version),
            )
        return parser.parse(raw, changed_files)

    def to_dict(self) -> dict[str, Any]:
        return {
            "contract": self.contract.name,
            "rollout": None if self.plan is None else self.plan.rollout_id,
            "weight": 0.0 if self.plan is None or self.unreadable is not None else self.plan.weight,
            "held": self.unreadable,
            "arms": {
                name: {
                    **self.arms[name].to_dict(),
                    "schema_floor": str(self.parsers[name].policy.schema_floor),
                    "pinned_prompt": str(self.parsers[name].policy.prompt_version),
                }
                for name in ARMS
            },
        }


def active_plan(root: Path, contract_name: str) -> Plan | None:
    """The contract's active rollout: of the plans under ``rollout/<contract>/``, the one whose candidate is the
    newest prompt (None when there is no plan). Two plans of the same candidate are ambiguous."""
    directory = root / ROLLOUT_DIR / contract_name
    plans = [
        load_plan(path, path.relative_to(root).as_posix())
        for path in sorted(directory.glob("*.yaml"))
        if path.is_file() and not path.name.startswith(".")
    ]
    if not plans:
        return None
    newest = max(plan.candidate.prompt_version for plan in plans)
    active = [plan for plan in plans if plan.candidate.prompt_version == newest]
    if len(active) > 1:
        names = ", ".join(plan.source for plan in active)
        raise ServingError(f"{names}: {len(active)} plans roll out prompt {newest}: name the rollout to serve")
    return active[0]


def load_serving(root: Path, contract_name: str, rollout_id: str | None = None, *, fast_path: bool = True) -> Serving:
    """The ``Serving`` of ``contract_name`` from the project at ``root``: its contract, release lock and active
    plan (or the plan ``rollout_id``)."""
    contract = load_contract(root, contract_name)
    lock = load_lock(root, contract_name)
    if rollout_id is None:
        plan = active_plan(root, contract_name)
    else:
        path = root / ROLLOUT_DIR / contract_name / f"{rollout_id}.yaml"
        if not path.is_file():
            raise ServingError(f"{ROLLOUT_DIR}/{contract_name}/{rollout_id}.yaml: no such rollout plan")
        plan = load_plan(path, path.relative_to(root).as_posix())
    return Serving.build(contract, lock, plan, fast_path=fast_path)


__all__ = ["Serving", "ServingError", "active_plan", "load_serving"]
