"""A declined answer is read once: the fast path's outline sorts its findings, the diagnostic path checks only
the unclean ones, and a wrapped answer is cut to its one object; outcomes stay those of the diagnostic path."""

from __future__ import annotations

import json

import pytest

from promptops import ChangedFiles, Contract, Parser
from promptops.parsing.jsontext import sole_object
from tests.helpers import CHANGED, finding, response, text
from tests.parsing.invariants import _summary

DEFECTS = [
    response([finding(1), finding(2, severity="High"), finding(3)]),
    response([finding(1, title=" padded "), finding(2, line="7")]),
    response([finding(1), finding(1, line=50)]),  # a repeated id: both clean as written, one warning
    response([finding(1, file="x.py"), finding(2, end_line=1, line=5), finding(3, extra=1)]),
    response([finding(1), 7, None, [finding(2)]]),
    response([finding(1, line=0), finding(2, confidence=None)]),
]


def _fast_path(parser: Parser) -> object:
    fast = next(iter(parser._fast.values()))
    return fast


@pytest.mark.parametrize("body", DEFECTS, ids=range(len(DEFECTS)))
def test_outline_marks_only_unclean_findings(parser: Parser, body: dict[str, object]) -> None:
    raw = json.dumps(body).encode()
    fast = _fast_path(parser)
    assert fast.accept(raw, ChangedFiles(CHANGED), None) is None  # type: ignore[attr-defined]
    outline = fast.outline(raw, ChangedFiles(CHANGED), None)  # type: ignore[attr-defined]
    assert outline is not None
    clean = [i for i, item in enumerate(outline.clean) if item is not None]
    slow = Parser(parser.contract, fast_path=False).parse(raw, CHANGED)
    dropped_or_changed = {d.finding_index for d in slow.diagnostics if d.level != "warning" or d.disposition}
    assert set(clean).isdisjoint(dropped_or_changed)
    assert len(outline.raw) == len(body["findings"])  # type: ignore[arg-type]


@pytest.mark.parametrize("body", DEFECTS, ids=range(len(DEFECTS)))
def test_declined_outcomes_match_the_diagnostic_path(contract: Contract, body: dict[str, object]) -> None:
    for raw in (json.dumps(body), json.dumps(body, indent=2), f"Here:\n```json\n{json.dumps(body)}\n```"):
        fast, slow = Parser(contract).parse(raw, CHANGED), Parser(contract, fast_path=False).parse(raw, CHANGED)
        assert _summary(fast) == _summary(slow)


def test_a_finding_that_reads_only_typed_as_raw_goes_to_the_reader(contract: Contract) -> None:
    # msgspec.Raw does not read numbers: 1e400 passes the outline, fails on its own, and the whole text goes on
    raw = json.dumps(response([finding(1), finding(2, line=123456789)])).replace("123456789", "1e400")
    fast, slow = Parser(contract).parse(raw, CHANGED), Parser(contract, fast_path=False).parse(raw, CHANGED)
    assert not slow.accepted
    assert _summary(fast) == _summary(slow)


def test_a_top_level_fault_is_not_outlined(parser: Parser) -> None:
    fast = _fast_path(parser)
    for body in (response(summary=" padded "), response(extra=1), {**response(), "schema_version": "9.0"}):
        assert fast.outline(json.dumps(body).encode(), ChangedFiles(CHANGED), None) is None  # type: ignore[attr-defined]


def test_sole_object_follows_the_reader() -> None:
    body = text(response())
    assert sole_object(f"Here is my review:\n```json\n{body}\n```", 64) == body
    assert sole_object(f'<think>{{"draft": 1}}</think>{body}', 64) == body
    assert sole_object(f"{body}\n{body}", 64) is None  # two candidates: the reader decides
    assert sole_object(f"Sure: {body[:-5]}", 64) is None  # cut off: the reader salvages
    assert sole_object(body, 64) is None  # the whole text is no candidate
    assert sole_object(f"Sure: {body}", 1) is None  # deeper than allowed
