"""Is the parser ready for the candidate? The first stage of every rollout (the parser ships before the prompt).

Ready means: both arms' prompt versions are released (the release lock) with the schema each arm targets, the
contract's parser floor accepts both schema versions (same major, minor >= floor), the candidate's schema is no
major change from the baseline's (the compatibility checker), and no candidate response in the store was rejected
for its version. Each unmet condition is one sentence in ``Readiness.problems``.

The schema class is a property of the two locked schema files, so it is computed at the parser stage, where
the issue of readiness is decided; later steps re-check the lock, the floor and the store, which can change.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from promptops.contract import Contract
from promptops.errors import PromptopsError
from promptops.rollout.gate import Readiness, candidate_incompatible
from promptops.rollout.plan import Plan
from promptops.versioning import schema_accepted


def parser_readiness(
    root: Path,
    plan: Plan,
    contract: Contract,
    con: Any | None,
    *,
    schema_class: bool = True,
    until: datetime | None = None,
) -> Readiness:
    """Check readiness; ``con`` is the store's connection (None when there is no store yet).

    ``schema_class``: also classify the baseline-to-candidate schema change with the compatibility checker.
    ``until``: only responses logged up to then count (naive UTC; a replay with ``--now``).
    """
    from promptops.release.lock import load_lock  # releases are only read when a gate runs

    problems: list[str] = []
    try:
        lock = load_lock(root, plan.contract)
    except PromptopsError as problem:
        return Readiness(False, (f"no usable release lock ({problem})",))
    for label, arm in (("baseline", plan.baseline), ("candidate", plan.candidate)):
        release = lock.get(arm.prompt_version)
        if release is None:
            problems.append(f"the {label} prompt {arm.prompt_version} is not released")
        elif release.schema_version != arm.schema_version:
            problems.append(
                f"the {label} prompt {arm.prompt_version} targets schema {release.schema_version}, "
                f"not {arm.schema_version}"
            )
        elif release.status != "released":
            problems.append(f"the {label} prompt {arm.prompt_version} is {release.status}")
        floor = contract.default_policy.schema_floor
        if not schema_accepted(floor, arm.schema_version):
            problems.append(f"the parser floor {floor} does not accept the {label} schema {arm.schema_version}")
    if schema_class and not problems and plan.candidate.schema_version != plan.baseline.schema_version:
        problems += _schema_class_problems(contract, plan)
    if con is not None:
        attempt = plan.attempt_started
        since = None if attempt is None else attempt.astimezone(UTC).replace(tzinfo=None)
        rejected = candidate_incompatible(con, plan, since, until)
        if rejected:
            problems.append(f"{rejected:,} candidate responses were rejected as incompatible versions")
    return Readiness(not problems, tuple(problems))


def _schema_class_problems(contract: Contract, plan: Plan) -> list[str]:
    from promptops.compat import classify

    old, new = plan.baseline.schema_version, plan.candidate.schema_version
    if old not in contract.shapes or new not in contract.shapes:
        return [f"schema {new if new not in contract.shapes else old} is unknown to the parser"]
    change = classify(contract.shape(old).schema, contract.shape(new).schema).change
    if str(change) == "major":
        return [f"schema {old} -> {new} is a major change: a new major needs a parser of its own first"]
    return []
