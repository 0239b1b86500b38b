"""Plans are validated on load, name the key at fault, and keep their layout when history is appended."""

from __future__ import annotations

from collections.abc import Callable
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
        "rejected": None,
        "all_findings_dropped": None,
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


def _line_of(text: str, needle: str, occurrence: int = 1) -> int:
    """1-based line of the ``occurrence``-th line of ``text`` that contains ``needle``."""
    return [n for n, line in enumerate(text.splitlines(), 1) if needle in line][occurrence - 1]


# (name, (text in PLAN, its replacement), the message after "plan.yaml: line N: ", what N is: (needle, occurrence)).
# Each refusal is one line naming the file, the line and the key or value; a key given twice is never
# silently overridden by its second value (PyYAML's default).
_DUPLICATE = PLAN.replace("alpha: 0.05\n", "alpha: 0.05\nalpha: 0.2\n")
REFUSED = [
    (
        "top-level key twice",
        ("alpha: 0.05\n", "alpha: 0.05\nalpha: 0.2\n"),
        f"invalid YAML: duplicate key 'alpha' (first on line {_line_of(_DUPLICATE, 'alpha: 0.05')})",
        ("alpha: 0.2", 1),
    ),
    (
        "key twice in a step",
        ("{name: full, weight: 1.0}", "{name: full, weight: 1.0, weight: 0.5}"),
        f"invalid YAML: duplicate key 'weight' (first on line {_line_of(PLAN, 'name: full')})",
        ("name: full", 1),
    ),
    (
        "metric twice in slos",
        ("  coercion: {slo: 0.2", "  dropped_finding: {slo: 0.5}\n  coercion: {slo: 0.2"),
        f"invalid YAML: duplicate key 'dropped_finding' (first on line {_line_of(PLAN, 'dropped_finding')})",
        ("dropped_finding", 2),
    ),
    (
        "control character",
        ("salt: review-1.1", "salt: review\x07-1.1"),
        "invalid YAML: unacceptable character #x0007: control characters are not allowed",
        ("salt:", 1),
    ),
    (
        "5,000-digit integer",
        ("min_responses: 300", f"min_responses: {'9' * 5000}"),
        "a value cannot be read: ",
        ("min_responses: 999", 1),
    ),
]


@pytest.mark.parametrize(("change", "message", "where"), [case[1:] for case in REFUSED], ids=[c[0] for c in REFUSED])
def test_a_broken_plan_file_is_refused_naming_file_and_line(
    tmp_path: Path, change: tuple[str, str], message: str, where: tuple[str, int]
) -> None:
    text = PLAN.replace(*change, 1)
    assert text != PLAN
    with pytest.raises(PlanError) as info:
        load_plan(write_plan(tmp_path, text), "plan.yaml")
    error = str(info.value)
    assert error.startswith(f"plan.yaml: line {_line_of(text, *where)}: {message}"), error
    assert "\n" not in error


def _not_utf8(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"salt: review-1.1", b"salt: review-\xe9-1.1"))


FILE_REFUSED = [
    ("missing", Path.unlink, "plan.yaml: no such rollout plan"),
    ("directory", lambda path: (path.unlink(), path.mkdir()), "plan.yaml: is a directory, not a file"),
    (
        "symlink to a device",
        lambda path: (path.unlink(), path.symlink_to("/dev/zero")),
        "plan.yaml: not a regular file",
    ),
    ("over 1 MiB", lambda path: path.write_text(PLAN + "#" * (1 << 20)), "plan.yaml: larger than 1 MiB"),
    ("not UTF-8", _not_utf8, f"plan.yaml: line {_line_of(PLAN, 'salt:')}: not UTF-8 text (byte 0xE9)"),
]


@pytest.mark.parametrize(("damage", "message"), [c[1:] for c in FILE_REFUSED], ids=[c[0] for c in FILE_REFUSED])
def test_a_plan_that_is_not_a_readable_file_is_refused_in_one_line(
    tmp_path: Path, damage: Callable[[Path], object], message: str
) -> None:
    path = write_plan(tmp_path)
    damage(path)
    with pytest.raises(PlanError) as info:
        load_plan(path, "plan.yaml")
    assert str(info.value) == message


_ENTRY = "history:\n- {{at: {at}, by: dana, action: promote, from_step: 0, to_step: 1, verdict: Passed, reason: r}}\n"


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        ("2026-11-02T09:00:00Z", datetime(2026, 11, 2, 9, tzinfo=UTC)),
        ("'2026-11-02T09:00:00+00:00'", datetime(2026, 11, 2, 9, tzinfo=UTC)),
        ("2026-11-02 10:00:00+01:00", datetime(2026, 11, 2, 9, tzinfo=UTC)),
        ("2026-11-02T09:00:00", datetime(2026, 11, 2, 9, tzinfo=UTC)),  # no zone: the history is in UTC
        ("2026-11-02", datetime(2026, 11, 2, tzinfo=UTC)),
    ],
)
def test_a_history_time_may_be_written_unquoted(tmp_path: Path, at: str, expected: datetime) -> None:
    plan = load_plan(write_plan(tmp_path, PLAN + _ENTRY.format(at=at)), "plan.yaml")
    assert plan.history[0].at == expected


def test_an_impossible_history_time_is_named_by_its_key(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match=r"^plan.yaml: line 22: history\[0\]\.at: not an ISO 8601 time \("):
        load_plan(write_plan(tmp_path, PLAN + _ENTRY.format(at="2026-02-30T09:00:00Z")), "plan.yaml")


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
