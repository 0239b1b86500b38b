"""``release verify``, ``release list`` and ``compat matrix`` on a three-release history cut by the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.release.conftest import LOCK, PROMPTS


@pytest.mark.parametrize(
    "artifact",
    [f"{PROMPTS}/1.0.1.j2", f"{PROMPTS}/1.1.0/_partials/fields.j2", "versions/review-result/schemas/1.0.json"],
)
def test_verify_catches_a_one_byte_change(released: Path, cli: Cli, artifact: str) -> None:
    assert cli(released, "release", "verify") == (
        0,
        f"{LOCK}: 3 releases, 11 artifacts: ok\n",
        "",
    )
    path = released / artifact
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # flip one bit of one byte
    path.write_bytes(bytes(data))

    code, out, _ = cli(released, "release", "verify")
    assert code == 2
    assert out.splitlines()[0] == f"{LOCK}: 3 releases, 11 artifacts: 1 problem"
    assert out.splitlines()[1].startswith(f"  modified  {artifact}: modified after release 1.")

    code, out, _ = cli(released, "release", "verify", "--contract", "review-result", "--format", "json")
    body = json.loads(out)
    assert code == 2 and body["ok"] is False
    [problem] = body["contracts"][0]["problems"]
    assert (problem["kind"], problem["file"]) == ("modified", artifact)
    assert problem["locked"] != problem["actual"] and len(problem["actual"]) == 64


def test_verify_names_every_missing_modified_and_stray_file(released: Path, cli: Cli) -> None:
    (released / PROMPTS / "1.0.0/_partials/instructions.j2").unlink()
    (released / "versions/review-result/schemas/1.1.json").write_text("{}\n", encoding="utf-8")
    (released / PROMPTS / "1.2.0.j2").write_text("half a cut\n", encoding="utf-8")
    code, out, _ = cli(released, "release", "verify", "--format", "json")
    problems = [(p["kind"], p["file"]) for p in json.loads(out)["contracts"][0]["problems"]]
    assert code == 2
    assert problems == [
        ("missing", f"{PROMPTS}/1.0.0/_partials/instructions.j2"),
        ("unlocked", f"{PROMPTS}/1.2.0.j2"),
        ("modified", "versions/review-result/schemas/1.1.json"),
    ]


def test_verify_without_locks_and_with_a_broken_lock(unreleased: Path, cli: Cli) -> None:
    assert cli(unreleased, "release", "verify") == (
        0,
        "no release locks (versions/<contract>/releases.yaml) to verify\n",
        "",
    )
    (unreleased / LOCK).write_text("contract: review-result\nlock_version: 1\nreleases: {}\n", encoding="utf-8")
    assert cli(unreleased, "release", "verify") == (
        3,
        "",
        f"promptops: error: {LOCK}: line 3: key 'releases': must be a list\n",
    )
    (unreleased / LOCK).write_text("contract: [\n", encoding="utf-8")
    code, _, err = cli(unreleased, "release", "list")
    assert code == 3 and err.startswith(f"promptops: error: {LOCK}: line 2: invalid YAML")


def test_list_prints_the_history(released: Path, cli: Cli) -> None:
    code, out, _ = cli(released, "release", "list")
    assert code == 0
    assert out.splitlines() == [
        f"review-result ({LOCK})",
        "  1.0.0    schema 1.0   prompt initial schema initial   2025-06-02T09:30:00Z  released  first",
        "  1.0.1    schema 1.0   prompt patch   schema unchanged 2025-06-02T09:30:00Z  released  wording",
        "  1.1.0    schema 1.1   prompt minor   schema minor     2025-06-02T09:30:00Z  released  cwe",
    ]
    code, out, _ = cli(released, "release", "list", "--contract", "review-result", "--format", "json")
    [contract] = json.loads(out)
    assert [(r["version"], r["class"], r["schema_class"]) for r in contract["releases"]] == [
        ("1.0.0", "initial", "initial"),
        ("1.0.1", "patch", "unchanged"),
        ("1.1.0", "minor", "minor"),
    ]
    assert f"{PROMPTS}/1.1.0/_partials/fields.j2" in contract["releases"][2]["artifacts"]
    code, _, err = cli(released, "release", "list", "--contract", "nope")
    assert code == 3 and "no such contract 'nope'" in err


def test_compat_matrix(released: Path, cli: Cli) -> None:
    code, out, _ = cli(released, "compat", "matrix", "--contract", "review-result", "--format", "json")
    body = json.loads(out)
    assert code == 0
    assert body["floors"] == ["1.0", "1.1"] and body["policy_floor"] == "1.0"
    cells = {(c["floor"], c["prompt_version"]): (c["accepted"], c["reading"], c["change"]) for c in body["cells"]}
    assert cells == {
        ("1.0", "1.0.0"): (True, "exact", "patch"),
        ("1.0", "1.0.1"): (True, "exact", "patch"),
        ("1.0", "1.1.0"): (True, "tolerant", "minor"),
        ("1.1", "1.0.0"): (False, "rejected", None),
        ("1.1", "1.0.1"): (False, "rejected", None),
        ("1.1", "1.1.0"): (True, "exact", "patch"),
    }
    code, out, _ = cli(released, "compat", "matrix", "--contract", "review-result")
    assert code == 0
    lines = out.splitlines()
    assert lines[3].split() == ["schema", "1.0", "schema", "1.0", "schema", "1.1"]
    assert lines[4].split() == ["floor", "1.0", "(policy)", "exact", "exact", "tolerant", "(minor)"]
    assert lines[5].split() == ["floor", "1.1", "rejected", "rejected", "exact"]


def test_compat_matrix_without_releases(unreleased: Path, cli: Cli) -> None:
    code, out, _ = cli(unreleased, "compat", "matrix", "--contract", "review-result")
    assert (code, out) == (0, "review-result: no releases yet (versions/review-result/releases.yaml)\n")
    code, out, _ = cli(unreleased, "compat", "matrix", "--contract", "review-result", "--format", "json")
    assert json.loads(out)["cells"] == []
