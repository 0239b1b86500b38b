"""The code-review-findings, agent-output and reviewer-finding contracts: each format's own example round-trips
through the real ``promptops validate``, and the transcription choices (anchors, optional file/line, closed objects,
tiers) hold."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from promptops import Parser, SchemaVersion, load_contract
from promptops.parsing.tiers import tier
from tests.conftest import Cli
from tests.helpers import REPO_ROOT

EXAMPLES = Path(__file__).parent / "examples"
CHANGED = ["src/api/users.ts", "src/page.py"]
CHANGED_ARGS = [arg for path in CHANGED for arg in ("--changed-file", path)]


def example(contract: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXAMPLES / f"{contract}.json").read_text(encoding="utf-8"))
    return data


def validate(cli: Cli, tmp_path: Path, contract: str, document: Any, *args: str) -> tuple[int, dict[str, Any]]:
    path = tmp_path / "response.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    code, out, err = cli(
        REPO_ROOT, "validate", "--contract", contract, *CHANGED_ARGS, "--format", "json", *args, str(path)
    )
    assert err == ""
    result: dict[str, Any] = json.loads(out)
    return code, result


@pytest.mark.parametrize("contract", ["reviewer-finding", "agent-output", "code-review-findings"])
def test_the_format_example_round_trips(cli: Cli, tmp_path: Path, contract: str) -> None:
    document = example(contract)
    code, out = validate(cli, tmp_path, contract, document)
    assert (code, out["outcome"], out["diagnostics"]) == (0, "accepted", [])
    assert out["result"] == document


@pytest.mark.parametrize(
    ("confidence", "kept", "code"),
    [
        (0, True, None),
        (25, True, None),
        (50, True, None),
        (75, True, None),
        (100, True, None),
        (75.0, True, None),  # JSON Schema: 75.0 is the integer 75
        (60, False, "invalid_enum"),
        (0.75, False, "invalid_field"),  # a float is not an anchor ("Float values are not valid")
        ("75", False, "invalid_field"),
    ],
)
def test_code_review_findings_confidence_is_an_anchor(
    cli: Cli, tmp_path: Path, confidence: Any, kept: bool, code: str | None
) -> None:
    document = example("code-review-findings")
    document["findings"][0]["confidence"] = confidence
    exit_code, out = validate(cli, tmp_path, "code-review-findings", document)
    assert exit_code == 0 and out["outcome"] == "accepted"
    assert len(out["result"]["findings"]) == int(kept)
    assert [d["code"] for d in out["diagnostics"] if d["finding_index"] == 0] == ([] if kept else [code])


COMPACT = {
    "title": "Off-by-one in pagination",
    "severity": "P1",
    "file": "src/page.py",
    "line": 12,
    "autofix_class": "safe_auto",
    "owner": "review-fixer",
    "requires_verification": True,
    "confidence": 75,
    "pre_existing": False,
}


@pytest.mark.parametrize(
    ("tier", "finding", "kept", "codes"),
    [
        ("merge", COMPACT, True, []),
        ("merge", {**COMPACT, "suggested_fix": None}, True, []),
        ("merge", {**COMPACT, "why_it_matters": "kept as an undeclared member"}, True, []),  # open object
        ("merge", {k: v for k, v in COMPACT.items() if k != "owner"}, False, ["missing_required_field"]),
        ("detail", COMPACT, False, ["missing_required_field", "all_findings_dropped"]),
        (None, COMPACT, False, ["missing_required_field", "all_findings_dropped"]),  # no tier: the full schema
        (
            "detail",
            {**COMPACT, "why_it_matters": "w", "evidence": []},
            False,
            ["invalid_field", "all_findings_dropped"],
        ),
        ("detail", {**COMPACT, "why_it_matters": "w", "evidence": ["e"]}, True, []),
    ],
)
def test_tiers(
    cli: Cli, tmp_path: Path, tier: str | None, finding: dict[str, Any], kept: bool, codes: list[str]
) -> None:
    document = {"reviewer": "correctness", "findings": [finding], "residual_risks": [], "testing_gaps": []}
    args = ("--tier", tier) if tier else ()
    code, out = validate(cli, tmp_path, "code-review-findings", document, *args)
    assert code == 0
    assert len(out["result"]["findings"]) == int(kept)
    assert [d["code"] for d in out["diagnostics"]][: len(codes) or None] == codes


def test_an_unknown_tier_is_a_tool_failure(cli: Cli, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("{}", encoding="utf-8")
    code, out, err = cli(
        REPO_ROOT, "validate", "--contract", "agent-output", "--tier", "merge", *CHANGED_ARGS, str(path)
    )
    assert (code, out) == (3, "")
    assert err == "promptops: error: contract agent-output has no tier 'merge' (tiers: none)\n"


def test_a_tier_is_the_schema_minus_its_omitted_fields() -> None:
    full = load_contract(REPO_ROOT, "code-review-findings")
    merge, detail = tier(full, "merge"), tier(full, "detail")
    v = SchemaVersion(1, 0)
    assert merge.tier_name == "merge" and merge.default_policy == full.default_policy
    assert set(full.shape(v).item.properties) - set(merge.shape(v).item.properties) == {"why_it_matters", "evidence"}
    assert "evidence" not in merge.shape(v).schema["properties"]["findings"]["items"]["required"]
    assert "evidence" in full.shape(v).schema["properties"]["findings"]["items"]["required"]  # not mutated
    assert detail.shape(v) == full.shape(v)
    assert merge.shape(v).top == full.shape(v).top


LINES: list[tuple[Any, Any, str | None]] = [
    # (line as written, line kept or None when dropped, diagnostic code)
    (42, 42, None),
    (42.0, 42, "converted_numeric_string"),
    ("42", 42, "converted_numeric_string"),
    (42.5, None, "invalid_line"),  # not a line number: dropped, never rounded
    (0, None, "invalid_line"),
    (-3, None, "invalid_line"),
    (None, None, "invalid_line"),  # .optional() admits absence, not null
    (True, None, "invalid_line"),
]


@pytest.mark.parametrize("contract", ["agent-output", "reviewer-finding"])
@pytest.mark.parametrize(("line", "kept_line", "code"), LINES)
@pytest.mark.parametrize("fast_path", [True, False])
def test_number_lines_are_read_as_line_numbers(
    contract: str, line: Any, kept_line: Any, code: str | None, fast_path: bool
) -> None:
    document = example(contract)
    document["findings"] = document["findings"][:1]
    document["findings"][0]["line"] = line
    outcome = Parser(load_contract(REPO_ROOT, contract), fast_path=fast_path).parse(
        json.dumps(document), CHANGED, schema_version="1.0", prompt_version="1.0.0"
    )
    assert outcome.accepted
    findings = outcome.result["findings"] if outcome.result else []
    assert [f["line"] for f in findings] == ([kept_line] if kept_line is not None else [])
    assert [d.code for d in outcome.diagnostics if d.finding_index == 0] == ([code] if code else [])


@pytest.mark.parametrize(
    ("contract", "edit", "codes"),
    [
        ("agent-output", {"file": None}, []),  # no file: about the change as a whole, not reconciled
        ("agent-output", {"file": "elsewhere.py"}, ["file_not_in_changed_files"]),
        ("agent-output", {"line": None}, []),
        ("agent-output", {"confidence": "high"}, []),  # Zod strips unknown keys: accepted (and kept)
        ("agent-output", {"severity": "info"}, ["invalid_enum"]),
        ("agent-output", {"title": ""}, []),  # z.string() admits ""
        ("reviewer-finding", {"line": None}, []),
        ("reviewer-finding", {"suggestedFix": None}, []),
        ("reviewer-finding", {"id": "not-a-hash"}, []),  # the id is not checked against file+line+description
        ("reviewer-finding", {"confidence": 1.5}, ["invalid_field"]),
        ("reviewer-finding", {"confidence": -0.1}, ["invalid_field"]),
        ("reviewer-finding", {"confidence": 1}, []),
        ("reviewer-finding", {"category": "security"}, ["unknown_field"]),  # closed: TypeScript excess property
        ("reviewer-finding", {"file": None}, ["missing_required_field"]),
        ("code-review-findings", {"evidence": []}, ["invalid_field"]),
        ("code-review-findings", {"suggested_fix": None}, []),
        ("code-review-findings", {"suggested_fix": "null"}, []),
        ("code-review-findings", {"severity": "p0"}, ["invalid_enum"]),
        ("code-review-findings", {"title": "x" * 101}, ["invalid_field"]),
        ("code-review-findings", {"notes": "extra"}, []),  # the format leaves its objects open
    ],
)
def test_transcription_choices(contract: str, edit: dict[str, Any], codes: list[str]) -> None:
    document = copy.deepcopy(example(contract))
    finding = document["findings"][0]
    for key, value in edit.items():
        if value is None and key in ("file", "line", "suggestedFix"):
            finding.pop(key, None)
        else:
            finding[key] = value
    outcome = Parser(load_contract(REPO_ROOT, contract)).parse(
        json.dumps(document), CHANGED, schema_version="1.0", prompt_version="1.0.0"
    )
    assert outcome.accepted
    assert [str(d.code) for d in outcome.diagnostics if d.finding_index == 0] == codes


@pytest.mark.parametrize("contract", ["agent-output", "reviewer-finding", "code-review-findings"])
@pytest.mark.parametrize(
    ("schema", "prompt", "accepted"),
    [
        ("1.0", "1.0.0", True),
        ("1.0", "1.0", True),  # a missing patch counts as 0
        ("1.1", "1.0.0", True),  # a newer minor is read with the newest known schema, tolerantly
        ("2.0", "1.0.0", False),
        ("1.0", "1.0.1", False),  # exact prompt unless patch drift is allowed
        ("1.0", "1.1.0", False),
    ],
)
def test_request_versions_follow_the_same_acceptance_rules(
    contract: str, schema: str, prompt: str, accepted: bool
) -> None:
    parser = Parser(load_contract(REPO_ROOT, contract))
    outcome = parser.parse(json.dumps(example(contract)), CHANGED, schema_version=schema, prompt_version=prompt)
    assert outcome.accepted is accepted
    if not accepted:
        assert str(outcome.reason) == "incompatible_version"
        assert [d.path for d in outcome.diagnostics] == [None]  # the versions came from the request, not the text


def test_batch_records_state_their_request_versions(cli: Cli, tmp_path: Path) -> None:
    raw = json.dumps(example("agent-output"))
    records = [
        {"response_id": "pinned", "raw": raw},  # no versions: the policy's pins are the request's
        {"response_id": "other-prompt", "raw": raw, "prompt_version": "1.1.0"},
    ]
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    code, out, err = cli(
        REPO_ROOT, "validate", "--contract", "agent-output", *CHANGED_ARGS, "--batch", str(batch), "--format", "json"
    )
    rows = [json.loads(line) for line in out.splitlines()]
    assert (code, err) == (2, "")
    assert [(r["response_id"], r["outcome"], r["reason"]) for r in rows] == [
        ("pinned", "accepted", None),
        ("other-prompt", "rejected", "incompatible_version"),
    ]
