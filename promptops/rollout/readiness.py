"""Is the parser ready for the candidate? The first stage of every rollout (the parser ships before the prompt).

Ready means: both arms' prompt versions are released (the release lock) with the schema each arm targets, each
arm's policy accepts its schema (``arm_policy``: the contract's floor for its major line, the first schema of a
newer major line, never a retired line), a schema change within one major line is no more than minor (the
compatibility checker), and no candidate response in the store was rejected for its version. At full traffic
only the candidate counts: the baseline's line may be retired. Each unmet condition is one sentence in
``Readiness.problems``.

The schema class is a property of the two locked schema files, so it is computed at the parser stage, where
the issue of readiness is decided; later steps re-check the lock, the floor and the store, which can change.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from promptops.core.contract import Contract
from promptops.core.errors import PromptopsError
from promptops.rollout.gate import Readiness
from promptops.rollout.plan import Plan
from promptops.rollout.policies import arm_problems
from promptops.store.source import CountsSource, Window


def parser_readiness(
    root: Path,
    plan: Plan,
    contract: Contract,
    source: CountsSource | None,
    *,
    schema_class: bool = True,
    until: datetime | None = None,
) -> Readiness:
    """Check readiness; ``source`` is the store (None when there is no store yet).

    ``schema_class``: also classify the baseline-to-candidate schema change with the compatibility checker.
    ``until``: only responses logged up to then count (naive UTC; a replay with ``--now``).
    """
    from promptops.core.lock import load_lock  # releases are only read when a gate runs

    problems: list[str] = []
    try:
        lock = load_lock(root, plan.contract)
    except PromptopsError as problem:
        return Readiness(False, (f"no usable release lock ({problem})",))
    # At full traffic no unit is served the baseline, so its line may already be retired (`rollout retire`).
    arms = (
        (("candidate", plan.candidate),)
        if plan.weight >= 1
        else (
            ("baseline", plan.baseline),
            ("candidate", plan.candidate),
        )
    )
    for label, arm in arms:
        problems += arm_problems(contract, lock, arm, label)
    if schema_class and not problems and plan.candidate.schema_version != plan.baseline.schema_version:
        problems += _schema_class_problems(contract, plan)
    if source is not None:
        attempt = plan.attempt_started
        since = None if attempt is None else attempt.astimezone(UTC).replace(tzinfo=None)
        window = Window(plan.contract, plan.rollout_id, since, until, arm="candidate")
        rejected = source.hits(window, "incompatible_version")
        if rejected:
            problems.append(f"{rejected:,} candidate responses were rejected as incompatible versions")
    return Readiness(not problems, tuple(problems))


def _schema_class_problems(contract: Contract, plan: Plan) -> list[str]:
    """A schema change within one major line must be no more than minor (the compatibility checker); a new
    major line is read by a policy of its own (``arm_policy``), so it needs no class."""
    from promptops.compat import classify

    old, new = plan.baseline.schema_version, plan.candidate.schema_version
    if old not in contract.shapes or new not in contract.shapes:
        return [f"schema {new if new not in contract.shapes else old} is unknown to the parser"]
    if old.major != new.major:
        return [] if new.major > old.major else [f"schema {old} -> {new} goes back to an older major line"]
    change = classify(contract.shape(old).schema, contract.shape(new).schema).change
    if str(change) == "major":
        return [f"schema {old} -> {new} is a major change within major line {new.major}: it needs a new major"]
    return []
