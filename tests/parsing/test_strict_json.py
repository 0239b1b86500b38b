"""Strict RFC 8259 parsing; whitespace and a BOM ignored; duplicate keys never last-wins."""

from __future__ import annotations

import json

import pytest

from promptops import ChangedFiles, Code, Parser
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


def test_keys_written_with_escapes_are_their_text(both: Parser, parser: Parser) -> None:
    """A key spelled with an escape is the key it decodes to: kept unchanged, and taken by the fast path whole."""
    body = text(response([finding(1, message="a: b")], meta={"k:1": {"x": "y:z"}}))
    raw = body.replace('"id": "F1"', '"\\u0069d": "F1"', 1).replace('"summary"', '"\\u0073ummary"', 1)
    outcome = both.parse(raw, CHANGED)
    assert outcome.accepted and outcome.findings_kept == 1 and outcome.diagnostics == []
    assert outcome.to_dict() == parser.parse(body, CHANGED).to_dict()
    fast = parser._only_fast or next(iter(parser._fast.values()))
    assert fast.accept(raw.encode(), ChangedFiles(CHANGED), None) is not None


def test_big_integers_are_kept_exactly(both: Parser) -> None:
    outcome = both.parse(text(response([finding(1, line=10**30)])), CHANGED)
    assert outcome.result["findings"][0]["line"] == 10**30  # type: ignore[index]


def test_whole_text_that_is_not_json_is_invalid_json(both: Parser) -> None:
    outcome = both.parse("I could not find any issues.", CHANGED)
    assert outcome.reason == Code.INVALID_JSON and not outcome.accepted and outcome.result is None


def test_result_is_valid_json(both: Parser) -> None:
    outcome = both.parse(text(response(meta={"model": "x", "n": [1, 2.5, None]})), CHANGED)
    assert json.loads(json.dumps(outcome.to_dict()))["result"]["meta"] == {"model": "x", "n": [1, 2.5, None]}


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "response is empty"),
        (" \n\ufeff ", "response is empty"),
        (
            "Here is my review: all good.",
            "response holds no JSON object: the text starts with 'Here is my review: all good.'",
        ),
        # a trailing comma is reported where the comma stands, not at the bracket after it
        ('{"a": 1,\n "b": [1, 2,]}', "response is not valid JSON: a trailing comma in an array at line 2, column 12"),
        ('{"a": 1,\n}', "response is not valid JSON: a trailing comma in an object at line 1, column 8"),
        ('{"a": [{"b": 1},\n  ]}', "response is not valid JSON: a trailing comma in an array at line 1, column 16"),
        ("[1, 2", "response is not valid JSON: the text ends before the JSON is complete (at line 1, column 6)"),
        (b'{"a": "caf\xe9"}', "response is not valid UTF-8 at line 1, column 11 (byte 10)"),
        ('{"a": 1e999}', "response is not valid JSON: a number out of range"),
    ],
)
def test_json_errors_say_what_is_wrong_and_where(both: Parser, raw: str | bytes, message: str) -> None:
    outcome = both.parse(raw, CHANGED)
    assert outcome.reason == Code.INVALID_JSON
    assert outcome.diagnostics[-1].message == message


def test_a_cut_finding_keeps_the_id_read_before_the_cut(both: Parser) -> None:
    text = json.dumps(response([finding(1), finding(2)]))
    cut = text[: text.index('"F2"') + 12]
    outcome = both.parse(cut, CHANGED)
    truncated = [d for d in outcome.diagnostics if d.code == Code.TRUNCATED]
    assert [(d.finding_index, d.finding_id) for d in truncated] == [(1, "F2")]


def test_all_dropped_says_the_only_finding_in_the_singular(both: Parser) -> None:
    outcome = both.parse(json.dumps(response([finding(1, severity="High")])), CHANGED)
    assert outcome.diagnostics[-1].message == "the only finding was dropped"
    outcome = both.parse(json.dumps(response([finding(1, severity="High"), finding(2, line=0)])), CHANGED)
    assert outcome.diagnostics[-1].message == "all 2 findings were dropped"
