"""``promptops merge`` end to end: the real CLI on real files; its json output passes the real validate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Cli
from tests.helpers import REPO_ROOT
from tests.merge.builders import ao, crf, document, rf

SQL = "src/api/users.ts"
CHANGED_ARGS = ["--changed-file", SQL, "--changed-file", "src/page.py"]


@pytest.fixture
def outputs(tmp_path: Path) -> dict[str, Path]:
    files = {
        "security.json": document(
            "reviewer-finding",
            [
                rf(
                    "h-1",
                    "critical",
                    0.95,
                    SQL,
                    42,
                    "SQL injection vulnerability: user input is concatenated into query",
                )
            ],
        ),
        "persona.json": document(
            "code-review-findings",
            [
                crf("P0", 100, SQL, 42, "SQL injection in user lookup query"),
                crf("P2", 50, "src/page.py", 3, "Held back"),
            ],
        ),
        "arch.json": document("agent-output", [ao("A-1", "low", "Handler does data access", "Use a repository.")]),
    }
    paths = {}
    for name, content in files.items():
        paths[name] = tmp_path / name
        paths[name].write_text(json.dumps(content), encoding="utf-8")
    compact = crf("P1", 75, "src/page.py", 9, "Off-by-one in pagination")
    del compact["why_it_matters"], compact["evidence"]
    paths["compact.json"] = tmp_path / "compact.json"
    paths["compact.json"].write_text(json.dumps(document("code-review-findings", [compact])), encoding="utf-8")
    return paths


def _args(outputs: dict[str, Path]) -> list[str]:
    return [
        f"reviewer-finding={outputs['security.json']}",
        f"code-review-findings={outputs['persona.json']}",
        f"agent-output={outputs['arch.json']}",
        f"code-review-findings:merge={outputs['compact.json']}",
        *CHANGED_ARGS,
    ]


def test_markdown_groups_by_file(cli: Cli, outputs: dict[str, Path]) -> None:
    code, out, err = cli(REPO_ROOT, "merge", *_args(outputs))
    assert (code, err) == (0, "")
    headings = [line for line in out.splitlines() if line.startswith("#")]
    assert headings == [
        "# Merged review",
        f"## {SQL}",
        "### 1. [critical] SQL injection in user lookup query (line 42)",
        "## src/page.py",
        "### 2. [high] Off-by-one in pagination (line 9)",
        "## (no file: the change as a whole)",
        "### 3. [low] Handler does data access",
        "## Suppressed by report filters",
        "## Reviewer outputs",
    ]
    assert "Reported by security (code-review-findings: P0, confidence 100); security-reviewer" in out
    assert "- Held back (src/page.py:3), security (code-review-findings): confidence 50 is below" in out
    assert "| code-review-findings (merge tier) |" in out


def test_json_is_an_agent_output_the_real_validate_accepts(cli: Cli, outputs: dict[str, Path], tmp_path: Path) -> None:
    code, out, err = cli(REPO_ROOT, "merge", *_args(outputs), "--format", "json")
    assert (code, err) == (0, "")
    merged = json.loads(out)
    assert [f["title"] for f in merged["findings"]] == [
        "SQL injection in user lookup query",
        "Off-by-one in pagination",
        "Handler does data access",
    ]
    assert merged["merge"]["duplicates_merged"] == 1 and merged["merge"]["suppressed"] == 1
    path = tmp_path / "merged.json"
    path.write_text(out, encoding="utf-8")
    code, out, err = cli(
        REPO_ROOT, "validate", "--contract", "agent-output", *CHANGED_ARGS, "--format", "json", str(path)
    )
    assert (code, err) == (0, "")
    validated = json.loads(out)
    assert (validated["outcome"], validated["diagnostics"]) == ("accepted", [])
    assert validated["result"] == merged


def test_sarif_follows_the_shared_conventions(cli: Cli, outputs: dict[str, Path]) -> None:
    code, out, _ = cli(REPO_ROOT, "merge", *_args(outputs), "--format", "sarif")
    assert code == 0
    log = json.loads(out)
    assert (log["$schema"], log["version"]) == ("https://json.schemastore.org/sarif-2.1.0.json", "2.1.0")
    run = log["runs"][0]
    assert run["automationDetails"] == {"id": "promptops-merge/"}
    rules = [rule["id"] for rule in run["tool"]["driver"]["rules"]]
    results: list[dict[str, Any]] = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("security", "error"),  # the lead's category: code-review-findings has none, so its reviewer
        ("security", "error"),
        ("correctness", "note"),
    ]
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in results)
    located = results[0]["locations"][0]["physicalLocation"]
    assert located == {"artifactLocation": {"uri": SQL, "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 42}}
    assert results[2]["locations"] == []  # no file: no location
    assert all(r["partialFingerprints"]["primaryLocationLineHash"].endswith(":1") for r in results)
    assert results[0]["properties"]["reportedBy"] == [
        "security (code-review-findings)",
        "security-reviewer (reviewer-finding)",
    ]


def test_a_rejected_output_fails_but_the_rest_is_printed(cli: Cli, outputs: dict[str, Path], tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("Sure! Here are my findings: none.", encoding="utf-8")
    code, out, err = cli(REPO_ROOT, "merge", *_args(outputs), f"agent-output={broken}", "--format", "json")
    assert (code, err) == (2, "")
    merged = json.loads(out)
    assert len(merged["findings"]) == 3
    assert [s["reason"] for s in merged["sources"]][-1] == "invalid_json"


def test_strict_warnings_and_no_report_filter(cli: Cli, outputs: dict[str, Path], tmp_path: Path) -> None:
    lossy = tmp_path / "lossy.json"
    lossy.write_text(json.dumps(document("agent-output", [ao("x", "urgent", "t", "m")])), encoding="utf-8")
    assert cli(REPO_ROOT, "merge", *_args(outputs), f"agent-output={lossy}")[0] == 0
    assert cli(REPO_ROOT, "merge", *_args(outputs), f"agent-output={lossy}", "--strict-warnings")[0] == 1
    code, out, _ = cli(REPO_ROOT, "merge", *_args(outputs), "--no-report-filter", "--format", "json")
    assert code == 0 and "Held back" in [f["title"] for f in json.loads(out)["findings"]]


def test_standard_input(cli: Cli, outputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    stdin = io.TextIOWrapper(io.BytesIO(outputs["security.json"].read_bytes()))
    monkeypatch.setattr(sys, "stdin", stdin)
    code, out, _ = cli(REPO_ROOT, "merge", "reviewer-finding=-", *CHANGED_ARGS, "--format", "json")
    assert code == 0 and json.loads(out)["sources"][0]["output"] == "-"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["security.json", *CHANGED_ARGS], "'security.json' is not CONTRACT=PATH or CONTRACT:TIER=PATH"),
        (["nope=x.json", *CHANGED_ARGS], "versions/nope/contract.yaml: no such contract 'nope'"),
        (["agent-output:merge=x.json", *CHANGED_ARGS], "contract agent-output has no tier 'merge'"),
        (["agent-output=missing.json", *CHANGED_ARGS], "missing.json: No such file or directory"),
        (["agent-output=x.json"], "no changed files"),
        (["agent-output=x.json", "--prompt-version", "review-result=1.0.0", *CHANGED_ARGS], "no output uses contract"),
        (["agent-output=x.json", "--prompt-version", "agent-output=one", *CHANGED_ARGS], "prompt version 'one'"),
    ],
)
def test_bad_invocations_fail_with_one_line(cli: Cli, args: list[str], message: str) -> None:
    code, out, err = cli(REPO_ROOT, "merge", *args)
    assert (code, out) == (3, "")
    assert err.count("\n") == 1 and message in err, err
