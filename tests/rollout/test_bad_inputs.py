"""Bad plans and flags of the rollout, report, merge and review-gate commands: one line, a documented exit code.

Every case here crashed with an internal error, hung, or was accepted silently before the plans and flags
were range-checked; each runs the real CLI on real files.
"""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.helpers import REPO_ROOT, empty_store

PLAN = "rollout/review-result/review-1.1.yaml"
NOW = "2026-11-25T06:00:00Z"


@pytest.fixture
def root(full_project: Path) -> Path:
    shutil.copytree(REPO_ROOT / "rollout", full_project / "rollout")
    empty_store(full_project / ".promptops" / "diagnostics.duckdb")  # the default store: the plan is at fault
    return full_project


def _commands(root: Path) -> dict[str, list[str]]:
    plan = str(root / PLAN)
    return {
        "plan": ["rollout", "plan", plan],
        "gate": ["rollout", "gate", plan, "--now", NOW],
        "promote": ["rollout", "promote", plan, "--by", "t", "--now", NOW],
        "status": ["rollout", "status", plan, "--now", NOW],
        "report": ["report", "--contract", "review-result", "--now", NOW, "--out", str(root / "reports")],
    }


def _replace(old: str, new: str) -> Callable[[Path], None]:
    def damage(path: Path) -> None:
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    return damage


def _bytes(path: Path) -> None:
    path.write_bytes(path.read_bytes().replace(b"salt: review-1.1", b"salt: review-\xe9-1.1"))


def _dev_zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def _huge(path: Path) -> None:
    path.write_bytes(path.read_bytes() + b"# " + b"x" * (2 << 20) + b"\n")


PLANS = {
    "alpha 1e-300": (_replace("alpha: 0.05", "alpha: 1e-300"), "alpha: must be a number"),
    "slo 1e-300": (_replace("slo: 0.03,", "slo: 1.0e-300,"), "slos.dropped_finding.slo: must be a number"),
    "margin nan": (_replace("margin: 0.02", "margin: .nan"), "slos.dropped_finding.margin: must be a number"),
    "huge min_duration": (
        _replace("min_duration: 24h}\n  - {name: ramp", "min_duration: 99999999999h}\n  - {name: ramp"),
        "steps[1].min_duration: '99999999999h' is longer than",
    ),
    "digits of min_duration": (
        _replace("min_duration: 24h}\n  - {name: ramp", f"min_duration: {'9' * 5000}s}}\n  - {{name: ramp"),
        "steps[1].min_duration: ",
    ),
    "5,000-digit min_responses": (
        _replace("min_responses: 500", f"min_responses: {'9' * 5000}"),
        "review-1.1.yaml: line 14: a value cannot be read",
    ),
    "min_responses 10**12": (
        _replace("min_responses: 500", "min_responses: 1000000000000"),
        "steps[1].min_responses: must be a whole number from 0 to",
    ),
    "legacy window of centuries": (_replace("legacy_window: 14d", "legacy_window: 99999w"), "legacy_window: "),
    "non-UTF-8 byte": (_bytes, "review-1.1.yaml: line 9: not UTF-8"),
    "symlink to /dev/zero": (_dev_zero, "review-1.1.yaml: not a regular file"),
    "larger than a plan": (_huge, "review-1.1.yaml: larger than 1 MiB"),
    "unknown contract": (_replace("contract: review-result", "contract: no-such"), "contract: unknown contract"),
    "contract outside versions": (
        _replace("contract: review-result", "contract: ../templates"),
        "contract: unknown contract '../templates'",
    ),
}


@pytest.mark.parametrize("command", ["plan", "gate", "promote", "status", "report"])
@pytest.mark.parametrize("case", sorted(PLANS))
def test_a_bad_plan_is_one_line_and_exit_3(cli: Cli, root: Path, case: str, command: str) -> None:
    damage, message = PLANS[case]
    damage(root / PLAN)
    if command == "report" and case.startswith(("unknown contract", "contract outside")):
        message = "contract: is "  # the report reads the plans of one contract: the misplaced plan is named
    code, out, err = cli(root, *_commands(root)[command])
    assert code == 3, out + err
    assert len(err.splitlines()) == 1 and "internal error" not in err, err
    assert PLAN.split("/")[-1] in err and message in err, err


