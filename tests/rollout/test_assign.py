"""Sticky, monotone assignment (docs/rollouts.md, Assignment)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from promptops.rollout.assign import CANDIDATE, assign, bucket
from promptops.rollout.plan import load_plan
from tests.rollout.plans import write_plan


def test_bucket_is_the_documented_hash() -> None:
    digest = hashlib.sha256(b"salt-1.acme/api#42").hexdigest()
    assert bucket("salt-1", "acme/api#42") == int(digest[:15], 16) / 16**15
    assert 0 <= bucket("s", "") < 1


def test_split_is_within_half_a_point_of_the_weight(tmp_path: Path) -> None:
    plan = load_plan(write_plan(tmp_path), "plan.yaml")
    units = [f"acme/repo{i % 97}#{i}" for i in range(100_000)]
    for weight in (0.05, 0.25, 0.5):
        share = sum(assign(plan, unit, weight).arm == CANDIDATE for unit in units) / len(units)
        assert abs(share - weight) < 0.005, (weight, share)


def test_sticky_across_calls_and_monotone_across_ramps(tmp_path: Path) -> None:
    plan = load_plan(write_plan(tmp_path), "plan.yaml")
    units = [f"u{i}" for i in range(20_000)]
    at_5 = {u for u in units if assign(plan, u, 0.05).arm == CANDIDATE}
    assert at_5 == {u for u in units if assign(plan, u, 0.05).arm == CANDIDATE}  # same answer every time
    at_25 = {u for u in units if assign(plan, u, 0.25).arm == CANDIDATE}
    assert at_5 < at_25  # everyone in the 5% slice stays in at 25%
    assert all(assign(plan, u, 1.0).arm == CANDIDATE for u in units[:100])
    assert all(assign(plan, u, 0.0).arm != CANDIDATE for u in units[:100])


def test_assignment_carries_the_versions_to_render(tmp_path: Path) -> None:
    plan = load_plan(write_plan(tmp_path), "plan.yaml")
    chosen = assign(plan, "acme/api#1", 1.0)
    assert (str(chosen.versions.prompt_version), chosen.to_dict()["arm"]) == ("1.1.0", "candidate")
