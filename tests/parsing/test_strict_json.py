"""DESIGN.md §3.1: strict RFC 8259 parsing; whitespace and a BOM ignored; duplicate keys never last-wins."""

from __future__ import annotations

import json

import pytest

from promptops import Code, Parser
from tests.helpers import CHANGED, finding, response, text


def test_surrounding_whitespace_and_bom_are_ignored(both: Parser) -> None:
    body = text(response())
    for raw in (f"\n\t {body} \r\n", "\ufeff" + body, ("\ufeff" + body).encode(), f"  \ufeff{body}"):
        outcome = both.parse(raw, CHANGED)
        assert outcome.accepted, raw
        assert outcome.diagnostics == []


@pytest.mark.parametrize(
    "raw",
    [
        '{"schema_version": "1.0", "prompt_version": "1.0.0", "findings": [], "meta": {"x": NaN}}',
        '{"schema_version": "1.0", "prompt_version": "1.0.0", "findings": [], "meta": {"x": Infinity}}',
        '{"schema_version": "1.0", "prompt_version": "1.0.0", "findings": [], "meta": {"x": -Infinity}}',
        '{"schema_version": "1.0", "prompt_version": "1.0.0", "findings": [], "summary": "\\ud800"}',
        '{"schema_version": "1.0", "prompt_version": "1.0.0", "findings": [], "summary": "a\x01b"}',
    ],
    ids=["nan", "infinity", "minus-infinity", "lone-surrogate", "raw-control-char"],
)
def test_non_rfc8259_values_are_invalid_json(both: Parser, raw: str) -> None:
    outcome = both.parse(raw, CHANGED)
    assert outcome.reason == Code.INVALID_JSON
    assert [d.level for d in outcome.diagnostics] == ["error"]


def test_invalid_utf8_is_invalid_json(both: Parser) -> None:
    raw = text(response(summary="caf")).encode().replace(b"caf", b"caf\xe9")
    outcome = both.parse(raw, CHANGED)
    assert outcome.reason == Code.INVALID_JSON
    assert "UTF-8" in outcome.diagnostics[0].message


def test_duplicate_top_level_key_rejects(both: Parser) -> None:
    raw = text(response())[:-1] + ', "summary": "second"}'
    outcome = both.parse(raw, CHANGED)
    assert outcome.reason == Code.DUPLICATE_KEY
    assert outcome.diagnostics[-1].path == "summary"


def test_duplicate_key_inside_meta_rejects(both: Parser) -> None:
    raw = text(response(meta={"a": 1}))[:-2] + ', "a": 2}}'
    outcome = both.parse(raw, CHANGED)
    assert outcome.reason == Code.DUPLICATE_KEY
    assert outcome.diagnostics[-1].path == "meta.a"


def test_duplicate_key_in_a_finding_drops_only_that_finding(both: Parser) -> None:
    body = text(response([finding(1), finding(2)]))
    raw = body.replace('"id": "F2"', '"id": "F2", "line": 7', 1)
    outcome = both.parse(raw, CHANGED)
    assert outcome.accepted
    assert [f["id"] for f in outcome.result["findings"]] == ["F1"]  # type: ignore[index]
    (drop,) = [d for d in outcome.diagnostics if d.code == Code.DUPLICATE_KEY]
    assert (drop.path, drop.finding_index, drop.finding_id, drop.level) == ("findings[1].line", 1, "F2", "warning")


def test_duplicates_are_found_behind_escapes_and_colons(both: Parser) -> None:
    # the same key spelled with a unicode escape, and colons inside strings, must not hide the repeat
    body = text(response([finding(1, message="a: b: c")]))
    raw = body.replace('"id": "F1"', '"id": "F1", "\\u0069d": "F9"', 1)
    assert both.parse(raw, CHANGED).findings_kept == 0
    raw = body.replace('"message"', '"message": "x\\u003ay", "message"', 1)
    outcome = both.parse(raw, CHANGED)
    assert [d.code for d in outcome.diagnostics][:1] == [Code.DUPLICATE_KEY]


def test_colons_in_strings_are_not_duplicates(both: Parser) -> None:
    raw = text(response([finding(1, message="note: a: b", title="x:y"), finding(2, suggestion="if x: return")]))
    outcome = both.parse(raw, CHANGED)
    assert outcome.accepted and outcome.findings_kept == 2 and outcome.diagnostics == []


def test_big_integers_are_kept_exactly(both: Parser) -> None:
    outcome = both.parse(text(response([finding(1, line=10**30)])), CHANGED)
    assert outcome.result["findings"][0]["line"] == 10**30  # type: ignore[index]


def test_whole_text_that_is_not_json_is_invalid_json(both: Parser) -> None:
    outcome = both.parse("I could not find any issues.", CHANGED)
    assert outcome.reason == Code.INVALID_JSON and not outcome.accepted and outcome.result is None


def test_result_is_valid_json(both: Parser) -> None:
    outcome = both.parse(text(response(meta={"model": "x", "n": [1, 2.5, None]})), CHANGED)
    assert json.loads(json.dumps(outcome.to_dict()))["result"]["meta"] == {"model": "x", "n": [1, 2.5, None]}
