"""``promptops release cut`` end to end, through the real CLI on temporary project copies (``--root``)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import yaml

from tests.conftest import Cli
from tests.release.conftest import DATE, HEAD, LOCK, PROMPTS, cut, reword, set_pins, write_schema


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(root: Path) -> dict[str, bytes]:
    """Every file under versions/ (the released state), by repo-relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "versions").rglob("*")) if p.is_file()
    }


def test_first_cut_freezes_the_head_its_partials_and_the_schema(unreleased: Path, cli: Cli) -> None:
    code, out, err = cut(cli, unreleased, "--note", "first release")
    assert (code, err) == (0, "")
    assert out.startswith("review-result: released prompt 1.0.0 (initial) with schema 1.0 (initial)\n")
    lock = yaml.safe_load((unreleased / LOCK).read_text(encoding="utf-8"))
    [entry] = lock["releases"]
    assert {k: entry[k] for k in ("version", "schema_version", "class", "schema_class", "date", "note", "status")} == {
        "version": "1.0.0",
        "schema_version": "1.0",
        "class": "initial",
        "schema_class": "initial",
        "date": DATE,
        "note": "first release",
        "status": "released",
    }
    assert sorted(entry["artifacts"]) == [
        "prompts/1.0.0.j2",
        "prompts/1.0.0/_partials/fields.j2",
        "prompts/1.0.0/_partials/instructions.j2",
        "schemas/1.0.json",
    ]
    contract_dir = unreleased / "versions/review-result"
    for path, digest in entry["artifacts"].items():
        assert _sha(contract_dir / path) == digest, path
    assert (contract_dir / "prompts/1.0.0.j2").read_bytes() == (unreleased / HEAD).read_bytes()
    assert not list(contract_dir.glob(".release-staging*"))


def test_snapshot_renders_standalone_and_passes_lint(unreleased: Path, cli: Cli) -> None:
    args = ("render", "--contract", "review-result", "--changed-file", "a.py", "--version", "1.0.0")
    before = cli(unreleased, *args, "--format", "json")
    assert before[0] == 0 and json.loads(before[1])["template"] == "templates/review-result.j2"
    assert cut(cli, unreleased)[0] == 0
    # The head and its partials move on; the release must not.
    reword(unreleased, "Report findings only on", "Only report findings on", "templates/_partials/instructions.j2")
    set_pins(unreleased, "1.0.1")
    code, out, _ = cli(unreleased, *args, "--format", "json")
    rendered = json.loads(out)
    assert code == 0 and rendered["template"] == f"{PROMPTS}/1.0.0.j2"
    assert rendered["text"] == json.loads(before[1])["text"]
    shutil.rmtree(unreleased / "templates")
    assert json.loads(cli(unreleased, *args, "--format", "json")[1])["text"] == rendered["text"]
    code, out, _ = cli(unreleased, "lint", str(unreleased / PROMPTS / "1.0.0.j2"))
    assert (code, out) == (0, "All checks passed: 1 file linted.\n")


def test_dry_run_computes_everything_and_writes_nothing(unreleased: Path, cli: Cli) -> None:
    before = _files(unreleased)
    code, out, _ = cut(cli, unreleased, "--dry-run", "--format", "json")
    body = json.loads(out)
    assert code == 0 and body["dry_run"] is True and body["refused"] is False
    assert body["release"]["version"] == "1.0.0"
    assert body["writes"][-1] == LOCK and body["written"] == []
    assert _files(unreleased) == before


def test_refuses_to_reuse_a_released_version(unreleased: Path, cli: Cli) -> None:
    assert cut(cli, unreleased)[0] == 0
    before = _files(unreleased)
    code, out, _ = cut(cli, unreleased)
    assert code == 2
    assert "refused: prompt 1.0.0 is already released (2025-06-02T09:30:00Z): pin a new prompt_version" in out
    # Also when the head changed: the released number cannot be given to different text.
    reword(unreleased, "You are a senior software engineer", "You are a software engineer")
    code, out, _ = cut(cli, unreleased, "--format", "json")
    assert code == 2 and json.loads(out)["refusals"][0].startswith("prompt 1.0.0 is already released")
    assert _files(unreleased) == before


def test_refuses_an_older_version(unreleased: Path, cli: Cli) -> None:
    assert cut(cli, unreleased)[0] == 0
    set_pins(unreleased, "0.9.0")
    code, out, _ = cut(cli, unreleased)
    assert code == 2
    assert "prompt 0.9.0 is older than the latest release 1.0.0: releases only move forward" in out


