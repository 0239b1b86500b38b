"""The traffic simulator: deterministic, schema-generic, and its defects are the ones the parser reports."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from promptops import Parser, load_contract
from promptops.parsing.diagnostics import ParseOutcome
from promptops.rollout.plan import load_plan
from promptops.simulate import ArmProfile, simulate
from tests.helpers import REPO_ROOT
from tests.rollout.plans import PLAN, write_plan

START = datetime(2026, 11, 2, tzinfo=UTC)
CLEAN = ArmProfile(drop=0, coercion=0, wrapper=0, truncation=0, incompatible=0, malformed=0)
CONTRACTS = sorted(p.name for p in (REPO_ROOT / "versions").iterdir() if (p / "contract.yaml").is_file())


def _records(
    tmp_path: Path, contract_name: str, profile: ArmProfile, n: int = 400, seed: int = 3
) -> list[dict[str, Any]]:
    contract = load_contract(REPO_ROOT, contract_name)
    policy = contract.default_policy
    versions = f'{{prompt_version: "{policy.prompt_version}", schema_version: "{contract.latest_schema}"}}'
    text = PLAN.replace("contract: review-result", f"contract: {contract_name}")
    text = text.replace('{prompt_version: "1.0.0", schema_version: "1.0"}', versions)
    text = text.replace('{prompt_version: "1.1.0", schema_version: "1.1"}', versions)
    plan = load_plan(write_plan(tmp_path, text), "plan.yaml")
    profiles = {"baseline": profile, "candidate": profile}
    end = START + timedelta(hours=2)
    return list(simulate(plan, contract, responses=n, start=START, end=end, seed=seed, profiles=profiles, weight=0.5))


@pytest.mark.parametrize("contract_name", CONTRACTS)
def test_clean_traffic_parses_without_a_diagnostic_for_every_contract(tmp_path: Path, contract_name: str) -> None:
    contract = load_contract(REPO_ROOT, contract_name)
    policy = contract.default_policy
    parser = Parser(contract, policy)
    versions = {"schema_version": str(contract.latest_schema), "prompt_version": str(policy.prompt_version)}
    records = _records(tmp_path, contract_name, CLEAN)
    for record in records:
        outcome = parser.parse(record["raw"], record["changed_files"], **versions)
        assert outcome.outcome == "accepted" and not outcome.diagnostics, (record["raw"], outcome.diagnostics)
    assert Counter(r["arm"] for r in records).keys() == {"baseline", "candidate"}
    assert sum(len(r["raw"]) for r in records) > 400 * 100  # real findings, not empty shells


@pytest.mark.parametrize("contract_name", CONTRACTS)
def test_each_defect_kind_shows_up_as_its_diagnostic(tmp_path: Path, contract_name: str) -> None:
    contract = load_contract(REPO_ROOT, contract_name)
    policy = contract.default_policy
    versions = {"schema_version": str(contract.latest_schema), "prompt_version": str(policy.prompt_version)}
    parser = Parser(contract, policy)
    expected: dict[str, Callable[[ParseOutcome], bool]] = {
        "drop": lambda o: o.findings_dropped > 0,
        "coercion": lambda o: o.coercions > 0 and o.findings_dropped == 0,
        "wrapper": lambda o: any(d.code == "extracted_from_wrapper" for d in o.diagnostics),
        "malformed": lambda o: o.reason == "invalid_json",
        "truncation": lambda o: any(d.code == "truncated_output" for d in o.diagnostics),
    }
    if contract.versions.schema is not None:  # only responses that carry their version can claim a wrong one
        expected["incompatible"] = lambda o: o.reason == "incompatible_version"
    for kind, check in expected.items():
        profile = replace(CLEAN, **{kind: 1.0})
        records = _records(tmp_path, contract_name, profile, n=60)
        hits = sum(bool(check(parser.parse(r["raw"], r["changed_files"], **versions))) for r in records)
        assert hits == len(records), kind


def test_the_same_seed_gives_the_same_records(tmp_path: Path) -> None:
    profile = ArmProfile()
    first = _records(tmp_path, "review-result", profile, n=200)
    assert first == _records(tmp_path, "review-result", profile, n=200)
    assert first != _records(tmp_path, "review-result", profile, n=200, seed=4)


# A team's own reviewer: its array is `gaps`, ids `G1`, `G2`..., a ranged line, a uri, a multiple and a length.
GAPS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["schema_version", "prompt_version", "gaps"],
    "properties": {
        "schema_version": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+$"},
        "prompt_version": {"type": "string", "pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+$"},
        "gaps": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["id", "file", "line", "severity", "what", "effort"],
                "properties": {
                    "id": {"type": "string", "pattern": "^G[0-9]+$"},
                    "file": {"type": "string"},
                    "line": {"type": "integer", "minimum": 10, "maximum": 20},
                    "severity": {"type": "string", "enum": ["high", "low"]},
                    "what": {"type": "string", "minLength": 100, "maxLength": 120},
                    "effort": {"type": "integer", "minimum": 0, "maximum": 40, "multipleOf": 5},
                    "link": {"type": "string", "format": "uri"},
                    "ticket": {"type": "string", "pattern": "^[A-Z]{2,4}-[1-9][0-9]{0,4}$"},
                },
            },
        },
    },
}


def test_a_foreign_schema_gets_traffic_drawn_from_its_own_rules(tmp_path: Path) -> None:
    import json

    import promptops.cli

    root = tmp_path / "project"
    root.mkdir()
    schema = tmp_path / "gaps.json"
    schema.write_text(json.dumps(GAPS_SCHEMA))
    assert promptops.cli.run(["--root", str(root), "contract", "new", "gaps", "--schema", str(schema)]) == 0
    contract = load_contract(root, "gaps")
    assert contract.items == "gaps" and contract.roles.id == "id"
    versions = '{prompt_version: "1.0.0", schema_version: "1.0"}'
    text = PLAN.replace("contract: review-result", "contract: gaps")
    text = text.replace('{prompt_version: "1.0.0", schema_version: "1.0"}', versions)
    text = text.replace('{prompt_version: "1.1.0", schema_version: "1.1"}', versions)
    plan = load_plan(write_plan(tmp_path, text), "plan.yaml")
    records = list(
        simulate(plan, contract, responses=300, start=START, end=START + timedelta(hours=2), seed=5,
                 profiles={"baseline": CLEAN, "candidate": CLEAN}, weight=0.5)
    )  # fmt: skip
    parser = Parser(contract, contract.default_policy)
    gaps = []
    for record in records:
        outcome = parser.parse(record["raw"], record["changed_files"])
        assert outcome.outcome == "accepted" and not outcome.diagnostics, (record["raw"], outcome.diagnostics)
        gaps += json.loads(record["raw"])["gaps"]
    assert len(gaps) > 600
    for gap in gaps:
        assert gap["id"].startswith("G") and 10 <= gap["line"] <= 20 and gap["effort"] % 5 == 0, gap
        assert 100 <= len(gap["what"]) <= 120, gap
        if "link" in gap:
            assert gap["link"].startswith("https://"), gap
    assert sum("ticket" in g for g in gaps) > 100  # an optional patterned field is drawn, not left out
    ids = [[g["id"] for g in json.loads(r["raw"])["gaps"]] for r in records]
    assert all(len(set(each)) == len(each) for each in ids)  # distinct within a response
