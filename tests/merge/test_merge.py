"""The merge library: ranking on a hand-computed table, duplicates across reviewers and contracts, provenance,
report filters, rejected outputs, and a result that validates under the agent-output contract."""

from __future__ import annotations

import json
import random

import pytest

from promptops import Parser
from promptops.merge import MergedReport, MergeOptions, merge, to_result
from promptops.merge.similarity import overlap, tokens
from tests.merge.builders import CONTRACTS, ao, crf, output, rf, rr

CHANGED = ["src/a.py", "src/b.py", "src/c.py", "src/d.py", "src/e.py", "src/api/users.ts", "src/page.py"]

# Hand-computed: score = severity weight (critical 1.0, high 0.8, medium 0.6, low 0.4, info 0.2) x confidence
# normalized to [0, 1] (anchors / 100; 0-1 as is; high 0.8, medium 0.6, low 0.4; none or absent 0.6).
RANKING = [
    # (label, contract, finding, weight, confidence, score)
    ("A", "reviewer-finding", rf("r-a", "critical", 0.95, "src/a.py", 1, "Alpha broken"), 1.0, 0.95, 0.95),
    ("B", "code-review-findings", crf("P1", 100, "src/a.py", 2, "Bravo broken"), 0.8, 1.0, 0.80),
    ("C", "review-result", rr("c", "high", "src/b.py", 3, "Charlie broken", "high"), 0.8, 0.8, 0.64),
    ("D", "agent-output", ao("d", "critical", "Delta broken", "Delta.", "src/b.py", 4), 1.0, 0.6, 0.60),
    ("J", "reviewer-finding", rf("r-j", "high", 0.75, "src/c.py", 5, "Juliet broken"), 0.8, 0.75, 0.60),
    ("E", "code-review-findings", crf("P0", 50, "src/c.py", 6, "Echo broken"), 1.0, 0.5, 0.50),
    ("F", "reviewer-finding", rf("r-f", "medium", 0.7, "src/d.py", 7, "Foxtrot broken"), 0.6, 0.7, 0.42),
    ("G", "review-result", rr("g", "medium", "src/d.py", 8, "Golf broken"), 0.6, 0.6, 0.36),
    ("H", "agent-output", ao("h", "low", "Hotel broken", "Hotel."), 0.4, 0.6, 0.24),
    ("I", "review-result", rr("i", "info", "src/e.py", 9, "India broken", "low"), 0.2, 0.4, 0.08),
]
# D and J tie at 0.60 (0.8 x 0.75 is 0.6000000000000001 in floating point): the higher severity, D, goes first.
EXPECTED_ORDER = ["A", "B", "C", "D", "J", "E", "F", "G", "H", "I"]


def _ranking_outputs() -> list:  # type: ignore[type-arg]
    by_contract: dict[str, list] = {}  # type: ignore[type-arg]
    for _, contract, finding, *_ in RANKING:
        by_contract.setdefault(contract, []).append(finding)
    # Two findings the code-review-findings report filter holds back: P1 at 50 and P0 at 25.
    by_contract["code-review-findings"] += [
        crf("P1", 50, "src/e.py", 10, "Kilo"),
        crf("P0", 25, "src/e.py", 11, "Lima"),
    ]
    return [output(contract, findings, f"out/{contract}.json") for contract, findings in by_contract.items()]


def test_ranking_follows_the_hand_computed_table() -> None:
    report = merge(_ranking_outputs(), CHANGED)
    titles = {row[2].get("title") or row[2]["description"]: row for row in RANKING}
    ranked = [titles[f.title] for f in report.findings]
    assert [row[0] for row in ranked] == EXPECTED_ORDER
    for merged, row in zip(report.findings, ranked, strict=True):
        assert merged.score == pytest.approx(row[5])
        assert merged.lead.weight == row[3] and merged.confidence == pytest.approx(row[4])
    assert [f.rank for f in report.findings] == list(range(1, 11))


def test_suppressed_findings_are_listed_not_lost() -> None:
    report = merge(_ranking_outputs(), CHANGED)
    assert [(s.finding.title, s.reason) for s in report.suppressed] == [
        ("Kilo", "confidence 50 is below the threshold (confidence >= 75)"),
        ("Lima", "confidence 25 is below the threshold (severity P0: confidence >= 50)"),
    ]
    crf_report = next(s for s in report.sources if s.contract == "code-review-findings")
    assert (crf_report.outcome.findings_kept, crf_report.findings_reported, crf_report.findings_suppressed) == (4, 2, 2)
    unfiltered = merge(_ranking_outputs(), CHANGED, MergeOptions(report_filters=False))
    assert len(unfiltered.findings) == 12 and unfiltered.suppressed == ()