def test_refuses_an_understated_prompt_bump_naming_the_smallest_that_passes(unreleased: Path, cli: Cli) -> None:
    assert cut(cli, unreleased)[0] == 0
    before = _files(unreleased)
    write_schema(unreleased, "1.1")
    set_pins(unreleased, "1.0.1", "1.1")
    code, out, _ = cut(cli, unreleased)
    assert code == 2
    assert "refused: declared 1.0.1 (patch) but the change is minor: use 1.1.0" in out
    assert "field_restated: finding field `cwe` is newly restated as optional" in out
    assert _files(unreleased) == {
        **before,
        "versions/review-result/schemas/1.1.json": (
            unreleased / "versions/review-result/schemas/1.1.json"
        ).read_bytes(),
    }

    set_pins(unreleased, "1.1.0")  # the suggested version passes
    code, out, _ = cut(cli, unreleased, "--format", "json")
    body = json.loads(out)
    assert code == 0, body["refusals"]
    assert (body["prompt"]["computed"], body["schema"]["computed"]) == ("minor", "minor")


def test_a_declared_patch_that_changes_the_rendered_contract_is_refused(unreleased: Path, cli: Cli) -> None:
    assert cut(cli, unreleased)[0] == 0
    # Same schema target, but every field's rule now reads differently: not wording only.
    reword(
        unreleased,
        "({{ rule | describe }})",
        "({{ rule | describe }}; see the schema)",
        "templates/_partials/fields.j2",
    )
    set_pins(unreleased, "1.0.1")
    code, out, _ = cut(cli, unreleased)
    assert code == 2
    assert "refused: declared 1.0.1 (patch) but the change is major: use 2.0.0" in out
    assert "rule_changed: finding field `line`: rule (integer, >= 1) is now (integer, >= 1; see the schema)" in out

    reword(unreleased, "; see the schema)", ")", "templates/_partials/fields.j2")  # wording only again
    reword(unreleased, "You are a senior software engineer", "You are an experienced software engineer")
    code, out, _ = cut(cli, unreleased, "--dry-run", "--format", "json")
    assert code == 0 and json.loads(out)["prompt"]["computed"] == "patch"


def test_refuses_an_understated_schema_bump(unreleased: Path, cli: Cli) -> None:
    assert cut(cli, unreleased)[0] == 0
    write_schema(unreleased, "1.1", finding_field=None, severity="trivial")  # a new enum value: major
    set_pins(unreleased, "1.1.0", "1.1")
    code, out, _ = cut(cli, unreleased, "--format", "json")
    body = json.loads(out)
    assert code == 2
    assert body["refusals"][0].startswith("declared schema 1.1 (minor) but the change is major: use 2.0\n")
    assert "against 1.0: $.findings[*].severity enum_extended" in body["refusals"][0]
    assert body["refusals"][1].startswith("declared 1.1.0 (minor) but the change is major: use 2.0.0")
    assert body["schema"]["forcing"][0]["kind"] == "enum_extended"
    assert body["release"] is None and body["written"] == []


def test_a_new_schema_is_classified_against_every_earlier_release_of_its_line(unreleased: Path, cli: Cli) -> None:
    assert cut(cli, unreleased)[0] == 0
    write_schema(unreleased, "1.1")
    set_pins(unreleased, "1.1.0", "1.1")
    assert cut(cli, unreleased)[0] == 0
    write_schema(unreleased, "1.2", finding_field="cwe")
    schema = unreleased / "versions/review-result/schemas/1.2.json"
    data = json.loads(schema.read_text(encoding="utf-8"))
    data["properties"]["findings"]["items"]["properties"]["owasp"] = {"type": "string"}
    schema.write_text(json.dumps(data), encoding="utf-8")
    set_pins(unreleased, "1.2.0", "1.2")
    code, out, _ = cut(cli, unreleased, "--dry-run", "--format", "json")
    body = json.loads(out)
    assert code == 0
    assert body["schema"]["against"] == ["1.0", "1.1"]
    assert (body["schema"]["declared"], body["schema"]["computed"]) == ("minor", "minor")


