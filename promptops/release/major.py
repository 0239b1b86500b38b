"""What else must change when a release starts a new major line (docs/breaking-changes.md).

The contract's ``policy:`` reads one major line; a release in a newer line is read, during its rollout, by the
candidate arm's own policy (``promptops.rollout.policies.arm_policy``), and the old line is retired once the
rollout serves every unit. ``release cut`` prints these steps after cutting the first release of a line.
"""

from __future__ import annotations

from promptops.core.contract import CONTRACT_FILE, Contract
from promptops.core.lock import Release
from promptops.rollout.policies import arm_floor


def major_next_steps(contract: Contract, release: Release) -> tuple[str, ...]:
    """The steps left after releasing ``release`` when it is in a newer major line than the contract's parser
    floor (empty otherwise), one sentence each."""
    policy = contract.default_policy
    floor = policy.schema_floor
    schema = release.schema_version
    if schema.major <= floor.major:
        return ()
    new_floor = arm_floor(contract, schema) or schema
    name = contract.name
    rid = f"{name}-{release.version}"
    return (
        f"schema {schema} starts major line {schema.major}: {contract.directory}/{CONTRACT_FILE} keeps "
        f"policy.schema_floor {floor} and policy.prompt_version {policy.prompt_version} (major line {floor.major}) "
        f"until the old line is retired, so `validate`, `merge` and ingest outside a rollout reject "
        f"{schema.major}.x answers until then",
        f"roll it out: `promptops rollout new {name}` writes a plan whose first step is the parser stage (no "
        f"traffic until the parser reads schema {schema})",
        f"serve with `promptops.serving.load_serving(root, {name!r})`: each arm is parsed under its own policy, "
        f"both major lines during the rollout, and no unit gets {release.version} before the parser reads it",
        f"once the rollout serves every unit: `promptops rollout retire rollout/{name}/{rid}.yaml` raises "
        f"policy.schema_floor to {new_floor} and pins policy.prompt_version {release.version}",
    )
