"""The splicing reader (splice.py) against the itemwise reader it stands in for, and ``_span.element_cut`` against
its Python reference: the same Document for every defect response the splicer takes, None (the itemwise reader
decides) for everything it must not take, and the same outcomes from parsers with and without it."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptops import ChangedFiles, Parser, load_contract
from promptops.parsing import splice
from promptops.parsing.itemwise import read_itemwise
from promptops.parsing.jsontext import Document
from promptops.parsing.typed import DECODE_ERRORS
from tests.helpers import CHANGED, finding, response, text
from tests.parsing.invariants import _summary

pytestmark = pytest.mark.skipif(splice.native_element_cut is None, reason="the C helpers are not built")

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _corpus(count: int, seed: int) -> list[tuple[bytes, list[str]]]:
    spec = importlib.util.spec_from_file_location("_bench_corpus_splice", ROOT / "benchmarks" / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return [(r.raw, list(r.changed_files)) for r in module.build(count, seed=seed) if r.kind == "defect"]


# ---- element_cut: C against the reference ---------------------------------------------------------------


@SETTINGS
@given(st.lists(st.sampled_from(list(b' \n{}[]",:\\ab1')), max_size=40).map(bytes), st.integers(-1, 4))
def test_element_cut_matches_reference_on_structural_noise(data: bytes, index: int) -> None:
    assert splice.native_element_cut is not None
    for key in (b"a", b"ab", b""):
        assert splice.native_element_cut(data, key, index) == splice.element_cut(data, key, index)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='a"\\]}{[ ,:\u00e9', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet="ab", max_size=2), inner, max_size=3),
    max_leaves=8,
)


@SETTINGS
@given(
    st.dictionaries(st.sampled_from(["x", "findings", "z", 'f"q']), _JSON, min_size=1),
    st.lists(_JSON, max_size=5),
    st.integers(-1, 5),
    st.booleans(),
    st.integers(0, 10_000),
    st.sampled_from(["", "x", "]", ",", "\\", '"']),
)
def test_element_cut_matches_reference_on_json(
    top: dict[str, Any], items: list[Any], index: int, indent: bool, where: int, noise: str
) -> None:
    assert splice.native_element_cut is not None
    data = json.dumps({**top, "findings": items}, indent=1 if indent else None).encode()
    if noise:
        at = where % (len(data) + 1)
        data = data[:at] + noise.encode() + data[at:]
    assert splice.native_element_cut(data, b"findings", index) == splice.element_cut(data, b"findings", index)


def test_element_cut_places_and_cuts_elements() -> None:
    native = splice.native_element_cut
    assert native is not None
    data = b'{"a": [1, {"b": "]"}], "findings": [ {"x": 1} , "s,]" ,[2] ]}'
    for index, kept in ((0, b'[ "s,]" ,[2] ]'), (1, b'[ {"x": 1} , [2] ]'), (2, b'[ {"x": 1} , "s,]" ]')):
        place = splice.element_cut(data, b"findings", index)
        assert place is not None and place == native(data, b"findings", index)
        start, stop, element_start, element_stop = place
        assert json.loads(data[element_start:element_stop]) == json.loads(data)["findings"][index]
        rest = data[:start] + data[stop:]
        assert rest.endswith(kept + b"}") and json.loads(rest)["a"] == [1, {"b": "]"}]
    only = b'{"findings": [7]}'
    assert splice.element_cut(only, b"findings", 0) == (14, 15, 14, 15)
    for missing in (b'{"findings": [1]}', b'{"findings": 3}', b'{"find\\u0069ngs": [1]}', b"[1]", b'{"findings": []}'):
        assert splice.element_cut(missing, b"findings", 1 if missing.startswith(b'{"findings": [1]') else 0) is None
        assert native(missing, b"findings", 0) == splice.element_cut(missing, b"findings", 0)


# ---- Splicer.read against read_itemwise ---------------------------------------------------------------


def _comparable(document: Document) -> tuple[Any, ...]:
    value = dict(document.value)
    value["findings"] = [
        ("plain", item) if isinstance(item, dict | list | str | int | float | bool) or item is None
        else (type(item).__name__, msgspec.to_builtins(item))
        for item in value["findings"]
    ]  # fmt: skip
    return (value, document.item_duplicates, document.checked_versions, document.extracted, document.truncation,
            document.top_duplicates, document.member_duplicates, document.span, document.span_error)  # fmt: skip


def _both(parser: Parser, data: bytes | str) -> tuple[Document | None, Document | None] | None:
    """(spliced, itemwise) for a text the parser would splice (clean, failing typed decoding), else None."""
    fast = parser._guess
    assert fast is not None
    try:
        fast.typed.decode_response(data)
        return None
    except msgspec.ValidationError as exc:
        error = exc
    except DECODE_ERRORS:
        return None
    verdict = fast.verdict(data, fast.scan(data))
    if not verdict:
        return None
    depth = parser._limits.max_depth
    spliced = parser._splicer.read(fast, data, error, depth, None)
    return spliced, read_itemwise(fast, data, depth, None, verdict)


@pytest.fixture(scope="module")
def parser() -> Parser:
    return Parser(load_contract(ROOT, "review-result"))


def test_splicer_builds_the_itemwise_document_for_corpus_defects(parser: Parser) -> None:
    taken = 0
    for data, _changed in _corpus(6000, seed=23):
        both = _both(parser, data)
        if both is None:
            continue
        spliced, itemwise = both
        assert itemwise is not None
        if spliced is not None:
            taken += 1
            assert _comparable(spliced) == _comparable(itemwise), data
    assert taken > 250  # the corpus has about 600 defects, over half failing typed decoding


def _with(findings: list[Any], **top: Any) -> bytes:
    return text(response(findings=findings, **top)).encode()


BAD = finding(2, severity="High")
SPLICED = {
    "first": _with([BAD, finding(3), finding(4)]),
    "middle": _with([finding(1), BAD, finding(3)]),
    "last": _with([finding(1), finding(3), BAD]),
    "only": _with([BAD]),
    "two apart": _with([finding(1), BAD, finding(3), finding(4, line=0)]),
    "four": _with([BAD, finding(5, line="7"), finding(6, category="bug"), finding(7, fix="x"), finding(8)]),
    "not an object": _with([finding(1), "a finding", 3, None, [finding(2)]]),
    "indented": json.dumps(response(findings=[finding(1), BAD]), indent=2).encode(),
    "nested failing value": _with([finding(1), finding(2, title={"a": [[[1]]]})]),
    "open top member": _with([BAD], meta={"a": {"b": [1]}}),
}
DECLINED = {
    "five failing": _with([BAD, BAD, BAD, BAD, BAD, finding(9)]),
    "malformed after the failure": _with([BAD, finding(3)])[:-3] + b"} x]}",
    "failing top level": _with([BAD], summary=3),
    "escaped key": _with([BAD]).replace(b'"findings"', b'"find\\u0069ngs"'),
}


@pytest.mark.parametrize("name", sorted(SPLICED))
def test_splicer_takes_clean_defects(parser: Parser, name: str) -> None:
    both = _both(parser, SPLICED[name])
    assert both is not None, name
    spliced, itemwise = both
    assert spliced is not None and itemwise is not None
    assert _comparable(spliced) == _comparable(itemwise)


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_splicer_declines_what_it_cannot_vouch_for(parser: Parser, name: str) -> None:
    both = _both(parser, DECLINED[name])
    assert both is None or both[0] is None, name


def test_splicer_declines_str_bounded_findings_and_without_speedups(parser: Parser) -> None:
    fast = parser._guess
    assert fast is not None
    data = SPLICED["middle"]
    with pytest.raises(msgspec.ValidationError) as raised:
        fast.typed.decode_response(data)
    depth = parser._limits.max_depth
    assert parser._splicer.read(fast, data, raised.value, depth, None) is not None
    assert parser._splicer.read(fast, data.decode(), raised.value, depth, None) is None
    assert splice.Splicer("findings", speedups=False).read(fast, data, raised.value, depth, None) is None
    bounded = Parser(load_contract(ROOT, "code-review-findings"))
    assert all(f is None or f.typed.items_bounded for f in bounded._fast.values())


def test_parser_outcomes_are_the_same_without_the_splicer(parser: Parser) -> None:
    """The parser with the splicer against one whose splicer always declines (the itemwise reader then reads)."""
    plain = Parser(load_contract(ROOT, "review-result"))
    plain._splicer = splice.Splicer("findings", speedups=False)
    cases = [(data, changed) for data, changed in _corpus(3000, seed=29)]
    cases += [(data, CHANGED) for data in (*SPLICED.values(), *DECLINED.values())]
    for data, changed in cases:
        for given_text in (data, data.decode()):
            got, want = parser.parse(given_text, ChangedFiles(changed)), plain.parse(given_text, ChangedFiles(changed))
            assert _summary(got) == _summary(want), given_text
