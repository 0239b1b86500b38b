"""Generated bad inputs over the plans and flags of the rollout, report, merge and review-gate commands.

Each case mutates the shipped plan (a value swapped for junk, bytes inserted, the file cut short, a line
repeated or dropped, a history entry made up) or passes junk flags, then runs the real CLI in-process. Every
run must end with a documented exit code (0-3) and, on a tool failure (3), exactly one line on stderr; never
an internal error or a traceback. The cases are seeded, so a failure names a case that replays.

``PROMPTOPS_FUZZ_CASES`` sets how many cases run (default 3,000, about half a minute on a laptop core).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections import Counter
from pathlib import Path

import pytest

import promptops.cli
from tests.helpers import REPO_ROOT

pytestmark = pytest.mark.slow  # generated inputs through the CLI

PLAN = "rollout/review-result/review-1.1.yaml"
CASES = int(os.environ.get("PROMPTOPS_FUZZ_CASES", "3000"))
CONSENSUS = "docs/SPEC-OPS-004-integrated-coder-hooks/evidence/consensus/SPEC-FZ-1"

JUNK_VALUES = [
    "1e-300", "-1e-300", "1e308", "-1e308", ".nan", ".inf", "-.inf", "0", "-0", "1", "-1", "0.5", "2", "1.0e+400",
    "9" * 400, "9" * 5000, "-" + "9" * 30, "0x7fffffff", "0o777", "1_000", "null", "~", "true", "no", "''", '""',
    "[]", "{}", "[1, 2]", "{a: 1}", "'x'", "'1 day'", "99999999999h", "0s", "-5m", "5 m", "10y", "'\\t'",
    "2026-11-25", "2026-02-30T25:61:61Z", "!!binary aGVsbG8=", "&a x", "*a", "'" + "x" * 3000 + "'",
    "'\u00e9\u202e\u0000'", "'../templates'", "'/etc/passwd'", "'review-1.1\\nforged: 1'", "[[[[[[[[[[]]]]]]]]]]",
]  # fmt: skip
KEYS = [
    "rollout", "contract", "unit", "salt", "alpha", "legacy_window", "weight", "min_responses", "min_duration",
    "slo", "margin", "severity", "prompt_version", "schema_version", "name",
]  # fmt: skip
JUNK_BYTES = [
    b"\xff",
    b"\xe9",
    b"\x00",
    b"\t",
    b"\r",
    b"{",
    b"[",
    b":",
    b"'",
    b'"',
    b"&",
    b"*",
    b"!",
    b"%",
    b"\xef\xbb\xbf",
]
TIMES = ["2026-11-25T06:00:00Z", "nan", "", "9999-12-31T23:59:59Z", "0001-01-01T00:00:00+05:00", "1e308", "tomorrow"]
NUMBERS = ["nan", "inf", "-inf", "1e308", "-1", "0", "1", "0.5", "1e-300", "99999999999999999999", "x", ""]


def _mutate_plan(rng: random.Random, text: str) -> bytes:
    kind = rng.randrange(7)
    lines = text.splitlines(keepends=True)
    if kind <= 1:  # a value swapped for junk (twice as likely: it reaches the range checks)
        key = rng.choice(KEYS)
        spots = [i for i, line in enumerate(lines) if f"{key}:" in line]
        if spots:
            i = rng.choice(spots)
            head, _, rest = lines[i].partition(f"{key}:")
            tail = (
                rest[rest.find(",") :]
                if "," in rest and "{" in head
                else ("}\n" if rest.rstrip().endswith("}") else "\n")
            )
            lines[i] = f"{head}{key}: {rng.choice(JUNK_VALUES)}{tail}"
        return "".join(lines).encode("utf-8", "surrogatepass")
    data = text.encode()
    if kind == 2:  # bytes inserted
        at = rng.randrange(len(data))
        return data[:at] + rng.choice(JUNK_BYTES) * rng.randint(1, 3) + data[at:]
    if kind == 3:  # cut short
        return data[: rng.randrange(len(data))]
    if kind == 4:  # a line repeated (duplicate keys) or dropped (missing keys)
        i = rng.randrange(len(lines))
        lines[i : i + 1] = [lines[i], lines[i]] if rng.random() < 0.5 else []
        return "".join(lines).encode()
    if kind == 5:  # a made-up history entry
        fields = {
            "at": rng.choice(["'2026-11-02T09:00:00Z'", "'2026-11-02T09:00:00'", "yesterday", "2026-02-30", "1"]),
            "by": rng.choice(["x", "null", "[]"]),
            "action": rng.choice(["promote", "rollback", "resume", "retarget", "explode", "null"]),
            "from_step": rng.choice(["0", "1", "-1", "99", "9" * 5000, "1.5", "true", "x"]),
            "to_step": rng.choice(["0", "1", "3", "4", "-1", "9" * 50, "null"]),
            "verdict": "Passed",
            "reason": rng.choice(["r", "''", "[1]"]),
        }
        if fields["action"] == "retarget" or rng.random() < 0.2:
            fields["candidate"] = rng.choice(["{prompt_version: '1.1.1', schema_version: '1.1'}", "x", "{}", "null"])
            fields["previous_candidate"] = rng.choice(["{prompt_version: '1.1.0', schema_version: '1.1'}", "{}"])
        for name in rng.sample(sorted(fields), k=rng.randint(0, 2)):
            del fields[name]
        entry = ", ".join(f"{k}: {v}" for k, v in fields.items())
        return (text + f"history:\n- {{{entry}}}\n").encode()
    return rng.randbytes(rng.randint(0, 300))  # noise


def _plan_command(rng: random.Random, root: Path) -> list[str]:
    plan = str(root / PLAN)
    now = ["--now", "2026-11-25T06:00:00Z"]
    return rng.choice(
        [
            ["rollout", "plan", plan, "--format", rng.choice(["text", "json"])],
            ["rollout", "gate", plan, *now, "--format", "json"],
            ["rollout", "gate", plan, *now, "--purpose", "promote", "--strict-artifacts"],
            ["rollout", "status", plan, *now],
            ["rollout", "promote", plan, "--by", "f", *now],
            ["rollout", "rollback", plan, "--reason", "fuzz", "--by", "f", *now],
            ["rollout", "resume", plan, "--reason", "fuzz", "--by", "f", *now],
            ["rollout", "retarget", plan, "--candidate", "1.0.1", "--reason", "fuzz", "--by", "f", *now],
            ["rollout", "assign", plan, "acme/api#1"],
            ["rollout", "routes", plan],
            ["rollout", "simulate", plan, "--responses", "2", "--out", str(root / "sim.jsonl")],
            ["report", "--contract", "review-result", *now, "--out", str(root / "reports")],
            ["report", "--contract", "review-result", *now, "--out", str(root / "prom"), "--format", "prom"],
        ]
    )


def _flag_command(rng: random.Random, root: Path) -> list[str]:
    plan = str(root / PLAN)
    number, time = rng.choice(NUMBERS), rng.choice(TIMES)
    store = rng.choice([str(root / PLAN), "/dev/null", str(root)])
    contract = rng.choice(["review-result", "nope", "../templates", ""])
    rollout_id = rng.choice(["x/y", "..", "nope", ""])
    return rng.choice(
        [
            ["rollout", "simulate", plan, "--responses", number, "--out", str(root / "s.jsonl")],
            ["rollout", "simulate", plan, "--responses", "2", "--hours", number, "--out", str(root / "s.jsonl")],
            ["rollout", "simulate", plan, "--responses", "2", "--weight", number, "--out", str(root / "s.jsonl")],
            ["rollout", "simulate", plan, "--responses", "2", "--start", time, "--out", str(root / "s.jsonl")],
            ["rollout", "simulate", plan, "--responses", "2", "--seed", number, "--out", str(root / "s.jsonl")],
            ["rollout", "simulate", plan, "--responses", "2", "--out", rng.choice(["/dev/null", str(root), "/"])],
            ["rollout", "gate", plan, "--now", time],
            ["rollout", "gate", plan, "--step", number],
            ["rollout", "gate", plan, "--lock-timeout", number],
            ["rollout", "status", plan, "--now", time, "--store", store],
            ["rollout", "rollback", plan, "--reason", rng.choice(["", " ", "x" * 10]), "--now", time],
            ["rollout", "retarget", plan, "--candidate", rng.choice(["x", "1.0", "9" * 50, "1.0.1"]), "--reason", "r"],
            ["report", "--contract", contract, "--out", str(root / "r")],
            ["report", "--contract", "review-result", "--rollout", rollout_id, "--out", "r"],
            ["report", "--contract", "review-result", "--now", time, "--out", str(root / "r")],
            ["merge", "--similarity", number, f"review-result={root / 'out.json'}"],
            [
                "review-gate",
                "--spec",
                "SPEC-FZ-1",
                "--stage",
                "plan",
                "--repo",
                str(root),
                "--block-confidence",
                number,
            ],
        ]
    )


def _review_gate_command(rng: random.Random, root: Path) -> list[str]:
    directory = root / CONSENSUS
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        old.unlink()
    finding = {
        "id": "F1",
        "severity": rng.choice(["critical", "Critical", "CRITICAL", "high", "P0", 7, None, "", "c" * 500]),
        "category": "security",
        "title": "t",
        "file": rng.choice(["app/db.py", "elsewhere.py", "", None]),
        "line": rng.choice([3, 0, -1, "3", None, 10**30]),
        "message": "m",
    }
    body = {"schema_version": rng.choice(["1.0", "2.0", 1]), "prompt_version": "1.0.0", "findings": [finding]}
    raw = json.dumps(body).encode()
    raw = rng.choice([raw, raw[: rng.randrange(len(raw))], b"prose " + raw, raw + b"\xff", rng.randbytes(50)])
    name = rng.choice(["review-result_s", "review-result.merge_s", "nope_s", "code-review-findings_s"])
    (directory / f"reviewer-plan_{name}.json").write_bytes(raw)
    changed = rng.choice([["--changed-file", "app/db.py"], [], ["--changed-file", "../x"]])
    flags = rng.sample(["--strict-artifacts", "--strict-warnings"], k=rng.randint(0, 2))
    return ["review-gate", "--spec", "SPEC-FZ-1", "--stage", "plan", "--repo", str(root), *changed, *flags]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "project"
    root.mkdir()
    for name in ("versions", "templates", "rollout"):
        shutil.copytree(REPO_ROOT / name, root / name)
    return root


def test_generated_bad_inputs_end_in_a_documented_exit_code_with_one_line(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROMPTOPS_NO_TEMPLATE_CACHE", "1")
    monkeypatch.delenv("PROMPTOPS_DEBUG", raising=False)
    original = (project / PLAN).read_text(encoding="utf-8")
    rng = random.Random(19)
    outcomes: Counter[int] = Counter()
    failures: list[str] = []
    for case in range(CASES):
        (project / PLAN).write_text(original, encoding="utf-8")
        pick = rng.random()
        if pick < 0.6:
            (project / PLAN).write_bytes(_mutate_plan(rng, original))
            args = _plan_command(rng, project)
        elif pick < 0.85:
            args = _flag_command(rng, project)
        else:
            args = _review_gate_command(rng, project)
        code = promptops.cli.run(["--root", str(project), *args])
        _, err = capsys.readouterr()
        outcomes[code] += 1
        broken = code not in (0, 1, 2, 3) or "internal error" in err or "Traceback" in err
        if code == 3 and len(err.splitlines()) != 1:
            broken = True
        if broken:
            failures.append(f"case {case}: {args[:3]} exit {code}: {err[:300]!r}")
    assert not failures, f"{len(failures)} of {CASES} cases broke the promise:\n" + "\n".join(failures[:20])
    assert sum(outcomes.values()) == CASES and outcomes[3] > CASES // 3  # most cases are refused as bad input
