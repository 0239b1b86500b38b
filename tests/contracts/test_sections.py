"""contract.yaml sections beyond parsing: tiers, the report filter and merge semantics, each read by its feature.
A broken section stops the feature that reads it, and lint, with one line naming the file and key, and no other
command; the code-review-findings report filter decides as its format says."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from promptops import Contract, ContractError, load_contract
from promptops.lint.contracts import load as lint_load
from promptops.merge.report_filter import report_filter
from promptops.parsing.semantics import merge_semantics
from promptops.parsing.tiers import tier, tiers
from promptops.render.renderer import Renderer
from tests.conftest import Cli
from tests.helpers import REPO_ROOT

CRF = "code-review-findings"


def _project(tmp_path: Path, old: str, new: str, contract: str = CRF) -> Path:
    shutil.copytree(REPO_ROOT / "versions" / contract, tmp_path / "versions" / contract)
    path = tmp_path / "versions" / contract / "contract.yaml"
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return tmp_path


BROKEN = [
    (
        "tier-omits-unknown",
        "omit: [why_it_matters, evidence]",
        "omit: [why_it_matter]",
        "tiers.merge.omit names 'why_it_matter'",
    ),
    ("tier-omits-role", "omit: [why_it_matters, evidence]", "omit: [file]", "'file', a role field the parser needs"),
    (
        "tier-unknown-key",
        "omit: [why_it_matters, evidence]",
        "omits: [evidence]",
        "key 'tiers.merge.omits': unknown key",
    ),
    (
        "tier-not-mapping",
        "  detail:\n    description: the full schema, for the artifact file on disk\n",
        "  detail: yes\n",
        "key 'tiers.detail': must be a mapping",
    ),
    (
        "filter-field-not-numeric",
        "field: confidence\n  rules:",
        "field: severity\n  rules:",
        "must be a numeric finding",
    ),
    (
        "filter-when-not-in-enum",
        "when: {severity: P0}",
        "when: {severity: critical}",
        "'critical' is not one of P0, P1",
    ),
    ("filter-when-unknown-field", "when: {severity: P0}", "when: {priority: P0}", "names 'priority', not a finding"),
    ("filter-min-not-number", "min: 50", "min: fifty", "key 'report_filter.rules[0].min': must be a number"),
    (
        "filter-no-rules",
        "  rules:\n    - when: {severity: P0}\n      min: 50\n    - min: 75\n",
        "",
        "report_filter.rules': required",
    ),
    ("filter-field-omitted-by-tier", "omit: [why_it_matters, evidence]", "omit: [confidence]", "(tier merge)"),
    ("merge-unknown-common-severity", "P3: low}", "P3: trivial}", "['trivial'] not among"),
    ("merge-both-scales", "divide_by: 100", "divide_by: 100\n    map: {a: 1}", "give exactly one of divide_by"),
    ("merge-unknown-message-field", "message: [why_it_matters, title]", "message: [why]", "merge.message names 'why'"),
    (
        "merge-reviewer-top-unknown",
        "reviewer: {top: reviewer}",
        "reviewer: {top: persona}",
        "merge.reviewer.top 'persona'",
    ),
    (
        "merge-global-ids-without-id",
        "reviewer: {top: reviewer}",
        "reviewer: {top: reviewer}\n  global_ids: true",
        "merge.global_ids needs an id field",
    ),
]


READERS = {"tier": tiers, "filter": report_filter, "merge": merge_semantics}


@pytest.mark.parametrize(("name", "old", "new", "message"), BROKEN, ids=[b[0] for b in BROKEN])
def test_broken_sections_name_the_file_and_key(tmp_path: Path, name: str, old: str, new: str, message: str) -> None:
    """The contract loads; the feature that owns the section, and lint's loader, stop on it with one line."""
    root = _project(tmp_path, old, new)
    contract = load_contract(root, CRF)
    cache = tmp_path / "cache"
    cache.mkdir()
    readers: list[Callable[[Contract], object]] = [READERS[name.split("-")[0]], lambda c: lint_load(root, CRF, None)]
    readers += [lambda c: lint_load(root, CRF, str(cache))] * 2  # the second from lint's cache
    for read in readers:
        with pytest.raises(ContractError) as info:
            read(contract)
        assert str(info.value).startswith(f"versions/{CRF}/")
        assert message in str(info.value)
        assert "\n" not in str(info.value)


