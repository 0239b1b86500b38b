"""Retire the old major line once a major rollout serves every unit: one reviewed edit of ``contract.yaml``.

During a major migration each arm is read under its own policy (``promptops.rollout.policies.arm_policy``), so
the contract's ``policy:`` keeps the old line's floor. Once the plan is at full traffic, ``retire`` raises
``policy.schema_floor`` to the floor of the candidate's line and pins ``policy.prompt_version`` to the candidate:
from then on the old line's answers are rejected (``incompatible_version``) by every parser built from the
project, and ``validate``, ``merge`` and ingest outside a rollout read the new line. Only the two scalars change;
the file's comments and layout stay as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from promptops.core.contract import CONTRACT_FILE, Contract, load_contract, locate_contract
from promptops.core.errors import ContractError, PromptopsError
from promptops.core.files import directory_lock, write_atomic
from promptops.core.lock import ReleaseLock
from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.rollout.plan import Plan
from promptops.rollout.policies import arm_floor, arm_problems


class RetireRefused(PromptopsError):
    """The plan is not at a point where the old major line can be retired (exit 2)."""


@dataclass(frozen=True)
class Retirement:
    contract: str
    source: str  # the contract.yaml edited, repo-relative
    retired_major: int
    schema_floor: tuple[SchemaVersion, SchemaVersion]  # before, after
    prompt_version: tuple[PromptVersion, PromptVersion]  # before, after

    def to_dict(self) -> dict[str, Any]:
        return {
            "contract": self.contract,
            "file": self.source,
            "retired_major": self.retired_major,
            "schema_floor": {"from": str(self.schema_floor[0]), "to": str(self.schema_floor[1])},
            "prompt_version": {"from": str(self.prompt_version[0]), "to": str(self.prompt_version[1])},
        }


def plan_retirement(contract: Contract, lock: ReleaseLock, plan: Plan) -> Retirement:
    """What retiring the old major line of ``plan`` changes; RetireRefused when it cannot be retired yet."""
    policy = contract.default_policy
    candidate = plan.candidate
    if plan.weight < 1:
        where = "rolled back" if plan.rolled_back else f"at {plan.weight:.0%} (step {plan.step})"
        raise RetireRefused(
            f"{plan.source}: the candidate is {where}: promote it to full traffic before retiring major line "
            f"{policy.schema_floor.major}"
        )
    if candidate.schema_version.major <= policy.schema_floor.major:
        raise RetireRefused(
            f"{plan.source}: nothing to retire: the candidate's schema {candidate.schema_version} is in major line "
            f"{policy.schema_floor.major}, the line of the parser floor {policy.schema_floor}"
        )
    problems = arm_problems(contract, lock, candidate, "candidate")
    floor = arm_floor(contract, candidate.schema_version)
    if problems or floor is None:
        raise RetireRefused(f"{plan.source}: {'; '.join(problems) or 'the candidate has no schema file'}")
    return Retirement(
        contract.name,
        f"{contract.directory}/{CONTRACT_FILE}",
        policy.schema_floor.major,
        (policy.schema_floor, floor),
        (policy.prompt_version, candidate.prompt_version),
    )


def retire(root: Path, retirement: Retirement) -> Contract:
    """Write ``retirement`` into the project's contract.yaml (atomically) and return the contract as loaded."""
    directory, rel_dir = locate_contract(root, retirement.contract)
    if rel_dir != retirement.source.rsplit("/", 1)[0] or not (directory / CONTRACT_FILE).is_file():
        raise ContractError(retirement.source, "not the project's own contract: copy it into versions/ first")
    path = directory / CONTRACT_FILE
    # the contract's lock, as release cut takes it: a cut never plans against a policy changing under it
    with directory_lock(directory, f"{rel_dir}/", wait=False):
        text = path.read_text(encoding="utf-8")
        edited = _set_policy(
            text,
            retirement.source,
            {"schema_floor": str(retirement.schema_floor[1]), "prompt_version": str(retirement.prompt_version[1])},
        )
        write_atomic(path, edited.encode("utf-8"), mode=0o644)
        try:
            return load_contract(root, retirement.contract)
        except PromptopsError:
            write_atomic(path, text.encode("utf-8"), mode=0o644)  # never leave a contract that does not load
            raise


def _set_policy(text: str, source: str, values: dict[str, str]) -> str:
    """``text`` with the scalars ``policy.<key>`` replaced by quoted ``values`` (each key must be there)."""
    try:
        document = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as problem:
        raise ContractError(source, f"not YAML: {str(problem).splitlines()[0]}") from None
    policy = None
    if isinstance(document, yaml.MappingNode):
        policy = next((v for k, v in document.value if getattr(k, "value", None) == "policy"), None)
    if not isinstance(policy, yaml.MappingNode):
        raise ContractError(source, "policy: no policy section to edit")
    spans: list[tuple[int, int, str]] = []
    for key, value in policy.value:
        if getattr(key, "value", None) in values and isinstance(value, yaml.ScalarNode):
            spans.append((value.start_mark.index, value.end_mark.index, f"'{values[key.value]}'"))
    found = len(spans)
    if found != len(values):
        raise ContractError(source, f"policy: expected {', '.join(values)} as plain values")
    for start, end, replacement in sorted(spans, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text