def test_a_history_rewritten_by_hand_is_checked(cli: Cli, root: Path) -> None:
    plan = root / PLAN
    plan.write_text(
        plan.read_text(encoding="utf-8")
        + "history:\n- {at: '2026-11-02T09:00:00Z', by: x, action: promote, from_step: 0, to_step: 99,"
        " verdict: Passed, reason: r}\n",
        encoding="utf-8",
    )
    code, _, err = cli(root, "rollout", "status", str(plan))
    assert code == 3 and "history[0]: malformed transition (from_step and to_step are step indexes" in err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--hours", "nan"), "'nan' is not a finite number"),
        (("--hours", "inf"), "--hours"),
        (("--hours", "1e308"), "--hours"),
        (("--start", "9999-12-31T23:00:00Z"), "the window ends after 9000"),
        (("--start", "0001-01-01T00:00:00+05:00"), "is not an ISO 8601 time"),
        (("--weight", "nan"), "'nan' is not a finite number"),
        (("--weight", "-0.1"), "--weight"),
        (("--responses", "0"), "--responses"),
        (("--responses", "99999999999"), "--responses"),
        (("--seed", "-1"), "--seed"),
    ],
)
def test_simulate_refuses_bad_flags(cli: Cli, root: Path, flags: tuple[str, ...], message: str) -> None:
    out = root / "log.jsonl"
    code, _, err = cli(root, "rollout", "simulate", str(root / PLAN), "--responses", "5", "--out", str(out), *flags)
    assert code == 3 and len(err.splitlines()) == 1 and message in err, err
    assert not out.exists()


@pytest.mark.parametrize("kind", ["device", "directory", "symlink", "fifo"])
def test_simulate_out_replaces_regular_files_only(cli: Cli, root: Path, kind: str) -> None:
    target = root / "target"
    if kind == "device":
        target = Path("/dev/null")
    elif kind == "directory":
        target.mkdir()
    elif kind == "symlink":
        (root / "real.jsonl").write_text("keep\n")
        target.symlink_to(root / "real.jsonl")
    else:
        os.mkfifo(target)
    before = os.lstat(target)
    code, _, err = cli(root, "rollout", "simulate", str(root / PLAN), "--responses", "3", "--out", str(target))
    assert code == 3 and len(err.splitlines()) == 1, err
    assert "--out replaces regular files only" in err or "is a directory" in err, err
    after = os.lstat(target)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)


def test_simulate_replaces_a_regular_file_atomically_and_says_one_response(cli: Cli, root: Path) -> None:
    out = root / "log.jsonl"
    out.write_text("old\n")
    code, text, err = cli(root, "rollout", "simulate", str(root / PLAN), "--responses", "1", "--out", str(out))
    assert (code, err) == (0, "") and "1 simulated response (" in text
    assert len(out.read_text().splitlines()) == 1 and out.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    "args",
    [
        ("merge", "--similarity", "nan", "x=y"),
        ("merge", "--similarity", "inf", "x=y"),
        ("rollout", "gate", PLAN, "--lock-timeout", "nan"),
        ("rollout", "status", PLAN, "--lock-timeout", "inf"),
        ("report", "--contract", "review-result", "--out", "r", "--lock-timeout", "nan"),
        ("review-gate", "--spec", "SPEC-A-1", "--stage", "plan", "--block-confidence", "nan"),
        ("rollout", "gate", PLAN, "--now", "yesterday"),
        ("rollout", "gate", PLAN, "--step", "99"),
        ("rollout", "gate", PLAN, "--step", "-1"),
    ],
)
def test_number_and_time_flags_are_checked(cli: Cli, root: Path, args: tuple[str, ...]) -> None:
    resolved = [str(root / a) if a == PLAN else a for a in args]
    code, _, err = cli(root, *resolved)
    assert code == 3 and len(err.splitlines()) == 1 and "internal error" not in err, err


@pytest.mark.parametrize("plan", ["rollout/review-result/nope.yaml", "rollout/no-such/review-1.1.yaml"])
def test_gate_refuses_an_unknown_rollout_or_contract(cli: Cli, root: Path, plan: str) -> None:
    if "no-such" in plan:
        (root / "rollout" / "no-such").mkdir()
        shutil.copy(root / PLAN, root / plan)
    code, _, err = cli(root, "rollout", "gate", str(root / plan))
    assert code == 3 and len(err.splitlines()) == 1, err
    assert ("no such rollout plan" in err) or ("is 'review-result' but the plan is under rollout/no-such/" in err)


def test_report_with_an_unreadable_plans_directory_exits_3(cli: Cli, root: Path) -> None:
    directory = root / "rollout" / "review-result"
    shutil.rmtree(directory)
    directory.write_text("not a directory\n")  # listing fails whoever runs the test (root reads any mode)
    code, _, err = cli(root, "report", "--contract", "review-result", "--out", str(root / "reports"))
    assert code == 3 and "rollout/review-result/: cannot list the rollout plans" in err, err


def test_simulate_shows_progress_on_a_terminal_only(root: Path) -> None:
    """On a terminal, stderr carries a progress bar; in a pipe (every other test here), stderr stays empty."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, "-m", "promptops", "--root", str(root), "rollout", "simulate", str(root / PLAN)]
    run = subprocess.run(
        [*command, "--responses", "300", "--out", str(root / "log.jsonl")],
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
        check=False,
    )
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: everything was read
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert run.returncode == 0 and b"simulating responses" in shown and b"100%" in shown
    piped = subprocess.run(
        [*command, "--responses", "30", "--out", str(root / "log2.jsonl")], capture_output=True, env=env, check=False
    )
    assert (piped.returncode, piped.stderr) == (0, b"")
