"""A consensus file the gate cannot read exactly as written fails closed, through the real CLI.

Each payload is a consensus file that does not parse strictly (a BOM, a repeated key, NaN, trailing text, a cut,
invalid UTF-8, a key spelled with escapes). When it may hold a conflict the gate blocks (Failed, exit 2), with
or without the strict flags; when it provably holds none it warns, and `--strict-artifacts` makes it block.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from promptops.cli import run
from tests.helpers import REPO_ROOT

SPEC = "SPEC-KIT-700"
CONSENSUS = f"docs/SPEC-OPS-004-integrated-coder-hooks/evidence/consensus/{SPEC}"
NAME = "spec-plan_architect_20251120.json"
CONFLICT = b'{"agent": "architect", "consensus": {"conflicts": ["the plan drops the migration"]}}'

# (name, bytes): each holds a conflict the strict reading cannot see
WITH_CONFLICT: list[tuple[str, bytes]] = [
    ("bom", b"\xef\xbb\xbf" + CONFLICT),
    ("repeated-conflicts", b'{"agent": "a", "consensus": {"conflicts": ["x"], "conflicts": []}}'),
    ("repeated-consensus", b'{"consensus": {"conflicts": ["x"]}, "consensus": {"conflicts": []}}'),
    ("repeated-agent", b'{"agent": "a", "agent": "b", "consensus": {"conflicts": ["x"]}}'),
    ("nan", b'{"score": NaN, "consensus": {"conflicts": ["x"]}}'),
    ("infinity", b'{"consensus": {"conflicts": ["x"], "weight": -Infinity}}'),
    ("trailing-text", CONFLICT + b" and then some prose"),
    ("trailing-object", b'{"consensus": {"conflicts": []}}\n{"consensus": {"conflicts": ["x"]}}'),
    ("cut", b'{"agent": "architect", "consensus": {"conflicts": ["the plan'),
    ("invalid-utf8", b'{"agent": "archi\xfftect", "consensus": {"conflicts": ["x"]}}'),
    ("escaped-key", b'{"consensus": {"conflict\\u0073": ["x"]}, "agent": 42}'),
    ("wrong-type-beside", b'{"agent": 42, "consensus": {"conflicts": ["x"]}}'),
]

# parse failures that provably hold no conflict
WITHOUT_CONFLICT: list[tuple[str, bytes]] = [
    ("bom-empty", b'\xef\xbb\xbf{"agent": "architect", "consensus": {"conflicts": []}}'),
    ("nan-null", b'{"score": NaN, "consensus": {"conflicts": null}}'),
    ("trailing-no-conflicts", b'{"agent": "architect"} tail'),
]


def _gate(tmp_path: Path, data: bytes, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, Any]:
    repo = tmp_path / "reviewed"
    (repo / CONSENSUS).mkdir(parents=True, exist_ok=True)
    (repo / CONSENSUS / NAME).write_bytes(data)
    args = ["--root", str(REPO_ROOT), "review-gate", "--spec", SPEC, "--stage", "Plan", "--repo", str(repo)]
    code = run([*args, "--format", "json", *flags])
    out, _ = capsys.readouterr()
    return code, json.loads(out)


@pytest.mark.parametrize("flags", [(), ("--strict-artifacts",), ("--strict-warnings",)], ids=["plain", "sa", "sw"])
@pytest.mark.parametrize(("name", "data"), WITH_CONFLICT, ids=[n for n, _ in WITH_CONFLICT])
def test_an_unreadable_file_that_may_hold_a_conflict_blocks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: bytes, flags: tuple[str, ...]
) -> None:
    code, result = _gate(tmp_path, data, capsys, *flags)
    assert (code, result["verdict"], result["resolution"]) == (2, "Failed", "Escalate"), name
    (signal,) = result["signals"]
    assert signal["severity"] == "Block" and signal["evidence_path"] == f"{CONSENSUS}/{NAME}"
    assert signal["message"].startswith(f"Failed to parse consensus file: {CONSENSUS}/{NAME}: ")
    assert signal["message"].endswith("(it holds a conflict the gate cannot read: blocking)")


@pytest.mark.parametrize(("name", "data"), WITHOUT_CONFLICT, ids=[n for n, _ in WITHOUT_CONFLICT])
def test_an_unreadable_file_without_a_conflict_warns_and_blocks_when_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: bytes
) -> None:
    code, result = _gate(tmp_path, data, capsys)
    assert (code, result["verdict"], result["signals"][0]["severity"]) == (0, "PassedWithWarnings", "Advisory")
    code, result = _gate(tmp_path, data, capsys, "--strict-artifacts")
    assert (code, result["verdict"], result["resolution"]) == (2, "Failed", "Escalate"), name
    assert result["signals"][0]["message"].endswith("(--strict-artifacts: blocking)")


def test_a_readable_file_is_judged_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, result = _gate(tmp_path, CONFLICT, capsys)
    assert (code, result["verdict"], result["signals"][0]["kind"]) == (2, "Failed", "Contradiction")
    clean = b'{"agent": "architect", "consensus": {"conflicts": []}}'
    assert _gate(tmp_path, clean, capsys, "--strict-artifacts")[1]["verdict"] == "Passed"
