"""_place.accept (the fast path's accepted route in one C call) against FastPath.accept_reference, its Python
reference, and the parser with it against the parser without it: the same answer for clean responses, defects,
malformed texts and odd inputs; errors met inside it cleared, and references counted exactly."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from promptops import ChangedFiles, Parser, load_contract
from promptops.parsing import ParseOutcome, scan
from promptops.parsing.fastpath import FastPath
from tests.helpers import CHANGED, finding, response, text
from tests.parsing.invariants import _summary

pytestmark = pytest.mark.skipif(scan.native_accept is None, reason="the C helpers are not built")

ROOT = Path(__file__).resolve().parents[2]
_SLOTS = list(ParseOutcome.__slots__)


def _corpus(count: int, seed: int) -> list[tuple[bytes, list[str]]]:
    spec = importlib.util.spec_from_file_location("_bench_corpus_fused", ROOT / "benchmarks" / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return [(r.raw, list(r.changed_files)) for r in module.build(count, seed=seed)]


def _odd() -> Iterator[tuple[Any, list[str]]]:
    """Inputs around the edges of the accepted route, as bytes and as str."""
    ok = text(response())
    cases = [
        ok,
        f"  {ok}\n",
        ok.replace('"summary"', '"summary": "x", "summary"', 1),  # a repeated key
        ok.replace('"F2"', '"F1"'),  # repeated ids: accepted with a diagnostic
        ok.replace('"F2"', '" F2"'),  # edge whitespace in a string
        text(response(schema_version="1.1")),
        text(response(schema_version="9.9")),  # unknown versions
        text(response(prompt_version="0.0.1")),
        text(response(schema_version=" 1.0")),
        text(response(findings=[])),
        text(response(findings=[finding(1, file="nowhere.py")])),  # out of place
        text(response(findings=[finding(1, line=9, end_line=3)])),
        text(response(findings=[finding(1, end_line=99)])),
        text(response(meta={})),
        text(response(meta={"a": {"b": [1, {"c": 2}]}})),  # an open object to look into
        text(response(meta={"a": {"a": 1}})).replace('"a": 1', '"a": 1, "a": 2'),
        text(response(findings=[finding(i) for i in range(1, 40)])),
        text(response(findings=[finding(1), finding(2), finding(1)])),
        ok[:-1],  # truncated
        ok + "{}",
        ok + " x",
        "",
        "[]",
        "{}",
        "null",
        '{"schema_version": 1}',
        ok.replace("Reviewed", "Reviewed \\u0020"),
        # what the version peek reads when the guessed path declines
        text(response(schema_version="1.1", findings=[finding(1, severity="High")])),
        text(response(findings=[finding(1, file="nowhere.py")], schema_version="1.1")),
        ok.replace('"schema_version": "1.0"', '"schema_version" :\t"1.1"').replace('"high"', '"High"', 1),
        ok.replace('"schema_version": "1.0"', '"schema_version": "1.\\u0030"').replace('"high"', '"High"', 1),
        ok.replace('"summary"', '"x": {"schema_version": "1.1"}, "summary"', 1).replace('"high"', '"High"', 1),
        ok.replace('"summary"', '"schema_version": "1.1", "summary"', 1),  # repeated: the first one is read
        ok.replace('"Reviewed', '"schema_version\\": \\"1.1 Reviewed', 1).replace('"high"', '"High"', 1),
        '{"schema_version"schema_version": "1.1"}',
        '{"schema_version": "1.0\\", "schema_version": "1.1"}',
        '{"schema_version": "é\u3000", "a": 1}',
        '{"schema_version":\u3000"1.1", "schema_version"\x85: "1.0"}',
        '{"schema_version": "1.1',
    ]
    for case in cases:
        yield case, CHANGED
        yield case.encode(), CHANGED
        yield case.encode(), ["./" + CHANGED[0], "a\\b.py"]


def _same(got: Any, want: Any) -> None:
    assert type(got) is type(want), (got, want)
    if isinstance(got, ParseOutcome):
        assert isinstance(want, ParseOutcome)
        assert _summary(got) == _summary(want)
        assert got.result == want.result
        for name in _SLOTS:
            if name != "_typed":
                assert getattr(got, name) == getattr(want, name), name
    else:  # the count, what decoding returned or raised, the declared version, checked's answer
        assert type(got) is tuple and len(got) == len(want) == 4 and type(got[0]) is type(want[0]) is int
        assert got[0] == want[0] and type(got[1]) is type(want[1])
        if isinstance(got[1], BaseException):
            assert str(got[1]) == str(want[1])
        else:
            assert got[1] == want[1]
        assert type(got[2]) is type(want[2]) and got[2] == want[2]
        assert type(got[3]) is type(want[3]) and got[3] == want[3]


def _accept(fast: FastPath, raw: Any, changed: ChangedFiles) -> Any:
    assert scan.native_accept is not None and fast.accept_bound is not None
    return scan.native_accept(fast.accept_bound, raw, changed)


def test_accept_matches_its_reference() -> None:
    contract = load_contract(ROOT, "review-result")
    parser = Parser(contract)
    fasts = [f for f in parser._fast.values() if f is not None]
    assert fasts and all(f.accept_bound is not None for f in fasts)
    cold = [f for f in Parser(contract)._fast.values() if f is not None]  # nothing cached: only declines
    inputs = [*_corpus(3000, seed=5), *_odd()]
    accepted = 0
    for raw, paths in inputs:
        changed = ChangedFiles(paths)
        parser.parse(raw, changed)  # the versions cache learns what it declares
        for fast in [*fasts, *cold]:
            got, want = _accept(fast, raw, changed), fast.accept_reference(raw, changed)
            _same(got, want)
            accepted += isinstance(got, ParseOutcome)
    assert accepted > len(inputs) * 0.8  # the route is taken, not only declined


def test_the_parser_answers_alike_with_and_without_accept() -> None:
    contract = load_contract(ROOT, "review-result")
    fused, plain, python = Parser(contract), Parser(contract), Parser(contract, speedups=False)
    for fast in plain._fast.values():
        if fast is not None:
            fast.accept_bound = None
    for raw, paths in [*_corpus(1500, seed=9), *_odd()]:
        changed = ChangedFiles(paths)
        expected = _summary(python.parse(raw, changed))
        assert _summary(fused.parse(raw, changed)) == expected, raw
        assert _summary(plain.parse(raw, changed)) == expected, raw
        assert _summary(fused.parse(raw, paths)) == expected, raw  # changed files as a list


class _Changed(ChangedFiles):
    """A subclass whose view is computed: accept reads it by name, never from the slot."""

    __slots__ = ()

    @property
    def listed_plain(self) -> tuple[str, ...]:  # type: ignore[override]
        return ()


def test_a_changed_files_subclass_is_read_by_attribute() -> None:
    parser = Parser(load_contract(ROOT, "review-result"))
    raw = text(response()).encode()
    assert parser.parse(raw, CHANGED).accepted
    fast = parser._guess
    assert fast is not None
    changed = _Changed(CHANGED)
    _same(_accept(fast, raw, changed), fast.accept_reference(raw, changed))
    assert _accept(fast, raw, changed)[3] == 1  # every finding out of place: declined after decoding


def _bound_with(fast: FastPath, **swap: Any) -> tuple[Any, ...]:
    names = ["count", "decode", "versions", "versions_ok", "items", "changed_type", "listed", "plan", "open_probe"]
    names += ["duplicate_ids", "cls", "peek"]
    assert fast.accept_bound is not None
    bound = list(fast.accept_bound)
    for name, value in swap.items():
        bound[names.index(name)] = value
    return tuple(bound)


def _raiser(exc: BaseException) -> Any:
    def raise_it(*_: Any) -> Any:
        raise exc

    return raise_it


def test_errors_inside_accept_are_cleared_and_declined() -> None:
    assert scan.native_accept is not None
    parser = Parser(load_contract(ROOT, "review-result"))
    raw = text(response(findings=[finding(1), finding(1)])).encode()  # repeated ids: duplicate_ids is called
    assert parser.parse(raw, CHANGED).accepted
    fast = parser._guess
    assert fast is not None
    changed = ChangedFiles(CHANGED)
    count = fast.scan(raw)
    assert isinstance(_accept(fast, raw, changed), ParseOutcome)
    errors = [msgspec.DecodeError("bad"), msgspec.ValidationError("bad"), RecursionError(), ValueError("x")]
    assert fast.accept_bound is not None
    decoded = fast.accept_bound[1](raw)
    for error in errors:
        bound = _bound_with(fast, decode=_raiser(error))
        handed = scan.native_accept(bound, raw, changed)
        assert handed[0] == count and handed[1] is error and error.__traceback__ is not None
        assert handed[2:] == ("1.0", None)
        assert sys.exc_info() == (None, None, None)
        # declined after decoding: checked's answer (repeated ids) when it was asked before the error
        for role, placed in [("versions", None), ("items", None), ("open_probe", 2), ("duplicate_ids", 2)]:
            bound = _bound_with(fast, **{role: _raiser(error)})
            assert scan.native_accept(bound, raw, changed) == (count, decoded, "1.0", placed), role
            assert sys.exc_info() == (None, None, None)
    # A decoder returning something else than the Struct: its slots cannot be read, so it declines.
    odd = scan.native_accept(_bound_with(fast, decode=lambda _: {"a": 1}), raw, changed)
    assert odd == (count, {"a": 1}, "1.0", None)
    assert scan.native_accept(_bound_with(fast, versions_ok={}), raw, changed) == (count, decoded, "1.0", None)
    refused = {("1.0", "1.0.0"): False}
    assert scan.native_accept(_bound_with(fast, versions_ok=refused), raw, changed) == (count, decoded, "1.0", None)
    edged = raw.replace(b'"Reviewed', b'" Reviewed')  # whitespace at a string's edge: declined before decoding
    assert scan.native_accept(fast.accept_bound, edged, changed) == (fast.scan(edged), None, "1.0", None)
    assert fast.scan(edged) == -1
    # FastPath.parse answers a handed decoding error as its own (and raises any other).
    failing = raw[:-1]
    handed = scan.native_accept(fast.accept_bound, failing, changed)
    assert type(handed[1]) is msgspec.DecodeError
    assert fast.parse(failing, changed, 8, None, handed[0], handed[1]) == fast.parse(failing, changed, 8, None, count)
    with pytest.raises(ValueError, match="not a decoding error"):
        fast.parse(raw, changed, 8, None, count, ValueError("not a decoding error"))
    # The count's own error is raised, as the parser's own call of it would raise it.
    with pytest.raises(TypeError):
        scan.native_accept(fast.accept_bound, 12, changed)
    with pytest.raises(TypeError):
        scan.native_accept(fast.accept_bound[:-1], raw, changed)
    with pytest.raises(TypeError):
        scan.native_accept(_bound_with(fast, versions_ok=[]), raw, changed)
    for peek in [None, ("x", "x"), (b"", ""), (b'"a"',), (b'"a"', b'"a"')]:
        with pytest.raises(TypeError):
            scan.native_accept(_bound_with(fast, peek=peek), raw, changed)


def test_accept_counts_references_exactly() -> None:
    assert scan.native_accept is not None
    parser = Parser(load_contract(ROOT, "review-result"))
    inputs: list[bytes | str] = [text(response()).encode(), text(response(findings=[finding(1), finding(1)]))]
    inputs += [text(response(findings=[finding(1, file="x.py")])).encode(), b"{", text(response(meta={"a": 1}))]
    inputs += [text(response(summary=" edged")), text(response(findings=[finding(1, severity="High")])).encode()]
    changed = ChangedFiles(CHANGED)
    for raw in inputs:
        parser.parse(raw, changed)
    fast = parser._guess
    assert fast is not None and fast.accept_bound is not None
    watched = [changed, changed.listed_plain, fast.accept_bound, *fast.accept_bound, *inputs]
    before = [sys.getrefcount(obj) for obj in watched]
    for _ in range(200):
        for raw in inputs:
            scan.native_accept(fast.accept_bound, raw, changed)
    assert [sys.getrefcount(obj) for obj in watched] == before
    # Each piece of an accepted outcome is held as often as in the reference's outcome.
    for raw in inputs[:2]:
        got, want = scan.native_accept(fast.accept_bound, raw, changed), fast.accept_reference(raw, changed)
        assert isinstance(got, ParseOutcome) and isinstance(want, ParseOutcome)
        assert _references(got) == _references(want)
        assert json.loads(raw)["schema_version"] == got.schema_version


def _references(outcome: ParseOutcome) -> list[int]:
    typed, schema, diagnostics = outcome._typed, outcome.schema_version, outcome.diagnostics
    return [sys.getrefcount(x) for x in (outcome, typed, schema, outcome.prompt_version, diagnostics)]