def test_lint_errors_and_a_tampered_lock_refuse_the_cut(unreleased: Path, cli: Cli) -> None:
    assert cut(cli, unreleased)[0] == 0
    snapshot = unreleased / PROMPTS / "1.0.0.j2"
    snapshot.write_bytes(snapshot.read_bytes().replace(b"senior", b"Senior", 1))
    write_schema(unreleased, "1.1")
    set_pins(unreleased, "1.1.0", "1.1")
    reword(unreleased, "{{ instructions.omit_uncertain() }}", "")
    code, out, _ = cut(cli, unreleased)
    assert code == 2
    assert f"refused: {PROMPTS}/1.0.0.j2: modified after release 1.0.0: sha256" in out
    assert "refused: lint: templates/review-result.j2:" in out and "PO006" in out
    assert not (unreleased / PROMPTS / "1.1.0.j2").exists()


def test_leftovers_of_an_interrupted_cut_are_replaced(unreleased: Path, cli: Cli) -> None:
    stale = unreleased / PROMPTS / "1.0.0" / "_partials" / "old.j2"
    stale.parent.mkdir(parents=True)
    stale.write_text("left by a killed cut\n", encoding="utf-8")
    (unreleased / PROMPTS / "1.0.0.j2").write_text("half a snapshot", encoding="utf-8")
    (unreleased / "versions/review-result/.release-staging").mkdir()  # the shared directory of earlier versions
    (unreleased / "versions/review-result/.release-staging-dead1234/prompts").mkdir(parents=True)  # a dead run's
    assert cut(cli, unreleased)[0] == 0
    assert not stale.exists()
    assert not list((unreleased / "versions/review-result").glob(".release-staging*"))
    assert (unreleased / PROMPTS / "1.0.0.j2").read_bytes() == (unreleased / HEAD).read_bytes()
    assert cli(unreleased, "release", "verify")[0] == 0


def test_stray_files_of_another_version_refuse_the_cut(unreleased: Path, cli: Cli) -> None:
    assert cut(cli, unreleased)[0] == 0
    (unreleased / PROMPTS / "0.5.0.j2").write_text("by hand\n", encoding="utf-8")
    set_pins(unreleased, "1.0.1")
    reword(unreleased, "You are a senior software engineer", "You are an experienced software engineer")
    code, out, _ = cut(cli, unreleased)
    assert code == 2
    assert f"refused: {PROMPTS}/0.5.0.j2: in prompts/ but locked by no release" in out


def test_tool_failures_exit_3_with_one_line(unreleased: Path, cli: Cli) -> None:
    code, _, err = cli(unreleased, "release", "cut", "--contract", "nope")
    assert code == 3 and "no such contract 'nope'" in err and err.count("\n") == 1
    code, _, err = cut(cli, unreleased, "--date", "yesterday")
    assert code == 3 and "release date 'yesterday' is not a UTC timestamp" in err
    (unreleased / LOCK).write_text("contract: review-result\nlock_version: 1\nreleases:\n- version: 1.0\n", "utf-8")
    code, _, err = cut(cli, unreleased)
    assert code == 3
    assert (
        err == f"promptops: error: {LOCK}: line 4: key 'releases[0].version': "
        'must be a quoted version string such as "1.2.0"\n'
    )


def test_a_new_schema_major_needs_a_prompt_major(unreleased: Path, cli: Cli) -> None:
    assert cut(cli, unreleased)[0] == 0
    schema = write_schema(unreleased, "2.0")
    data = json.loads(schema.read_text(encoding="utf-8"))
    data["properties"]["findings"]["items"]["required"].append("cwe")  # a new required field: major
    schema.write_text(json.dumps(data), encoding="utf-8")
    set_pins(unreleased, "1.1.0", "2.0")
    code, out, _ = cut(cli, unreleased, "--format", "json")
    body = json.loads(out)
    assert code == 2
    assert body["refusals"] == [
        "declared 1.1.0 (minor) but the change is major: use 2.0.0\n"
        "  schema_retargeted: retargeted from schema 1.0 to 2.0: a new schema major\n"
        "  field_restated: finding field `cwe` is newly restated as required: a new requirement the previous "
        "prompt did not state"
    ]
    assert (body["schema"]["declared"], body["schema"]["computed"]) == ("major", "major")

    set_pins(unreleased, "2.0.0")
    assert cut(cli, unreleased)[0] == 0
    code, out, _ = cli(unreleased, "compat", "matrix", "--contract", "review-result", "--format", "json")
    cells = {(c["floor"], c["prompt_version"]): c["reading"] for c in json.loads(out)["cells"]}
    assert cells == {
        ("1.0", "1.0.0"): "exact",
        ("1.0", "2.0.0"): "rejected",
        ("2.0", "1.0.0"): "rejected",
        ("2.0", "2.0.0"): "exact",
    }
