"""Versions are checked before any finding-level work."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from promptops import Code, Contract, Parser, ParserPolicy, PolicyError, PromptVersion, SchemaVersion, load_contract
from promptops.core.versioning import prompt_accepted, schema_accepted
from tests.helpers import CHANGED, REPO_ROOT, finding, response

SCHEMA_TABLE = [
    # floor, declared, accepted
    ("1.0", "1.0", True),
    ("1.0", "1.1", True),
    ("1.2", "1.10", True),  # numeric comparison: 10 > 2
    ("1.10", "1.2", False),
    ("1.2", "1.1", False),
    ("1.0", "2.0", False),
    ("2.0", "1.9", False),
    ("1.0", "01.00", True),  # numbers, not strings
]


@pytest.mark.parametrize(("floor", "declared", "accepted"), SCHEMA_TABLE)
def test_schema_floor_rule(floor: str, declared: str, accepted: bool) -> None:
    assert schema_accepted(SchemaVersion.parse(floor), SchemaVersion.parse(declared)) is accepted


PROMPT_TABLE = [
    # pinned, declared, drift, accepted
    ("1.0.0", "1.0.0", False, True),
    ("1.0.0", "1.0", False, True),  # a missing patch counts as 0
    ("1.0", "1.0.0", False, True),
    ("1.0.0", "1.0.1", False, False),
    ("1.0.0", "1.0.1", True, True),
    ("1.0.3", "1.0.0", True, True),
    ("1.0.0", "1.1.0", True, False),
    ("1.0.0", "2.0.0", True, False),
]


@pytest.mark.parametrize(("pinned", "declared", "drift", "accepted"), PROMPT_TABLE)
def test_prompt_pin_rule(pinned: str, declared: str, drift: bool, accepted: bool) -> None:
    result = prompt_accepted(PromptVersion.parse(pinned), PromptVersion.parse(declared), allow_patch_drift=drift)
    assert result is accepted


def test_incompatible_version_rejects_before_findings(both: Parser) -> None:
    bad_findings = [finding(1, severity="nope"), "not an object", finding(3, file="elsewhere.py")]
    for overrides in ({"schema_version": "2.0"}, {"prompt_version": "1.0.1"}, {"prompt_version": "3"}):
        outcome = both.parse(json.dumps(response(bad_findings, **overrides)), CHANGED)
        if overrides.get("prompt_version") == "3":
            assert outcome.reason == Code.INVALID_TOP_LEVEL_FIELD
            continue
        assert outcome.reason == Code.INCOMPATIBLE_VERSION
        assert [(d.code, d.level) for d in outcome.diagnostics] == [(Code.INCOMPATIBLE_VERSION, "error")]
        assert outcome.diagnostics[0].path in ("schema_version", "prompt_version")


def test_policy_overrides_change_acceptance(contract: Contract) -> None:
    body = json.dumps(response(prompt_version="1.0.4"))
    strict = Parser(contract)
    drifting = Parser(contract, contract.default_policy.with_overrides(allow_prompt_patch_drift=True))
    assert strict.parse(body, CHANGED).reason == Code.INCOMPATIBLE_VERSION
    assert drifting.parse(body, CHANGED).accepted


def test_newer_unknown_minor_is_read_tolerantly(both: Parser) -> None:
    body = response([finding(1, fix_hint="bind it"), finding(2)], schema_version="1.4", verdict="ok")
    outcome = both.parse(json.dumps(body), CHANGED)
    assert outcome.accepted and outcome.findings_kept == 2
    assert "fix_hint" not in outcome.result["findings"][0] and "verdict" not in outcome.result  # type: ignore[index,operator]
    ignored = [(d.code, d.path, d.level, d.finding_index) for d in outcome.diagnostics]
    assert ignored == [
        (Code.UNKNOWN_FIELD_IGNORED, "verdict", "info", None),
        (Code.UNKNOWN_FIELD_IGNORED, "findings[0].fix_hint", "info", 0),
    ]


def test_newer_minor_still_drops_unknown_enum_values(both: Parser) -> None:
    body = response([finding(1, severity="blocker"), finding(2)], schema_version="1.4")
    outcome = both.parse(json.dumps(body), CHANGED)
    assert [d.code for d in outcome.diagnostics] == [Code.INVALID_ENUM]


def test_unknown_field_at_a_known_version_drops(both: Parser) -> None:
    outcome = both.parse(json.dumps(response([finding(1, fix_hint="x"), finding(2)])), CHANGED)
    assert [(d.code, d.path) for d in outcome.diagnostics] == [(Code.UNKNOWN_FIELD, "findings[0].fix_hint")]


@pytest.fixture(scope="module")
def two_schemas(tmp_path_factory: pytest.TempPathFactory) -> Contract:
    """review-result with a 1.1 schema that adds an optional finding field and a severity value."""
    root = tmp_path_factory.mktemp("project")
    shutil.copytree(REPO_ROOT / "versions" / "review-result", root / "versions" / "review-result")
    schema = json.loads((root / "versions/review-result/schemas/1.0.json").read_text())
    item = schema["properties"]["findings"]["items"]
    item["properties"]["fix_hint"] = {"type": "string"}
    item["properties"]["severity"]["enum"].append("blocker")
    Path(root / "versions/review-result/schemas/1.1.json").write_text(json.dumps(schema))
    return load_contract(root, "review-result")


@pytest.mark.parametrize("fast", [True, False])
def test_each_known_version_is_validated_with_its_own_schema(two_schemas: Contract, fast: bool) -> None:
    parser = Parser(two_schemas, fast_path=fast)
    with_hint = [finding(1, fix_hint="bind it", severity="blocker"), finding(2)]
    newer = parser.parse(json.dumps(response(with_hint, schema_version="1.1")), CHANGED)
    assert newer.findings_kept == 2 and newer.diagnostics == []
    older = parser.parse(json.dumps(response(with_hint, schema_version="1.0")), CHANGED)
    assert [d.code for d in older.diagnostics] == [Code.UNKNOWN_FIELD]
    floor_11 = Parser(
        two_schemas, two_schemas.default_policy.with_overrides(schema_floor=SchemaVersion(1, 1)), fast_path=fast
    )
    assert floor_11.parse(json.dumps(response(schema_version="1.0")), CHANGED).reason == Code.INCOMPATIBLE_VERSION
    assert floor_11.parse(json.dumps(response(with_hint, schema_version="1.1")), CHANGED).findings_kept == 2


def test_a_floor_without_a_schema_is_a_policy_error(contract: Contract) -> None:
    with pytest.raises(PolicyError, match=r"schema floor 1\.5"):
        Parser(contract, ParserPolicy(SchemaVersion(1, 5), PromptVersion(1, 0, 0)))


@pytest.mark.parametrize(
    ("overrides", "declared"),
    [
        ({"prompt_version": "2.0.0"}, ("1.0", "2.0.0")),
        ({"schema_version": "2.0"}, ("2.0", "1.0.0")),
        ({"schema_version": " 1.0 ", "prompt_version": "9.9.9"}, ("1.0", "9.9.9")),
        ({"schema_version": 7}, (None, "1.0.0")),
        ({"prompt_version": "2.0.0", "findings": "many"}, ("1.0", "2.0.0")),
    ],
)
def test_a_rejected_response_keeps_the_versions_it_declared(
    both: Parser, overrides: dict[str, object], declared: tuple[str | None, str | None]
) -> None:
    outcome = both.parse(json.dumps(response(**overrides)), CHANGED)
    assert not outcome.accepted
    assert (outcome.schema_version, outcome.prompt_version) == declared