SQL = "src/api/users.ts"


def _sql_outputs() -> list:  # type: ignore[type-arg]
    return [
        output(
            "reviewer-finding",
            [
                rf(
                    "h-1",
                    "critical",
                    0.95,
                    SQL,
                    42,
                    "SQL injection vulnerability: user input is concatenated into the query",
                ),
                rf("h-2", "medium", 0.6, SQL, 42, "Missing await on the async database call"),  # same line, other issue
            ],
            "out/security.json",
        ),
        output("code-review-findings", [crf("P0", 100, SQL, 42, "SQL injection in user lookup query")], "out/crf.json"),
        output(
            "agent-output",
            [
                ao("SEC-1", "high", "SQL injection via userId", "The users query concatenates userId.", SQL, 42),
                ao(
                    "SEC-2", "high", "SQL injection via userId", "The users query concatenates userId.", SQL, 7
                ),  # other line
            ],
            "out/sec.json",
        ),
        output(
            "review-result",
            [rr("F1", "critical", SQL, 42, "User input concatenated into SQL query", "high")],
            "out/rr.json",
        ),
        output(
            "reviewer-finding",
            [
                rf(
                    "h-1", "high", 0.9, SQL, 43, "Query built by string concatenation", reviewer="data-reviewer"
                ),  # same id
                rf(
                    "h-2", "low", 0.5, "src/page.py", 1, "Missing await", reviewer="data-reviewer"
                ),  # same id, other file
            ],
            "out/data.json",
        ),
    ]


def _groups(report: MergedReport) -> list[set[tuple[str, str]]]:
    return [{(s.source, s.title) for s in f.sources} for f in report.findings]


def test_duplicates_across_reviewers_and_contracts_collapse_with_provenance() -> None:
    report = merge(_sql_outputs(), CHANGED)
    sql = report.findings[0]
    assert {(s.contract, s.reviewer) for s in sql.sources} == {
        ("reviewer-finding", "security-reviewer"),
        ("code-review-findings", "security"),
        ("agent-output", "sec"),  # agent-output names no reviewer: the file's name
        ("review-result", "rr"),
        ("reviewer-finding", "data-reviewer"),  # same global id h-1, same file, other line
    }
    assert sql.lead.contract == "code-review-findings"  # P0 at 100: score 1.0
    assert sql.id == "M-" + sql.id[2:] and len(sql.sources) == 5
    assert (sql.severity, sql.file, sql.line, sql.title) == ("critical", SQL, 42, "SQL injection in user lookup query")
    assert report.duplicates == 4
    # Not duplicates: the other issue on line 42, the same text on line 7, the same id on another file.
    assert len(report.findings) == 4
    singles = sorted((f.lead.source, f.file, f.line) for f in report.findings[1:])
    assert singles == [("out/data.json", "src/page.py", 1), ("out/sec.json", SQL, 7), ("out/security.json", SQL, 42)]


def test_provenance_in_the_result() -> None:
    document = to_result(merge(_sql_outputs(), CHANGED), CONTRACTS["agent-output"])
    first = document["findings"][0]
    assert [(p["reviewer"], p["contract"], p["output"]) for p in first["reported_by"]] == [
        ("security", "code-review-findings", "out/crf.json"),  # P0 x 100/100 = 1.0
        ("security-reviewer", "reviewer-finding", "out/security.json"),  # critical x 0.95 = 0.95
        ("rr", "review-result", "out/rr.json"),  # critical x high (0.8) = 0.8
        ("data-reviewer", "reviewer-finding", "out/data.json"),  # high 0.8 x 0.9 = 0.72
        ("sec", "agent-output", "out/sec.json"),  # high 0.8 x no confidence (0.6) = 0.48
    ]  # best first
    scores = [p["score"] for p in first["reported_by"]]
    assert scores == sorted(scores, reverse=True)
    assert first["reported_by"][0] == {
        "reviewer": "security",
        "contract": "code-review-findings",
        "output": "out/crf.json",
        "title": "SQL injection in user lookup query",
        "severity": "P0",
        "confidence": 100,
        "score": 1.0,
    }


