"""Per-arm parser policies: how each arm of a rollout is read, by ``ingest`` and by a service.

Baseline and candidate pin different prompt versions, and during a major migration target different major
lines; a response is read with the policy of its arm (``arm_policy``): the arm's prompt pin, under the
contract's schema floor when the arm is in the floor's major line, and from the first known schema of its
own line when the arm brings a newer major. A line older than the floor's is retired: its arm gets the
contract's policy, which rejects it. Responses outside a rollout, or of an arm the plan does not name, keep the
contract's default policy. ``RolloutPolicies`` is picklable (a root path and a cache), so parallel ingest can
use it; ``unknown_names`` words what an ingest read under the default policy for want of a contract, plan or arm.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from promptops.core.contract import Contract, list_contracts, load_contract
from promptops.core.policy import ParserPolicy
from promptops.core.versioning import SchemaVersion, schema_accepted
from promptops.core.wording import count
from promptops.rollout.gate import ARMS
from promptops.rollout.plan import Arm, Plan, load_plan, plan_path

if TYPE_CHECKING:
    from promptops.core.lock import ReleaseLock
    from promptops.store import IngestReport


def arm_floor(contract: Contract, schema: SchemaVersion) -> SchemaVersion | None:
    """The schema floor that reads ``schema``'s major line, or None when that line is retired (older than the
    contract's floor) or has no schema file."""
    floor = contract.default_policy.schema_floor
    if schema.major == floor.major:
        return floor
    if schema.major < floor.major:
        return None
    line = [v for v in contract.shapes if v.major == schema.major]
    return min(line) if line else None


def arm_policy(contract: Contract, arm: Arm) -> ParserPolicy:
    """The policy that reads ``arm``'s responses: its prompt pin, and the floor of its major line (the
    contract's floor for the contract's line, the first known schema of a newer line). A retired line keeps
    the contract's policy, so its responses are rejected as incompatible versions."""
    default = contract.default_policy
    floor = arm_floor(contract, arm.schema_version)
    if floor is None:
        return default
    return replace(default, schema_floor=floor, prompt_version=arm.prompt_version)


def arm_problems(contract: Contract, lock: ReleaseLock, arm: Arm, label: str) -> list[str]:
    """Why the parser cannot read ``arm`` (one sentence each); empty when it can: the arm's prompt is
    released in ``lock`` with the schema it targets, and the arm's policy accepts that schema."""
    release = lock.get(arm.prompt_version)
    if release is None:
        return [f"the {label} prompt {arm.prompt_version} is not released"]
    if release.schema_version != arm.schema_version:
        return [
            f"the {label} prompt {arm.prompt_version} targets schema {release.schema_version}, not {arm.schema_version}"
        ]
    if release.status != "released":
        return [f"the {label} prompt {arm.prompt_version} is {release.status}"]
    floor = contract.default_policy.schema_floor
    if arm.schema_version.major < floor.major:
        return [f"the {label} schema {arm.schema_version} is in a retired major line (the parser floor is {floor})"]
    readable = arm_floor(contract, arm.schema_version)
    if readable is None:
        return [f"the {label} schema {arm.schema_version} has no schema file"]
    if not schema_accepted(readable, arm.schema_version):
        return [f"the parser floor {readable} does not accept the {label} schema {arm.schema_version}"]
    return []


def candidate_unreadable(contract: Contract, lock: ReleaseLock, plan: Plan) -> str | None:
    """Why no unit may be routed to the plan's candidate yet (one sentence), or None when the parser reads it."""
    problems = arm_problems(contract, lock, plan.candidate, "candidate")
    if not problems:
        return None
    return f"the parser cannot read the candidate yet: {'; '.join(problems)}"


class RolloutPolicies:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[tuple[str, str | None, str | None], ParserPolicy] = {}

    def __call__(self, contract_name: str, rollout_id: str | None, arm: str | None) -> ParserPolicy:
        key = (contract_name, rollout_id, arm)
        if key not in self._cache:
            self._cache[key] = self._resolve(*key)
        return self._cache[key]

    def _resolve(self, contract_name: str, rollout_id: str | None, arm: str | None) -> ParserPolicy:
        contract = load_contract(self.root, contract_name, check_schemas=False)
        if rollout_id is None or arm not in ("baseline", "candidate"):
            return contract.default_policy
        path = plan_path(self.root, contract_name, rollout_id)
        if not path.is_file():
            return contract.default_policy
        plan = load_plan(path, path.relative_to(self.root).as_posix())
        return arm_policy(contract, plan.candidate if arm == "candidate" else plan.baseline)


def unknown_names(root: Path, report: IngestReport) -> list[str]:
    """One warning per unknown contract, per rollout id with no plan and per arm a rollout does not have, with
    its record count: a typo would otherwise hide among bad records (an unknown contract) or pass as
    incompatible versions (records of an unknown rollout or arm are read under the contract's default
    policy)."""
    rollouts: Counter[tuple[str, str]] = Counter()
    arms: Counter[tuple[str, str, str]] = Counter()
    contracts: Counter[str] = Counter()
    known = set(list_contracts(root))
    for (contract, rollout_id, arm), records in report.slots.items():
        if contract not in known:
            contracts[contract] += records
            continue
        if rollout_id is None:
            continue
        if not plan_path(root, contract, rollout_id).is_file():
            rollouts[(contract, rollout_id)] += records
        elif arm not in ARMS:
            arms[(contract, rollout_id, "" if arm is None else arm)] += records
    warnings = [
        f"{count(records, 'record')} name contract {contract!r}, which has no versions/{contract}/: not stored "
        "(bad records)"
        for contract, records in sorted(contracts.items())
    ]
    warnings += [
        f"{count(records, 'record')} of contract {contract} name rollout {rollout_id!r}, which has no plan "
        f"(rollout/{contract}/{rollout_id}.yaml): read under the contract's default policy"
        for (contract, rollout_id), records in sorted(rollouts.items())
    ]
    warnings += [
        f"{count(records, 'record')} of rollout {rollout_id!r} ({contract}) name "
        f"{'no arm' if not arm else f'arm {arm!r}'}, not {' or '.join(ARMS)}: read under the contract's default policy"
        for (contract, rollout_id, arm), records in sorted(arms.items())
    ]
    if report.other_slots:
        from promptops.store.ingest import SLOT_LIMIT

        warnings.append(
            f"{count(report.other_slots, 'record')} of more than {SLOT_LIMIT:,} distinct (contract, rollout, arm) "
            "combinations were not checked for unknown rollout ids and arms"
        )
    return warnings
