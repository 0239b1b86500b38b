"""Plans are validated on load, name the key at fault, and keep their layout when history is appended."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from promptops.rollout.plan import PlanError, Transition, append_transition, load_plan
from tests.rollout.plans import PLAN, write_plan


def test_valid_plan(tmp_path: Path) -> None:
    plan = load_plan(write_plan(tmp_path), "rollout/review-result/review-1.1.yaml")
    assert (plan.rollout_id, plan.unit, plan.step, plan.weight, plan.rolled_back) == ("review-1.1", "pr", 0, 0.0, False)
    assert [s.weight for s in plan.steps] == [0, 0.05, 0.25, 1.0]
    assert plan.steps[1].min_duration == timedelta(hours=24)
    assert {s.metric: s.margin for s in plan.slos} == {
        "dropped_finding": 0.01,
        "incompatible_version": None,
        "coercion": None,
    }


BROKEN = [
    ("unit: pr", "unit: team", "unit: must be one of pr, repo, request"),
    ("salt: review-1.1", "salt: ''", "salt: required, a non-empty string"),
    ("alpha: 0.05", "alpha: 0.5", "alpha: must be a number from 1e-06 up to, not including, 0.5"),
    ("weight: 0.25,", "weight: 0.01,", "steps[2].weight: weights never decrease"),
    ("weight: 0.25,", "weight: 1.5,", "steps[2].weight: must be a number from 0 to 1"),
    (
        "min_duration: 24h}\n  - {name: ramp",
        "min_duration: 1 day}\n  - {name: ramp",
        "steps[1].min_duration: '1 day' is not a duration",
    ),
    ("min_responses: 300", "min_responses: -1", "steps[1].min_responses: must be a whole number"),
    ("coercion: {slo: 0.2", "coerced: {slo: 0.2", "slos.coerced: unknown metric"),
    (
        "slo: 0.02, margin",
        "slo: 2, margin",
        "slos.dropped_finding.slo: must be a number from 1e-06 up to, not including, 1",
    ),
    ("severity: warning", "severity: minor", "slos.coercion.severity: must be one of critical, warning"),
    ('prompt_version: "1.1.0"', 'prompt_version: "one"', "candidate.prompt_version: prompt version 'one'"),
    ("rollout: review-1.1", "rollout: review-2", "rollout: is 'review-2' but the file is review-1.1.yaml"),
    ("legacy_window: 14d", "legacy_windows: 14d", "legacy_windows: unknown key"),
    ("  - {name: full, weight: 1.0}\n", "  - 7\n", "steps[3]: must be a mapping"),
]


@pytest.mark.parametrize(("old", "new", "message"), BROKEN, ids=[b[2].split(":")[0] for b in BROKEN])
def test_errors_name_the_key(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert old in PLAN
    path = write_plan(tmp_path, PLAN.replace(old, new, 1))
    with pytest.raises(PlanError) as info:
        load_plan(path, "rollout/review-result/review-1.1.yaml")
    assert str(info.value).startswith("rollout/review-result/review-1.1.yaml: ")
    assert message in str(info.value)


def test_steps_must_not_be_empty(tmp_path: Path) -> None:
    start, end = PLAN.index("steps:"), PLAN.index("slos:")
    path = write_plan(tmp_path, PLAN[:start] + "steps: []\n" + PLAN[end:])
    with pytest.raises(PlanError, match="steps: required, a non-empty list"):
        load_plan(path, "p.yaml")


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match=r"plan.yaml: line \d+: invalid YAML"):
        load_plan(write_plan(tmp_path, "rollout: [\n"), "plan.yaml")


def test_a_duplicate_key_is_refused_not_overridden(tmp_path: Path) -> None:
    text = PLAN.replace("alpha: 0.05\n", "alpha: 0.05\nalpha: 0.2\n")
    line = text.splitlines().index("alpha: 0.2") + 1
    with pytest.raises(PlanError) as info:
        load_plan(write_plan(tmp_path, text), "plan.yaml")
    assert str(info.value) == f"plan.yaml: line {line}: invalid YAML: duplicate key 'alpha'"


def test_history_appends_keep_comments_and_move_the_step(tmp_path: Path) -> None:
    path = write_plan(tmp_path)
    at = datetime(2026, 11, 22, 9, 30, tzinfo=UTC)
    plan = append_transition(path, "p.yaml", Transition(at, "dana", "promote", 0, 1, "Passed", "parser ready"))
    assert (plan.step, plan.weight, plan.step_started) == (1, 0.05, at)
    plan = append_transition(path, "p.yaml", Transition(at, "lee", "rollback", 1, 1, "Failed", "drops up"))
    assert (plan.step, plan.weight, plan.rolled_back) == (1, 0.0, True)
    text = path.read_text()
    assert "# read-compat: the parser that accepts 1.1 ships first" in text and "# A staged rollout" in text
    assert text.count("action:") == 2 and "reason: drops up" in text