def test_a_bad_section_stops_the_commands_that_read_it_only(tmp_path: Path, cli: Cli) -> None:
    root = _project(tmp_path, "field: confidence\n  rules:", "field: severity\n  rules:")
    shutil.copytree(REPO_ROOT / "templates", root / "templates")
    response = tmp_path / "r.json"
    response.write_text('{"reviewer": "r", "findings": [], "residual_risks": [], "testing_gaps": []}', "utf-8")
    problem = "report_filter.field 'severity' must be a numeric finding property"
    line = f"promptops: error: versions/{CRF}/schemas/1.0.json: {problem}\n"
    assert cli(root, "validate", "--contract", CRF, "--changed-file", "a.py", str(response))[0] == 0
    assert cli(root, "lint") == (3, "", line)
    assert cli(root, "merge", f"{CRF}={response}", "--changed-file", "a.py") == (3, "", line)
    assert cli(root, "merge", f"{CRF}={response}", "--changed-file", "a.py", "--no-report-filter")[0] == 0


def test_a_tier_reads_the_sections_of_its_contract() -> None:
    """merge.message names why_it_matters, which the merge tier omits: sections are checked on the full schema."""
    compact = tier(load_contract(REPO_ROOT, CRF), "merge")
    assert merge_semantics(compact) is not None and list(tiers(compact)) == ["detail", "merge"]
    assert report_filter(compact) is not None


def test_every_contract_in_the_repository_loads_with_its_sections() -> None:
    crf = load_contract(REPO_ROOT, CRF)
    assert list(tiers(crf)) == ["detail", "merge"] and report_filter(crf) is not None
    assert merge_semantics(crf) is not None
    for name in ("review-result", "agent-output", "reviewer-finding"):
        contract = load_contract(REPO_ROOT, name)
        assert merge_semantics(contract) is not None and not tiers(contract) and report_filter(contract) is None


def _finding(severity: str, confidence: Any) -> dict[str, Any]:
    return {"severity": severity, "confidence": confidence, "title": f"{severity} at {confidence}"}


# code-review-findings' _meta.confidence_thresholds: report at 75 or 100; a P0 already at 50.
FILTER_TABLE = [
    ("P0", 0, False),
    ("P0", 25, False),
    ("P0", 50, True),
    ("P0", 75, True),
    ("P1", 50, False),
    ("P1", 75, True),
    ("P2", 25, False),
    ("P2", 100, True),
    ("P3", 50, False),
    ("P3", 75, True),
]


@pytest.mark.parametrize(("severity", "confidence", "reported"), FILTER_TABLE)
def test_seed_001_report_filter(severity: str, confidence: int, reported: bool) -> None:
    screen = report_filter(load_contract(REPO_ROOT, CRF))
    assert screen is not None
    assert screen.decide(_finding(severity, confidence)).reported is reported


def test_suppressed_findings_are_accounted_for() -> None:
    screen = report_filter(load_contract(REPO_ROOT, CRF))
    assert screen is not None
    findings = [_finding(s, c) for s, c, _ in FILTER_TABLE]
    result = screen.apply(findings)
    assert len(result.reported) + len(result.suppressed) == len(findings)
    assert [s.position for s in result.suppressed] == [i for i, row in enumerate(FILTER_TABLE) if not row[2]]
    assert result.suppressed[0].reason == ("confidence 0 is below the threshold (severity P0: confidence >= 50)")
    assert result.suppressed[2].reason == "confidence 50 is below the threshold (confidence >= 75)"
    assert screen.decide({"severity": "P1"}).reported  # nothing to judge: reported, never hidden


def test_rendering_a_tier_lists_its_fields_only() -> None:
    renderer = Renderer(REPO_ROOT)
    full = load_contract(REPO_ROOT, CRF, check_schemas=False)
    detail = renderer.render(full, changed_files=["a.py"]).text
    compact = renderer.render(tier(full, "merge"), changed_files=["a.py"]).text
    assert "- `why_it_matters` (string)" in detail and "- `evidence` (array of string" in detail
    assert "why_it_matters" not in compact and "`evidence`" not in compact
    assert "- `confidence` (integer): one of `0`, `25`, `50`, `75`, `100`" in compact


def test_heads_of_contracts_without_output_versions_need_not_render_their_pins(full_project: Path) -> None:
    from promptops.lint import LintConfig, lint

    heads = [full_project / "templates" / f"{name}.j2" for name in ("agent-output", "reviewer-finding", CRF)]
    assert lint(full_project, heads, LintConfig(select=("PO001",))).findings == ()
    renderer = Renderer(full_project)
    text = renderer.render(load_contract(full_project, "agent-output"), changed_files=["a.py"]).text
    assert "1.0.0" not in text and "prompt_version" not in text  # nothing for the model to write back
    # The pins are still checked against the policy: a pin the parser refuses is an error.
    head = full_project / "templates" / "agent-output.j2"
    head.write_text(head.read_text(encoding="utf-8").replace('"1.0.0"', '"1.1.0"'), encoding="utf-8")
    messages = [f.message for f in lint(full_project, [head], LintConfig(select=("PO001",))).findings]
    assert messages == [
        "prompt_version 1.1.0 is not what the contract's parser accepts "
        "(1.0.0, policy.prompt_version in versions/agent-output/contract.yaml)"
    ]
