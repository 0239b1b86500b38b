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
