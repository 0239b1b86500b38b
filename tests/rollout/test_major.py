"""A breaking change (a new schema major) shipped through the real CLI: release, parser stage, rollout, full
traffic and retirement of the old line, with the service-side parsers (``promptops.serving``) reading each arm;
and the pins that follow the release (``with_overrides`` texts, JSON-ready results).

The project is built by the CLI in a tmp directory from the built-in review-result contract (schema 1.1);
schema 2.0 removes the severity ``info`` (a major change).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from promptops import ParserPolicy, PromptVersion, SchemaVersion, load_contract
from promptops.core.errors import VersionError
from tests.conftest import Cli
from tests.helpers import REPO_ROOT, empty_store

C = "rr"
PLAN = f"rollout/{C}/{C}-2.0.0.yaml"
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def load_serving(root: Path, contract: str) -> Any:
    from promptops.serving import load_serving  # imported here: each test fails on its own on a build without it

    return load_serving(root, contract)


def answer(prompt: str, schema: str, severity: str = "high") -> str:
    finding = {
        "id": "F1",
        "severity": severity,
        "category": "security",
        "title": "SQL injection",
        "message": "The query is built from user input.",
        "file": "app/db.py",
        "line": 3,
    }
    return json.dumps({"schema_version": schema, "prompt_version": prompt, "findings": [finding]})


def new_project(tmp_path: Path, cli: Cli) -> Path:
    root = tmp_path / "team"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    run(cli, root, "init")
    run(cli, root, "contract", "new", C, "--from", "review-result")
    return root


def run(cli: Cli, root: Path, *args: str, code: int = 0) -> str:
    got, out, err = cli(root, *args)
    assert got == code, f"promptops {' '.join(args)} -> {got}\n{out}\n{err}"
    return out + err


@pytest.fixture
def released_major(tmp_path: Path, cli: Cli) -> Path:
    """Release 1.0.0 (schema 1.1), then release 2.0.0 (schema 2.0, severity `info` removed)."""
    root = new_project(tmp_path, cli)
    run(cli, root, "release", "cut", "--contract", C, "--date", "2026-11-01T09:00:00Z")
    schema = json.loads((root / f"versions/{C}/schemas/1.1.json").read_text(encoding="utf-8"))
    schema["properties"]["findings"]["items"]["properties"]["severity"]["enum"].remove("info")
    (root / f"versions/{C}/schemas/2.0.json").write_text(json.dumps(schema, indent=2), encoding="utf-8")
    head = root / f"templates/{C}.j2"
    text = head.read_text(encoding="utf-8")
    head.write_text(
        text.replace('"1.0.0"', '"2.0.0"').replace('schema_version = "1.1"', 'schema_version = "2.0"'),
        encoding="utf-8",
    )
    return root


def test_cutting_a_major_says_what_else_must_change(released_major: Path, cli: Cli) -> None:
    out = run(cli, released_major, "release", "cut", "--contract", C, "--date", "2026-11-02T08:00:00Z")
    assert "released prompt 2.0.0 (major) with schema 2.0 (major)" in out
    assert "Next, for the new major line:" in out
    assert "keeps policy.schema_floor 1.1 and policy.prompt_version 1.0.0" in out
    assert f"`promptops rollout new {C}`" in out and "load_serving" in out
    assert f"`promptops rollout retire {PLAN}` raises policy.schema_floor to 2.0" in out


def test_rollout_new_writes_the_parser_stage_and_the_gate_passes_a_released_major(
    released_major: Path, cli: Cli
) -> None:
    root = released_major
    run(cli, root, "release", "cut", "--contract", C, "--date", "2026-11-02T08:00:00Z")
    run(cli, root, "rollout", "new", C)
    text = (root / PLAN).read_text(encoding="utf-8")
    assert "steps:\n  - {name: parser, weight: 0}      # no traffic until the parser reads schema 2.0\n" in text
    empty_store(root / ".promptops" / "diagnostics.duckdb")  # the parser stage reads the store too
    gate = json.loads(run(cli, root, "rollout", "gate", str(root / PLAN), "--now", T0.isoformat(), "--format", "json"))
    assert (gate["verdict"], gate["parser"]) == ("Passed", {"ready": True, "problems": []})


def test_a_major_rollout_reads_both_majors_then_retires_the_old_line(released_major: Path, cli: Cli) -> None:
    root = released_major
    out = json.loads(
        run(cli, root, "release", "cut", "--contract", C, "--date", "2026-11-02T08:00:00Z", "--format", "json")
    )
    assert len(out["next"]) == 4
    run(cli, root, "rollout", "new", C)
    plan = root / PLAN
    plan_arg = str(plan)
    text = plan.read_text(encoding="utf-8")
    assert "  - {name: parser, weight: 0}" in text  # the parser stage comes first
    # Small steps so that the test needs little traffic; the stages are the ones `rollout new` wrote.
    plan.write_text(
        text.replace("weight: 0.05, min_responses: 500, min_duration: 24h", "weight: 0.25, min_responses: 0"),
        encoding="utf-8",
    )
    store = str(root / "store.duckdb")

    empty_store(root / ".promptops" / "diagnostics.duckdb")  # the parser stage reads the store too
    gate = json.loads(run(cli, root, "rollout", "gate", plan_arg, "--now", T0.isoformat(), "--format", "json"))
    assert (gate["verdict"], gate["parser"]) == ("Passed", {"ready": True, "problems": []})
    serving = load_serving(root, C)
    assert {serving.assign(f"u{i}").arm for i in range(50)} == {"baseline"}  # weight 0 at the parser stage
    run(cli, root, "rollout", "promote", plan_arg, "--by", "t", "--now", T0.isoformat())

    # Canary: each arm's answers are read under its own policy, by the service and by ingest.
    serving = load_serving(root, C)
    records = []
    for i in range(1_200):
        chosen = serving.assign(f"acme/api#{i}")
        versions = chosen.versions
        raw = answer(str(versions.prompt_version), str(versions.schema_version))
        outcome = serving.parse(raw, ["app/db.py"], chosen)
        assert outcome.accepted and not outcome.diagnostics, (chosen, outcome.diagnostics)
        record = {"response_id": f"r{i}", "ts": (T0 + timedelta(minutes=1)).isoformat(), "contract": C}
        records.append({**record, "rollout_id": f"{C}-2.0.0", "arm": chosen.arm, "unit": f"acme/api#{i}"})
        records[-1].update(changed_files=["app/db.py"], raw=raw)
    arms = {r["arm"] for r in records}
    assert arms == {"baseline", "candidate"}
    # A 1.x answer is not a 2.x one: each arm's parser rejects the other's.
    assert serving.parse(answer("1.0.0", "1.1"), ["app/db.py"], "candidate").reason == "incompatible_version"
    assert serving.parse(answer("2.0.0", "2.0"), ["app/db.py"], "baseline").reason == "incompatible_version"
    assert serving.parse(answer("2.0.0", "2.0", "info"), ["app/db.py"], "candidate").result["findings"] == []
    log = root / "canary.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    stored = json.loads(run(cli, root, "ingest", str(log), "--store", store, "--format", "json"))
    assert stored["inserted"] == 1_200
    later = (T0 + timedelta(hours=1)).isoformat()
    gate = json.loads(run(cli, root, "rollout", "gate", plan_arg, "--store", store, "--now", later, "--format", "json"))
    assert gate["verdict"] in ("Passed", "PassedWithWarnings"), gate["sentence"]  # too few for every margin
    incompatible = next(m for m in gate["metrics"] if m["metric"] == "incompatible_version")
    assert incompatible["arms"]["candidate"]["x"] == 0 and incompatible["arms"]["baseline"]["x"] == 0

    # Retiring before full traffic is refused; nothing changes.
    refused = run(cli, root, "rollout", "retire", plan_arg, code=2)
    assert "promote it to full traffic before retiring major line 1" in refused
    for _ in range(2):  # ramp, then full (forced: this test is about the parsers, not the statistics)
        run(cli, root, "rollout", "promote", plan_arg, "--store", store, "--force", "--reason", "test", "--now", later)
    serving = load_serving(root, C)
    assert {serving.assign(f"u{i}").arm for i in range(50)} == {"candidate"}

    retired = json.loads(run(cli, root, "rollout", "retire", plan_arg, "--format", "json"))
    assert retired["schema_floor"] == {"from": "1.1", "to": "2.0"}
    assert retired["prompt_version"] == {"from": "1.0.0", "to": "2.0.0"}
    config = (root / f"versions/{C}/contract.yaml").read_text(encoding="utf-8")
    assert "  schema_floor: '2.0'\n  prompt_version: '2.0.0'\n" in config
    policy = load_contract(root, C).default_policy
    assert (str(policy.schema_floor), str(policy.prompt_version)) == ("2.0", "2.0.0")
    serving = load_serving(root, C)
    assert serving.parse(answer("2.0.0", "2.0"), ["app/db.py"], "candidate").accepted
    assert serving.parse(answer("1.0.0", "1.1"), ["app/db.py"], "baseline").reason == "incompatible_version"
    (root / "a2.json").write_text(answer("2.0.0", "2.0"), encoding="utf-8")
    assert run(cli, root, "validate", "--contract", C, "--changed-file", "app/db.py", str(root / "a2.json")).startswith(
        "accepted"
    )
    run(cli, root, "rollout", "retire", plan_arg, code=2)  # done once: nothing left to retire
    status = json.loads(
        run(cli, root, "rollout", "status", plan_arg, "--store", store, "--now", later, "--format", "json")
    )
    assert status["step_name"] == "full" and status["reason"] != "PARSER_NOT_READY"


def test_assign_never_routes_a_unit_to_a_candidate_the_parser_cannot_read(cli: Cli, full_project: Path) -> None:
    root = full_project
    shutil.copytree(REPO_ROOT / "rollout", root / "rollout")
    plan = root / "rollout/review-result/review-1.1.yaml"
    # A candidate that is not released (the plan was merged before its release), forced past the parser stage.
    text = plan.read_text(encoding="utf-8").replace('"1.1.1", schema_version: "1.1"', '"1.2.0", schema_version: "1.1"')
    plan.write_text(text, encoding="utf-8")
    args = ("--force", "--reason", "test", "--by", "t", "--store", empty_store(root / "s.duckdb"))
    run(cli, root, "rollout", "promote", str(plan), *args)
    chosen = [
        json.loads(run(cli, root, "rollout", "assign", str(plan), f"acme/api#{i}", "--format", "json"))
        for i in range(200)
    ]
    assert {c["arm"] for c in chosen} == {"baseline"}
    held = [c for c in chosen if c["bucket"] < c["weight"]]
    assert held and all("the candidate prompt 1.2.0 is not released" in c["held"] for c in held)
    assert all(c["held"] is None for c in chosen if c["bucket"] >= c["weight"])
    assert "; held: the parser cannot read the candidate yet" in run(
        cli, root, "rollout", "assign", str(plan), f"acme/api#{held[0]['unit'].split('#')[1]}"
    )
    routes = json.loads(run(cli, root, "rollout", "routes", str(plan)))
    assert routes["weight"] == 0.0 and "not released" in routes["held"]
    serving = load_serving(root, "review-result")
    unit = held[0]["unit"]
    assert serving.assign(unit).arm == "baseline" and serving.assign(unit).held is not None
    assert json.dumps(serving.assign(unit).to_dict())  # JSON-ready


def test_release_check_flags_a_policy_that_cannot_read_the_head(tmp_path: Path, cli: Cli) -> None:
    root = new_project(tmp_path, cli)
    run(cli, root, "release", "check", "--contract", C)
    # The floor raised by hand to a newer line while the head still targets 1.1.
    schema = (root / f"versions/{C}/schemas/1.1.json").read_text(encoding="utf-8")
    (root / f"versions/{C}/schemas/2.0.json").write_text(schema, encoding="utf-8")
    config = root / f"versions/{C}/contract.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("schema_floor: '1.1'", "schema_floor: '2.0'"), encoding="utf-8"
    )
    out = run(cli, root, "release", "check", "--contract", C, code=2)
    assert f"versions/{C}/contract.yaml:" in out and "PR007" in out
    assert "policy.schema_floor 2.0 cannot read the head's schema 1.1: major line 1 is retired" in out


def test_rollout_new_writes_no_parser_stage_for_a_prompt_only_change(tmp_path: Path, cli: Cli) -> None:
    root = new_project(tmp_path, cli)
    run(cli, root, "release", "cut", "--contract", C, "--date", "2026-11-01T09:00:00Z")
    head = root / f"templates/{C}.j2"
    text = head.read_text(encoding="utf-8").replace('"1.0.0"', '"1.0.1"')
    head.write_text(text.replace("You are a senior", "You are a careful senior"), encoding="utf-8")
    run(cli, root, "release", "cut", "--contract", C, "--date", "2026-11-02T09:00:00Z")
    run(cli, root, "rollout", "new", C)
    plan = (root / f"rollout/{C}/{C}-1.0.1.yaml").read_text(encoding="utf-8")
    assert "name: parser" not in plan and "  - {name: canary, weight: 0.05" in plan


def test_with_overrides_parses_texts_and_refuses_other_types() -> None:
    policy = ParserPolicy(SchemaVersion(1, 0), PromptVersion(1, 0, 0))
    moved = policy.with_overrides(prompt_version="2.1.0", schema_floor="2.0")
    assert (moved.prompt_version, moved.schema_floor) == (PromptVersion(2, 1, 0), SchemaVersion(2, 0))
    assert policy.with_overrides(prompt_version=PromptVersion(1, 0, 1)).prompt_version == PromptVersion(1, 0, 1)
    with pytest.raises(VersionError, match=re.escape("prompt version '2.x' is not MAJOR.MINOR")):
        policy.with_overrides(prompt_version="2.x")
    bad: Any
    for bad in ((2, 1, 0), SchemaVersion(2, 1), 2.1):
        with pytest.raises(TypeError, match="prompt_version must be a PromptVersion or its text"):
            policy.with_overrides(prompt_version=bad)
    with pytest.raises(TypeError, match="schema_floor must be a SchemaVersion"):
        policy.with_overrides(schema_floor=PromptVersion(2, 0, 0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="allow_prompt_patch_drift must be a bool, not str"):
        policy.with_overrides(allow_prompt_patch_drift="yes")  # type: ignore[arg-type]


def _tuples(value: Any, where: str = "$") -> list[str]:
    """Where ``value`` holds anything json.dumps would write differently from what it is (a tuple, e.g. a
    version as [2, 0]) or could not write."""
    if isinstance(value, dict):
        return [
            p
            for k, v in value.items()
            for p in ([f"{where}: key {k!r}"] if not isinstance(k, str) else []) + _tuples(v, f"{where}.{k}")
        ]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _tuples(v, f"{where}[{i}]")]
    if value is None or isinstance(value, str | int | float | bool):
        return []
    return [f"{where}: {type(value).__name__} {value!r}"]


def test_result_objects_are_json_ready(cli: Cli, full_project: Path) -> None:
    from promptops.core.lock import load_lock
    from promptops.rollout.assign import assign, routes
    from promptops.rollout.plan import load_plan
    from promptops.rollout.policies import candidate_unreadable
    from promptops.rollout.session import status

    root = full_project
    shutil.copytree(REPO_ROOT / "rollout", root / "rollout")
    path = root / "rollout/review-result/review-1.1.yaml"
    plan = load_plan(path, "rollout/review-result/review-1.1.yaml")
    contract = load_contract(root, "review-result")
    serving = load_serving(root, "review-result")
    lock = load_lock(root, "review-result")
    results: dict[str, Any] = {
        "assign": assign(plan, "acme/api#1", 1.0).to_dict(),
        "held": assign(plan, "acme/api#1", 1.0, unreadable="x").to_dict(),
        "routes": routes(plan, unreadable=candidate_unreadable(contract, lock, plan)),
        "serving": serving.to_dict(),
        "serving_assign": serving.assign("acme/api#1").to_dict(),
        "status": status(root, plan, contract, None, T0).to_dict(),
        "releases": [r.to_dict(lock.directory) for r in lock.releases],
        "outcome": serving.parse(answer("1.0.1", "1.0"), ["app/db.py"], "baseline").to_dict(),
    }
    assert _tuples(results) == []
    assert results["assign"]["prompt_version"] == "1.1.1" and results["serving"]["arms"]["candidate"] == {
        "prompt_version": "1.1.1",
        "schema_version": "1.1",
        "schema_floor": "1.0",
        "pinned_prompt": "1.1.1",
    }


def test_the_readme_service_snippet_follows_the_promotion(cli: Cli, full_project: Path, monkeypatch: Any) -> None:
    """The README's service code, run as written: after the rollout reaches full traffic it reads the new
    release's answers with no edit of the contract's policy."""
    import logging

    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## In a service") :]
    code = section[section.index("```python\n") + len("```python\n") : section.index("```\n", 10)]
    root = full_project
    shutil.copytree(REPO_ROOT / "rollout", root / "rollout")
    monkeypatch.chdir(root)
    published: list[Any] = []

    def serve(prompt: str, schema: str) -> list[Any]:
        published.clear()
        scope = {"model_text": answer(prompt, schema), "publish": published.append, "log": logging.getLogger("t")}
        exec(compile(code, "README.md", "exec"), scope)  # the README's own code, as written
        return published

    assert serve("1.0.1", "1.0")  # before the rollout: the baseline's answers
    plan = str(root / "rollout/review-result/review-1.1.yaml")
    empty_store(root / "s.duckdb")
    for _ in range(3):
        run(cli, root, "rollout", "promote", plan, "--force", "--reason", "t", "--by", "t", "--store", "s.duckdb")
    assert serve("1.1.1", "1.1")  # at full traffic: the candidate's, with contract.yaml untouched
    assert not serve("1.0.1", "1.0")  # a unit at full traffic is the candidate's: a 1.0.1 answer is not
