"""Stable finding ids and the comment marker."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from promptops import Parser, load_contract
from promptops.parsing.ids import finding_ids, finding_rows, hashed_id, marker, read_marker
from tests.conftest import Cli
from tests.helpers import CHANGED, REPO_ROOT, finding, response, text


def _crf(title: str, line: int = 12) -> str:
    """A code-review-findings answer (its findings carry no id) with one finding."""
    item = {
        "title": title,
        "severity": "P1",
        "file": "src/api/users.py",
        "line": line,
        "why_it_matters": "Users' data leaks.",
        "autofix_class": "manual",
        "owner": "downstream-resolver",
        "requires_verification": True,
        "confidence": 75,
        "evidence": ["users.py:12 concatenates user_id"],
        "pre_existing": False,
    }
    return text({"reviewer": "security", "findings": [item], "residual_risks": [], "testing_gaps": []})


def test_a_contract_with_an_id_field_keeps_the_findings_own_ids(parser: Parser) -> None:
    contract = parser.contract
    outcome = parser.parse(text(response([finding(1), finding(2, id="X-7")])), CHANGED)
    assert finding_ids(contract, "r1", outcome) == ["F1", "X-7"]
    rows = finding_rows(contract, "r1", outcome)
    assert [(r.position, r.severity, r.path, r.line) for r in rows] == [
        (0, "high", "src/api/users.py", 41),
        (1, "high", "src/api/users.py", 42),
    ]


def test_a_rejected_response_has_no_finding_ids(parser: Parser) -> None:
    assert finding_ids(parser.contract, "r1", parser.parse("not json", CHANGED)) == []


def test_without_an_id_field_the_id_is_the_documented_hash() -> None:
    contract = load_contract(REPO_ROOT, "code-review-findings")
    parser = Parser(contract)
    outcome = parser.parse(_crf("SQL  built from\tUser input"), CHANGED, schema_version="1.0", prompt_version="1.0.0")
    assert outcome.accepted, outcome.diagnostics
    expected = hashlib.sha256(
        "\x1f".join(["code-review-findings", "r1", "src/api/users.py", "12", "sql built from user input"]).encode()
    ).hexdigest()[:24]
    [row] = finding_rows(contract, "r1", outcome)
    assert row.finding_id == "f-" + expected
    assert row.severity == "high"  # the common severity of P1
    # whitespace and case of the title do not matter; the line, the response and the title's words do
    again = parser.parse(_crf("sql built from user input"), CHANGED, schema_version="1.0", prompt_version="1.0.0")
    assert finding_ids(contract, "r1", again) == [row.finding_id]
    moved = parser.parse(_crf("sql built from user input", 13), CHANGED, schema_version="1.0", prompt_version="1.0.0")
    assert finding_ids(contract, "r1", moved) != [row.finding_id]
    assert finding_ids(contract, "r2", again) != [row.finding_id]


def test_hashed_id_of_a_finding_without_path_line_or_title() -> None:
    digest = hashlib.sha256("\x1f".join(["c", "r", "", "", ""]).encode()).hexdigest()[:24]
    assert hashed_id("c", "r", None, None, None) == "f-" + digest


def test_the_marker_renders_and_reads_back() -> None:
    shown = marker("f-0123abcd", "resp-9")
    assert shown == "<!-- promptops:finding f-0123abcd response=resp-9 -->"
    assert read_marker(f"Looks wrong.\n\n{shown}\n") == ("f-0123abcd", "resp-9")
    assert read_marker("no marker here") is None
    with pytest.raises(ValueError, match="finding id 'a b' cannot go in a marker"):
        marker("a b", "r")
    with pytest.raises(ValueError, match="response id"):
        marker("f", "x-->")


def test_feedback_marker_prints_it(cli: Cli, tmp_path: Path) -> None:
    assert cli(tmp_path, "feedback", "marker", "F1", "r0") == (0, "<!-- promptops:finding F1 response=r0 -->\n", "")
    code, out, err = cli(tmp_path, "feedback", "marker", "F 1", "r0")
    assert (code, out) == (3, "")
    assert (
        err
        == "promptops: error: finding id 'F 1' cannot go in a marker: it must be non-empty, without spaces or '-->'\n"
    )