def test_the_result_is_valid_agent_output() -> None:
    report = merge(_sql_outputs() + _ranking_outputs(), CHANGED)
    document = to_result(report, CONTRACTS["agent-output"])
    outcome = Parser(CONTRACTS["agent-output"]).parse(
        json.dumps(document), CHANGED, schema_version="1.0", prompt_version="1.0.0"
    )
    assert outcome.accepted and outcome.diagnostics == []
    assert outcome.result == document
    assert [f["rank"] for f in document["findings"]] == list(range(1, len(document["findings"]) + 1))
    assert len({f["id"] for f in document["findings"]}) == len(document["findings"])
    assert {f["severity"] for f in document["findings"]} <= {"critical", "high", "medium", "low"}  # info -> low
    files = [group["file"] for group in document["files"]]
    assert files[-1] is None and len(files) == len(set(files))
    grouped = [fid for group in document["files"] for fid in group["findings"]]
    assert sorted(grouped) == sorted(f["id"] for f in document["findings"])


def test_the_result_does_not_depend_on_input_order() -> None:
    outputs = _sql_outputs() + _ranking_outputs()
    expected = to_result(merge(outputs, CHANGED), CONTRACTS["agent-output"])["findings"]
    for seed in range(5):
        shuffled = outputs[:]
        random.Random(seed).shuffle(shuffled)
        findings = to_result(merge(shuffled, CHANGED), CONTRACTS["agent-output"])["findings"]
        assert [(f["id"], f["rank"]) for f in findings] == [(f["id"], f["rank"]) for f in expected]
        assert [sorted(p["output"] for p in f["reported_by"]) for f in findings] == [
            sorted(p["output"] for p in f["reported_by"]) for f in expected
        ]


def test_rejected_and_lossy_outputs_are_reported_and_the_rest_merged() -> None:
    broken = output("reviewer-finding", [], "out/broken.json")
    broken = type(broken)(broken.contract, '{"findings": "none"}', "out/broken.json")
    lossy = output("agent-output", [ao("x", "urgent", "t", "m"), ao("y", "low", "Yankee", "m")], "out/lossy.json")
    report = merge([broken, lossy], CHANGED)
    assert [s.source for s in report.rejected] == ["out/broken.json"]
    assert report.has_warnings and [f.title for f in report.findings] == ["Yankee"]
    sources = to_result(report, CONTRACTS["agent-output"])["sources"]
    assert [(s["outcome"], s["reason"]) for s in sources] == [("rejected", "findings_not_array"), ("accepted", None)]
    assert [d["code"] for d in sources[1]["diagnostics"]] == ["invalid_enum"]


def test_compact_tier_outputs_merge_with_their_title_as_text() -> None:
    compact = crf("P1", 75, SQL, 42, "SQL injection in user lookup query")
    del compact["why_it_matters"], compact["evidence"]
    outputs = [
        output("code-review-findings", [compact], "out/compact.json", tier="merge"),
        _sql_outputs()[0],
    ]
    report = merge(outputs, CHANGED)
    sql = report.findings[0]
    assert {(s.contract, s.tier) for s in sql.sources} == {
        ("code-review-findings", "merge"),
        ("reviewer-finding", None),
    }
    assert sql.lead.contract == "reviewer-finding"  # critical 0.95 beats P1 at 75 (0.6)
    compact_source = next(s for s in sql.sources if s.tier == "merge")
    assert compact_source.message == "SQL injection in user lookup query"  # no why_it_matters: the title


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (
            "SQL injection in user lookup query",
            "SQL injection vulnerability: user input is concatenated into query",
            True,
        ),
        ("Unbounded query loads all users", "Query loads every user without pagination", True),
        ("Missing await on async call", "SQL injection vulnerability", False),
        ("user_id not validated as an integer", "SQL injection via user_id", False),
        ("Null pointer when the list is empty", "Null pointer if list empty", True),
        ("Typo", "Typo in the docstring", True),
        ("", "Anything", False),
    ],
)
def test_similarity_rule(a: str, b: str, same: bool) -> None:
    assert (overlap(tokens(a), tokens(b)) >= MergeOptions.similarity) is same


def test_a_threshold_of_one_needs_containment() -> None:
    near = [
        output("reviewer-finding", [rf("a", "high", 0.9, SQL, 1, "Cache key collides")], "out/a.json"),
        output("reviewer-finding", [rf("b", "high", 0.8, SQL, 1, "Cache key collides across tenants")], "out/b.json"),
        output("reviewer-finding", [rf("c", "high", 0.7, SQL, 1, "Tenant cache entries collide")], "out/c.json"),
    ]
    assert [len(f.sources) for f in merge(near, CHANGED, MergeOptions(similarity=1.0)).findings] == [2, 1]
    assert [len(f.sources) for f in merge(near, CHANGED).findings] == [3]
