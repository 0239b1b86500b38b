"""``promptops release check``: the head's pins held to the lock as ``release cut`` holds them, without cutting.

Each case is a real project (this repository's contracts and templates, with review-result's history cut by
the real CLI) and the real command line; the pre-commit invocation (extra file arguments, no --contract) is
run as a subprocess.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import Cli
from tests.release.conftest import HEAD, LOCK, cut, reword, set_pins, write_schema


def check(cli: Cli, root: Path, *args: str) -> tuple[int, str, str]:
    return cli(root, "release", "check", "--contract", "review-result", *args)


def test_a_head_equal_to_its_release_passes(released: Path, cli: Cli) -> None:
    code, out, err = check(cli, released)
    assert code == 0, out + err
    assert "review-result: templates/review-result.j2 (prompt 1.1.0, schema 1.1): ok" in out


def test_an_enum_addition_pinned_as_a_schema_minor_fails_naming_the_major(released: Path, cli: Cli) -> None:
    """The gap lint leaves: schema 1.2 adds a severity (major), the head pins 1.2 and prompt 1.2.0."""
    write_schema(released, "1.2", severity="blocker")
    set_pins(released, "1.2.0", "1.2")
    assert cli(released, "lint")[0] == 0  # lint alone accepts it

    code, out, _ = check(cli, released, "--format", "json")

    assert code == 2
    body = json.loads(out)
    schema_finding, prompt_finding = sorted(
        (f for c in body["contracts"] for f in c["findings"]), key=lambda f: f["code"]
    )
    assert schema_finding["code"] == "PR001" and prompt_finding["code"] == "PR002"
    assert schema_finding["file"] == HEAD
    assert schema_finding["line"] == _line_of(released, "set schema_version")
    assert "use 2.0" in schema_finding["message"] and 'enum adds "blocker"' in schema_finding["message"]
    assert prompt_finding["line"] == _line_of(released, "set prompt_version")
    assert "use 2.0.0" in prompt_finding["message"]
    # release cut refuses the same head for the same reason: one computation
    code, cut_out, _ = cut(cli, released, "--dry-run")
    assert code == 2 and "declared schema 1.2 (minor) but the change is major: use 2.0" in cut_out


def test_a_correct_major_passes_and_cut_agrees(released: Path, cli: Cli) -> None:
    write_schema(released, "2.0", severity="blocker")
    set_pins(released, "2.0.0", "2.0")
    code, out, err = check(cli, released)
    assert code == 0, out + err
    assert "schema 1.1 -> 2.0: declared major, computed major" in out
    assert cut(cli, released, "--dry-run")[0] == 0


def test_an_understated_prompt_bump_names_the_smallest_version(released: Path, cli: Cli) -> None:
    # a newly required field in the rendered contract: the prompt change is major
    required_cwe = "Required fields of each finding:\n- `cwe` (string)\n\nEnum values are case-sensitive"
    reword(released, "Enum values are case-sensitive", required_cwe)
    set_pins(released, "1.1.1")
    code, out, _ = check(cli, released)
    assert code == 2
    assert "PR002" in out and "declared 1.1.1 (patch)" in out and "use 2.0.0" in out
    line = _line_of(released, "set prompt_version")
    assert f"{HEAD}:{line}:" in out


def test_a_released_version_reused_for_new_wording_fails(released: Path, cli: Cli) -> None:
    reword(released, "You are an experienced software engineer", "You are a careful software engineer")
    code, out, _ = check(cli, released)
    assert code == 2
    assert "PR003" in out and "prompt 1.1.0 is released, but this template differs" in out
    assert "use 1.1.1" in out  # wording only: a patch


def test_a_released_version_with_another_schema_fails(released: Path, cli: Cli) -> None:
    set_pins(released, "1.1.0", "1.0")
    code, out, _ = check(cli, released)
    assert code == 2 and "prompt 1.1.0 was released with schema 1.1, the head pins 1.0" in out


def test_an_older_version_fails(released: Path, cli: Cli) -> None:
    set_pins(released, "1.0.5", "1.1")
    code, out, _ = check(cli, released)
    assert code == 2 and "PR005" in out and "older than the latest release 1.1.0" in out


def test_an_enum_removed_from_a_released_schema_in_place_fails(released: Path, cli: Cli) -> None:
    schema = released / "versions/review-result/schemas/1.1.json"
    data = json.loads(schema.read_text(encoding="utf-8"))
    data["properties"]["findings"]["items"]["properties"]["severity"]["enum"].remove("info")
    schema.write_text(json.dumps(data, indent=2), encoding="utf-8")
    code, out, _ = check(cli, released, "--format", "github")
    assert code == 2
    assert out.startswith("::error file=versions/review-result/schemas/1.1.json,line=1,")
    assert "PR004" in out


def test_an_unrenderable_head_fails_closed(released: Path, cli: Cli) -> None:
    set_pins(released, "1.2.0", "1.9")
    code, out, _ = check(cli, released)
    assert code == 2 and "PR006" in out and "no schema file" in out


def test_sarif_output_names_its_own_rules_and_producer(released: Path, cli: Cli) -> None:
    set_pins(released, "1.0.5", "1.1")
    code, out, _ = check(cli, released, "--format", "sarif")
    assert code == 2
    run = json.loads(out)["runs"][0]
    assert run["automationDetails"]["id"] == "promptops-release-check/"
    assert {r["id"] for r in run["tool"]["driver"]["rules"]} >= {"PR001", "PR002", "PR003", "PR004", "PR005"}
    assert run["results"][0]["ruleId"] == "PR005"


def test_without_contract_every_head_is_checked_and_file_arguments_are_ignored(released: Path) -> None:
    """As the pre-commit hook runs it: no --contract, maybe file names, from the project directory."""
    command = [sys.executable, "-m", "promptops", "release", "check", "templates/review-result.j2", "README.md"]
    ok = subprocess.run(command, cwd=released, capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.count(": ok") == 4  # every contract with a head template in the copy

    write_schema(released, "1.2", severity="blocker")
    set_pins(released, "1.2.0", "1.2")
    bad = subprocess.run(command, cwd=released, capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "PR001" in bad.stdout


def test_unknown_contract_or_missing_head_is_a_tool_failure(released: Path, cli: Cli) -> None:
    code, _, err = cli(released, "release", "check", "--contract", "nope")
    assert code == 3 and err.count("\n") == 1 and "no such contract 'nope'" in err
    (released / HEAD).unlink()
    code, _, err = check(cli, released)
    assert code == 3 and err.count("\n") == 1 and "no head template" in err


def test_a_broken_lock_is_a_tool_failure(released: Path, cli: Cli) -> None:
    lock = released / LOCK
    lock.write_text(lock.read_text(encoding="utf-8").replace("lock_version: 1", "lock_version: 1\nlock_version: 1"))
    code, _, err = check(cli, released)
    assert code == 3 and err.count("\n") == 1 and "duplicate key 'lock_version'" in err


def _line_of(root: Path, text: str) -> int:
    lines = (root / HEAD).read_text(encoding="utf-8").split("\n")
    return next(i for i, line in enumerate(lines, start=1) if text in line)


def test_a_deleted_or_emptied_lock_fails(released: Path, cli: Cli) -> None:
    lock = released / LOCK
    text = lock.read_text(encoding="utf-8")
    lock.write_text(text[: text.index("releases:")] + "releases: []\n", encoding="utf-8")
    code, out, _ = check(cli, released)
    assert code == 2 and f"PR004 {LOCK} lists no releases, but 9 released files remain" in out
    lock.unlink()
    code, out, _ = check(cli, released)
    assert code == 2 and f"PR004 {LOCK} is missing, but 9 released files remain" in out
