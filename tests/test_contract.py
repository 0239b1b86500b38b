"""Contracts load from versions/<name>/ and every problem is a ContractError naming the file and key."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from promptops import ContractError, SchemaVersion, list_contracts, load_contract
from tests.helpers import REPO_ROOT

SOURCE = REPO_ROOT / "versions" / "review-result"


def test_the_shipped_contract_is_seed_000(tmp_path: Path) -> None:
    contract = load_contract(REPO_ROOT, "review-result")
    shape = contract.shape(SchemaVersion(1, 0))
    assert shape.top.required == ("schema_version", "prompt_version", "findings")
    assert shape.item.required == ("id", "severity", "category", "title", "file", "line", "message")
    assert shape.item.optional == ("end_line", "suggestion", "confidence", "rule_id")
    assert shape.item.properties["severity"].enum == ("critical", "high", "medium", "low", "info")
    assert contract.schema_files[SchemaVersion(1, 0)] == "versions/review-result/schemas/1.0.json"
    assert "review-result" in list_contracts(REPO_ROOT)


def _project(tmp_path: Path, edit: Callable[[Path], None]) -> Path:
    shutil.copytree(SOURCE, tmp_path / "versions" / "review-result")
    edit(tmp_path / "versions" / "review-result")
    return tmp_path


def _set(name: str, text: str) -> Callable[[Path], None]:
    def edit(d: Path) -> None:
        (d / name).write_text(text)

    return edit


def _yaml_replace(old: str, new: str) -> Callable[[Path], None]:
    def edit(d: Path) -> None:
        path = d / "contract.yaml"
        path.write_text(path.read_text().replace(old, new))

    return edit


def _schema_edit(change: Callable[[dict], None]) -> Callable[[Path], None]:  # type: ignore[type-arg]
    def edit(d: Path) -> None:
        path = d / "schemas" / "1.0.json"
        schema = json.loads(path.read_text())
        change(schema)
        path.write_text(json.dumps(schema))

    return edit


BROKEN = [
    (
        "yaml-syntax",
        _set("contract.yaml", "contract: review-result\nitems: [unclosed\n"),
        r"versions/review-result/contract.yaml: line \d+: invalid YAML",
    ),
    ("not-a-mapping", _set("contract.yaml", "- a list\n"), "contract.yaml: must be a YAML mapping"),
    ("unknown-key", _yaml_replace("null_means_absent:", "null_mean_absent:"), "key 'null_mean_absent': unknown key"),
    ("unknown-nested-key", _yaml_replace("max_depth:", "max_deep:"), "key 'limits.max_deep': unknown key"),
    ("wrong-name", _yaml_replace("contract: review-result", "contract: other"), "key 'contract' is 'other'"),
    ("bad-bool", _yaml_replace("null_means_absent: false", "null_means_absent: maybe"), "must be true or false"),
    ("bad-limit", _yaml_replace("max_depth: 256", "max_depth: -1"), "key 'limits.max_depth': must be a positive"),
    ("bad-version", _yaml_replace('prompt_version: "1.0.0"', 'prompt_version: "one"'), "key 'policy.prompt_version'"),
    ("unquoted-version", _yaml_replace('schema_floor: "1.0"', "schema_floor: 1.0"), "quoted version"),
    (
        "floor-without-schema",
        _yaml_replace('schema_floor: "1.0"', 'schema_floor: "1.4"'),
        "policy.schema_floor 1.4 has no schema",
    ),
    ("role-not-a-field", _yaml_replace("path: file", "path: filename"), "fields.path names 'filename'"),
    ("items-not-a-field", _yaml_replace("items: findings", "items: results"), "items field 'results'"),
    (
        "schema-json-syntax",
        _set("schemas/1.0.json", '{"type": "object",\n  oops}'),
        r"schemas/1.0.json: line 2 column \d+: invalid JSON",
    ),
    (
        "schema-metaschema",
        _schema_edit(lambda s: s["properties"]["findings"]["items"]["properties"]["line"].update(type="int")),
        "schemas/1.0.json: not a valid JSON Schema at properties/findings/items/properties/line/type",
    ),
    ("schema-file-name", _set("schemas/latest.json", "{}"), "named X.Y.json"),
    (
        "unsupported-object-keyword",
        _schema_edit(lambda s: s["properties"]["findings"]["items"].update(minProperties=2)),
        r"unsupported keyword\(s\) \['minProperties'\]",
    ),
    ("required-undeclared", _schema_edit(lambda s: s["required"].append("verdict")), "required names undeclared"),
]


@pytest.mark.parametrize(("edit", "message"), [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_broken_contracts_name_the_file_and_problem(tmp_path: Path, edit: Callable[[Path], None], message: str) -> None:
    root = _project(tmp_path, edit)
    with pytest.raises(ContractError, match=message) as info:
        load_contract(root, "review-result")
    assert "\n" not in str(info.value)
    assert str(tmp_path) not in str(info.value)  # repo-relative


def test_missing_contract_lists_the_known_ones() -> None:
    with pytest.raises(ContractError, match=r"no such contract 'nope' \(known: .*review-result"):
        load_contract(REPO_ROOT, "nope")


def test_skipping_the_metaschema_check_still_compiles(tmp_path: Path) -> None:
    root = _project(tmp_path, lambda d: None)
    assert load_contract(root, "review-result", check_schemas=False).name == "review-result"


def test_fields_beyond_the_compiled_rules_use_the_full_validator(tmp_path: Path) -> None:
    from promptops import Parser

    def add_nested(schema: dict) -> None:  # type: ignore[type-arg]
        schema["properties"]["findings"]["items"]["properties"]["location"] = {
            "type": "object",
            "required": ["col"],
            "properties": {"col": {"type": "integer"}},
            "additionalProperties": False,
        }

    root = _project(tmp_path, _schema_edit(add_nested))
    contract = load_contract(root, "review-result")
    assert contract.shape(SchemaVersion(1, 0)).item.properties["location"].fallback is not None
    parser = Parser(contract)
    base = {
        "schema_version": "1.0",
        "prompt_version": "1.0.0",
        "findings": [
            {
                "id": "a",
                "severity": "low",
                "category": "style",
                "title": "t",
                "file": "a.py",
                "line": 1,
                "message": "m",
                "location": {"col": 3},
            },
            {
                "id": "b",
                "severity": "low",
                "category": "style",
                "title": "t",
                "file": "a.py",
                "line": 1,
                "message": "m",
                "location": {"col": "3"},
            },
        ],
    }
    outcome = parser.parse(json.dumps(base), ["a.py"])
    assert outcome.findings_kept == 1 and outcome.diagnostics[0].path == "findings[1].location"
