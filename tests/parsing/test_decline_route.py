"""The route of a response the guessed fast path declines: what _place.accept hands back for it (the schema version
the text declares, as the parser's version peek reads it, and checked's answer) against the Python references, and
the parser's outcomes with them against the parser that finds both itself and the parsers without the fast path."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptops import ChangedFiles, Parser, load_contract
from promptops.parsing import ParseOutcome, scan
from promptops.parsing.fastpath import FastPath, declared_version
from tests.helpers import CHANGED, finding, response, text
from tests.parsing.invariants import _summary

pytestmark = pytest.mark.skipif(scan.native_accept is None, reason="the C helpers are not built")

ROOT = Path(__file__).resolve().parents[2]
_CONTRACT = load_contract(ROOT, "review-result")
_COLD = next(f for f in Parser(_CONTRACT)._fast.values() if f is not None)  # nothing cached: it never accepts

# Pieces of texts around the peek's pattern: the quoted field, \s of bytes and of str, quotes, escapes, non-ASCII.
_PIECES = ['"schema_version"', '"schema_version', "schema_version", ":", " ", "\t", "\n", "\x0b", "\x1c", "\x85"]
_PIECES += ["\u3000", "\xa0", '"', "\\", '\\"', "1.0", "1.1", "2.0", "é", "\U0001f600", "{", "}", ",", "x"]


def _handed(fast: FastPath, data: bytes | str) -> Any:
    assert scan.native_accept is not None and fast.accept_bound is not None
    return scan.native_accept(fast.accept_bound, data, ChangedFiles(CHANGED))


_STARTS = ["", '{"schema_version": "', '"schema_version" :\t"', '"schema_version":\u3000"', '"schema_version"\x1c:"']


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(_STARTS), st.lists(st.sampled_from(_PIECES), max_size=24), st.integers(0, 3))
def test_accept_reads_the_declared_version_as_the_peek_does(start: str, pieces: list[str], where: int) -> None:
    data = start + "".join(pieces)
    encoded = data.encode("utf-8", "surrogatepass")
    invalid = encoded[: where * 5] + b"\xff\xc3" + encoded[where * 5 :]  # not UTF-8: the group is decoded replaced
    assert _COLD._peek is not None
    for raw in (data, encoded, invalid):
        handed = _handed(_COLD, raw)
        assert type(handed) is tuple and handed[2] == declared_version(_COLD._peek, raw), raw
        assert type(handed[2]) is type(declared_version(_COLD._peek, raw))


def test_the_peek_reference_is_the_parsers_own_search() -> None:
    """What accept hands back replaces Parser._fast_path_for's search: the same fast path, or none."""
    parser = Parser(_CONTRACT)
    assert _COLD._peek is not None
    rng = random.Random(3)
    found = 0
    for _ in range(2000):
        data = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(16)))
        if rng.random() < 0.5:
            data = rng.choice(['{"schema_version": "1.1', '"schema_version":"1.0', '"schema_version"\t:']) + data
        for raw in (data, data.encode()):
            declared = _handed(_COLD, raw)[2]
            fast = parser._fast.get(declared) if declared is not None else None
            assert fast is parser._fast_path_for(raw, None), raw
            found += fast is not None
    assert found > 100


def _defective(rng: random.Random, version: str) -> str:
    """A response declaring ``version`` with one defect the typed decoding or the placement check declines."""
    items = [finding(i) for i in range(1, rng.randrange(2, 6))]
    kind = rng.randrange(6)
    item = rng.choice(items)
    if kind == 0:
        item["severity"] = "High"
    elif kind == 1:
        item["file"] = "docs/unrelated.md"
    elif kind == 2:
        item["line"], item["end_line"] = 50, 10
    elif kind == 3:
        item["title"] = " padded "
    elif kind == 4:
        item["line"] = str(item["line"])
    raw = text(response(findings=items, schema_version=version))
    if kind == 5:
        raw = raw.replace('"summary"', '"summary": "x", "summary"', 1)  # a repeated key: members lost
    return raw


def test_the_parser_answers_alike_when_declared_versions_change() -> None:
    """Responses declaring 1.0 and 1.1 by turns, with defects: the guessed path declines, and the declared version
    (from accept, or the parser's own search) picks the path that reads them."""
    fused, plain = Parser(_CONTRACT), Parser(_CONTRACT)
    for fast in plain._fast.values():
        if fast is not None:
            fast.accept_bound = None
    python, slow = Parser(_CONTRACT, speedups=False), Parser(_CONTRACT, fast_path=False)
    rng = random.Random(11)
    for index in range(600):
        version = rng.choice(["1.0", "1.1", "1.0", "9.9"]) if index % 7 else rng.choice(["1.0", "1.1"])
        raw = _defective(rng, version) if rng.random() < 0.7 else text(response(schema_version=version))
        paths = CHANGED if rng.random() < 0.8 else ["./" + CHANGED[0], "a\\b.py"]
        for data in (raw, raw.encode()):
            expected = _summary(slow.parse(data, paths))
            for parser in (fused, plain, python):
                assert _summary(parser.parse(data, ChangedFiles(paths))) == expected, (data, parser)


def test_a_placed_out_response_is_judged_from_accepts_answer() -> None:
    """accept's placement verdict stands in for FastPath.parse's own call of checked: the same outcome."""
    parser = Parser(_CONTRACT)
    fast = parser._guess
    assert fast is not None
    changed = ChangedFiles(CHANGED)
    assert parser.parse(text(response()), changed).accepted  # the versions cache learns 1.0
    for items in ([finding(1, file="nowhere.py")], [finding(1), finding(2, line=9, end_line=3)]):
        raw = text(response(findings=items)).encode()
        count, decoded, declared, placed = _handed(fast, raw)
        assert declared == "1.0" and placed == 1
        got = fast.parse(raw, changed, 64, None, count, decoded, placed)
        want = fast.parse(raw, changed, 64, None, count, decoded)
        assert isinstance(got, ParseOutcome) and isinstance(want, ParseOutcome)
        assert _summary(got) == _summary(want) == _summary(parser.parse(raw, changed))


def test_the_declared_version_picks_the_itemwise_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A defect the typed decoding declines, declared 1.1 while 1.0 is the guess: 1.1's path reads it item by item
    (the route, not only the outcome: any typed path that cannot read it declines, and the generic reader agrees)."""
    import promptops.parsing.parser as parser_module
    from promptops.parsing.itemwise import read_itemwise as real

    used: list[FastPath] = []

    def recording(fast: FastPath, *args: Any) -> Any:
        used.append(fast)
        return real(fast, *args)

    monkeypatch.setattr(parser_module, "read_itemwise", recording)
    parser = Parser(_CONTRACT)
    changed = ChangedFiles(CHANGED)
    assert parser.parse(text(response()), changed).accepted and parser._guess is parser._fast["1.0"]
    for version in ["1.1", "1.0", "9.9"]:
        raw = text(response(findings=[finding(1, severity="High")], schema_version=version))
        for data in (raw, raw.encode()):
            used.clear()
            parser.parse(data, changed)
            assert used == ([parser._fast[version]] if version in parser._fast else []), version
            assert parser._guess is parser._fast["1.0"]
