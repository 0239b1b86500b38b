"""_place.itemwise (the itemwise reader's top-level dict and per-finding loop in C) against its Python reference
itemwise._python_read, and read_itemwise with it against read_itemwise without it: the same top level, the same
findings in the same order, the same repeats, Documents and exceptions, for clean, failing, edge-whitespace,
repeated-key, deep and escaped findings, as bytes and as str; and references counted exactly."""

from __future__ import annotations

import contextlib
import gc
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptops import ChangedFiles, Parser, load_contract
from promptops.parsing import itemwise, scan
from promptops.parsing.fastpath import FastPath
from promptops.parsing.jsontext import Document
from tests.helpers import CHANGED, finding
from tests.parsing.invariants import _summary

pytestmark = pytest.mark.skipif(
    scan.native_itemwise is None or scan.native is None, reason="the C helpers are not built"
)

ROOT = Path(__file__).resolve().parents[2]
_DEPTHS = [0, 1, 2, 3, 4, 5, 8, 64, 2**70]


def _fast() -> FastPath:
    parser = Parser(load_contract(ROOT, "review-result"))
    fast = parser._fast["1.0"]
    assert fast is not None
    return fast


_FAST = _fast()


def _finding_text(kind: str, index: int) -> str:
    """One finding's JSON text of the given kind."""
    plain = json.dumps(finding(index))
    if kind == "clean":
        return plain
    if kind == "enum":  # typed decoding fails, the scan is clean
        return json.dumps(finding(index, severity="urgent"))
    if kind == "edge":  # the scan fails (whitespace at a string's edge), typed decoding would pass
        return json.dumps(finding(index, title=" padded title "))
    if kind == "edge_enum":
        return json.dumps(finding(index, title="padded ", severity="urgent"))
    if kind == "repeat":  # a repeated key: the scan fails and a member is lost
        return plain.replace('"title": ', '"title": "first", "title": ', 1)
    if kind == "repeat_deep":
        return json.dumps(finding(index, extra={"a": 1})).replace('"a": 1', '"a": 1, "a": 2')
    if kind == "escaped":  # a colon written as an escape: the colon counts cannot vouch for it
        return plain.replace("query;", "query\\u003a", 1)
    if kind == "colons":
        return json.dumps(finding(index, message="a: b: c:: d", title="t:"))
    if kind == "deep":  # nests beyond small depth limits
        return json.dumps(finding(index, extra=[[[[{"a": [[1]]}]]]]))
    if kind == "deep_edge":
        return json.dumps(finding(index, title=" x", extra=[[[[1]]]]))
    if kind == "brackets":  # many brackets inside strings, none nesting
        return json.dumps(finding(index, message="[[[[{{{{" * 4))
    if kind == "unicode":
        return json.dumps(finding(index, title="Требуется проверка ☃"), ensure_ascii=False)
    if kind == "null":
        return "null"
    if kind == "number":
        return "5"
    if kind == "string":
        return '" s "'
    if kind == "list":
        return "[[[[[]]]]]"
    if kind == "empty":
        return "{}"
    raise AssertionError(kind)


_KINDS = [
    "clean", "enum", "edge", "edge_enum", "repeat", "repeat_deep", "escaped", "colons", "deep", "deep_edge",
    "brackets", "unicode", "null", "number", "string", "list", "empty",
]  # fmt: skip
_TOPS = ["plain", "edge_summary", "colon_summary", "escaped_summary", "repeat_top", "meta", "meta_repeat"]


def _document_text(kinds: list[str], top: str) -> str:
    findings = ", ".join(_finding_text(kind, index) for index, kind in enumerate(kinds, 1))
    summary = {"edge_summary": " Reviewed. ", "colon_summary": "a: b"}.get(top, "Reviewed the change.")
    head = f'"schema_version": "1.0", "prompt_version": "1.0.0", "summary": {json.dumps(summary)}'
    if top == "escaped_summary":
        head = head.replace("Reviewed", "Reviewed\\u003a")
    if top == "repeat_top":
        head = head.replace('"summary": ', '"summary": "x", "summary": ')
    if top == "meta":
        head += ', "meta": {"model": "m", "tokens": [1, {"a": "b:c"}]}'
    if top == "meta_repeat":
        head += ', "meta": {"a": 1, "a": 2}'
    return "{" + head + f', "findings": [{findings}]' + "}"


def _key(document: Document | None) -> Any:
    """Everything a Document holds, in order (repr shows the typed findings' fields and the dicts' order)."""
    if document is None:
        return None
    return repr(document), list(document.value), document.item_duplicates, document.checked_versions


@contextlib.contextmanager
def _without_c_loop() -> Iterator[None]:
    """read_itemwise runs the Python loop (as when the extension is not built)."""
    setattr(itemwise, "native_itemwise", None)  # noqa: B010
    try:
        yield
    finally:
        setattr(itemwise, "native_itemwise", scan.native_itemwise)  # noqa: B010


def _read(data: bytes | str, max_depth: int, whole_clean: bool | None, native: bool) -> Any:
    with contextlib.nullcontext() if native else _without_c_loop():
        try:
            return _key(itemwise.read_itemwise(_FAST, data, max_depth, None, whole_clean))
        except Exception as exc:  # both must raise alike
            return type(exc), str(exc)


def _raws(data: bytes | str) -> list[Any]:
    raws = _FAST.typed.items(_FAST.typed.decode_envelope(data))
    assert type(raws) is list
    return raws


def _loop(
    native: bool,
    data: bytes | str,
    scanner: Callable[[Any], Any] | None,
    max_depth: Any,
    repeats: dict[int, str] | None = None,
    *,
    decode: Callable[[Any], Any] | None = None,
    bound: tuple[Any, ...] | None = None,
    items_of: Callable[[Any], Any] | None = None,
    fields: Any = None,
) -> Any:
    """The C call (native) or its Python reference on ``data``'s envelope, with the typed shape's own getters
    and decoder unless given others."""
    typed = _FAST.typed
    reader = scan.native_itemwise if native else itemwise._python_read
    assert reader is not None
    return reader(
        itemwise._BOUND if bound is None else bound,
        typed.top_fields if fields is None else fields,
        typed.decode_envelope(data),
        items_of or typed.items,
        decode or typed.decode_item,
        scanner,
        data,
        {} if repeats is None else repeats,
        max_depth,
    )


def _direct(data: bytes | str, max_depth: Any, scanner: Callable[[Any], Any] | None, **swap: Any) -> tuple[Any, Any]:
    """(C answer, Python answer), each with the repeats it noted (an error as its type and message)."""
    answers: list[Any] = []
    for native in (True, False):
        repeats: dict[int, str] = {}
        try:
            answers.append((repr(_loop(native, data, scanner, max_depth, repeats, **swap)), repeats))
        except Exception as exc:
            answers.append((type(exc), str(exc), repeats))
    return answers[0], answers[1]


_kinds = st.lists(st.sampled_from(_KINDS), max_size=7)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_kinds, st.sampled_from(_TOPS), st.booleans(), st.sampled_from(_DEPTHS[:-1]))
def test_read_itemwise_is_the_same_with_and_without_the_c_loop(
    kinds: list[str], top: str, as_bytes: bool, max_depth: int
) -> None:
    text = _document_text(kinds, top)
    data: bytes | str = text.encode() if as_bytes else text
    verdict = _FAST.verdict(data, _FAST.scan(data))
    for whole_clean in {verdict, False, True}:  # True also where the scan says otherwise: the loop trusts it
        assert _read(data, max_depth, whole_clean, True) == _read(data, max_depth, whole_clean, False), (
            text,
            whole_clean,
        )


@settings(max_examples=300, deadline=None)
@given(_kinds, st.sampled_from(_TOPS), st.booleans(), st.sampled_from(_DEPTHS))
def test_the_loop_matches_its_reference(kinds: list[str], top: str, as_bytes: bool, max_depth: int) -> None:
    text = _document_text(kinds, top)
    data: bytes | str = text.encode() if as_bytes else text
    for scanner in (None, scan.native):
        got, want = _direct(data, max_depth, scanner)
        assert got == want, (text, scanner, max_depth)


def test_the_routes_are_taken() -> None:
    """The inputs above reach every branch: typed, appended in C, handed to _failing, given up, repeats noted."""
    text = _document_text(["clean", "enum", "edge", "repeat", "escaped", "deep"], "plain")
    repeats: dict[int, str] = {}
    read = _loop(True, text.encode(), scan.native, 64, repeats)
    assert read is not None
    top, items, outside = read
    assert top == {"schema_version": "1.0", "prompt_version": "1.0.0", "summary": "Reviewed the change."}
    assert [type(item) is _FAST.typed.item_type for item in items] == [True, False, False, False, True, False]
    assert list(repeats) == [3]
    assert outside == -1  # the escaped finding's "\u003a"
    assert _loop(True, text, None, 4) is None  # too deep
    text = _document_text(["clean", "edge", "colons"], "colon_summary")
    read = _loop(True, text.encode(), scan.native, 64)
    assert read is not None and read[2] == text.count(":") - b"".join(_raws(text)).count(b":") == 5
    top = read[0]
    assert _loop(True, text, None, 4, items_of=lambda _: []) == (top, [], -1)
    assert _loop(True, text, scan.native, 4, items_of=lambda _: []) == (top, [], text.count(":"))
    assert _loop(True, text, None, 4, fields=[])[0] == {}


def test_str_and_bytes_read_alike() -> None:
    for kinds in (["clean", "edge", "unicode"], ["enum", "colons"], []):
        text = _document_text(kinds, "meta")
        read = _read(text, 64, False, True)
        assert read is not None and read == _read(text.encode(), 64, False, True)


def _raiser(exc: BaseException) -> Callable[..., Any]:
    def raise_it(*_: Any) -> Any:
        raise exc

    return raise_it


def _second_raises(exc: BaseException) -> Callable[[Any], Any]:
    """The typed decoder, except that it raises ``exc`` for the second finding (id F2)."""

    def decode(raw: Any) -> Any:
        if b'"F2"' in bytes(raw):
            raise exc
        return _FAST.typed.decode_item(raw)

    return decode


def test_decoding_errors_mark_the_finding_and_others_propagate() -> None:
    text = _document_text(["clean", "clean", "clean"], "plain").encode()
    for exc in [msgspec.DecodeError("x"), msgspec.ValidationError("x"), RecursionError(), UnicodeDecodeError(
        "utf-8", b"", 0, 1, "x"
    )]:  # fmt: skip
        got, want = _direct(text, 64, None, decode=_second_raises(exc))
        assert got == want
        assert "Finding(" in got[0] and got[0].count("Finding(") == 2  # the second was read plain
        assert sys.exc_info() == (None, None, None)
    for exc in [ValueError("not a decoding error"), KeyError("k"), MemoryError()]:
        got, want = _direct(text, 64, None, decode=_second_raises(exc))
        assert got == want == (type(exc), str(exc), {})
    # Errors of the getters, of the scanner, of the plain decoder, of _failing, of the encoder and of _outside
    # propagate.
    boom = _raiser(ValueError("boom"))
    edge = _document_text(["edge"], "plain")
    swaps: list[dict[str, Any]] = [{"fields": [("a", boom)]}, {"items_of": boom}, {}]
    for swap in swaps:
        assert _direct(edge.encode(), 64, boom, **swap) == ((ValueError, "boom", {}),) * 2
    repeat = _document_text(["repeat"], "plain")
    # (plain, failing, encode, outside_of): the data each reaches in C with (bytes: outside is counted in C)
    reaching: list[bytes | str] = [edge.encode(), repeat.encode(), edge.encode(), edge]
    for position, data in enumerate(reaching):
        bound = list(itemwise._BOUND)
        bound[position] = boom
        assert _direct(data, 64, scan.native, bound=tuple(bound))[0] == (ValueError, "boom", {}), position
    # Given a bad bound, fields that are not a list of pairs or findings that are not a list: TypeError.
    bad: list[dict[str, Any]] = [
        {"bound": itemwise._BOUND[:-1]},
        {"bound": (*itemwise._BOUND[:4], [], itemwise._BOUND[5])},
        {"fields": tuple(_FAST.typed.top_fields)},
        {"fields": [("a", len, 1)]},
        {"items_of": lambda _: ()},
    ]
    for swap in bad:
        with pytest.raises(TypeError):
            _loop(True, edge, None, 8, **swap)
    assert scan.native_itemwise is not None
    with pytest.raises(TypeError):
        scan.native_itemwise(itemwise._BOUND, [], None, len, len, None, b"", {})


def test_findings_without_a_buffer_are_left_to_python() -> None:
    """What the reference reads with bytes() and b"".join, the C loop leaves to it when it has no buffer."""
    text = _document_text(["enum", "edge"], "plain")
    strings = [bytes(raw).decode() for raw in _raws(text)]

    def decode(raw: Any) -> Any:
        raise msgspec.ValidationError("never typed")

    for scanner in (None, scan.native):
        got, want = _direct(text, 64, scanner, decode=decode)
        assert got == want
    # str findings: the plain decoder takes them, bytes() refuses them in both
    for data in (text, text.encode()):
        for native in (True, False):
            with pytest.raises(TypeError):
                _loop(native, data, None, 64, decode=decode, items_of=lambda _: list(strings))
            # typed "decoding" passes: b"".join refuses them when the colons outside are counted
            with pytest.raises(TypeError):
                _loop(native, data, _always, 64, decode=str, items_of=lambda _: list(strings))


def _always(_: Any) -> bool:
    return True


def test_the_parser_answers_alike_with_and_without_the_c_loop() -> None:
    contract = load_contract(ROOT, "review-result")
    native, python = Parser(contract), Parser(contract)
    changed = ChangedFiles(CHANGED)
    for kinds in ([], ["enum"], ["clean", "edge", "repeat"], ["escaped", "deep"], ["enum", "enum", "colons"]):
        for top in _TOPS:
            text = _document_text(kinds, top)
            for data in (text, text.encode()):
                outcome = native.parse(data, changed)
                with _without_c_loop():
                    expected = python.parse(data, changed)
                assert _summary(outcome) == _summary(expected), text


def test_the_loop_counts_references_exactly() -> None:
    texts = [_document_text(kinds, "meta") for kinds in (["clean", "enum", "edge", "repeat"], ["deep"], [])]
    inputs: list[bytes | str] = [*texts, *(t.encode() for t in texts)]
    typed = _FAST.typed
    prepared = [(data, typed.decode_envelope(data)) for data in inputs]
    watched: list[Any] = [itemwise._BOUND, *itemwise._BOUND, typed.top_fields, typed.items, typed.decode_item]
    watched += [scan.native, *inputs]
    for _, envelope in prepared:
        raws = typed.items(envelope)
        watched += [envelope, raws, *raws, *(getter(envelope) for _, getter in typed.top_fields)]

    def run(depth: int, rounds: int) -> None:
        reader = scan.native_itemwise
        assert reader is not None
        fields, items_of, decode = typed.top_fields, typed.items, typed.decode_item
        for _ in range(rounds):
            for data, envelope in prepared:
                for scanner in (None, scan.native):
                    reader(itemwise._BOUND, fields, envelope, items_of, decode, scanner, data, {}, depth)
                # errors on the way out: what was taken is given back
                boom = _raiser(ValueError("boom"))
                if items_of(envelope):
                    with pytest.raises(ValueError, match="boom"):
                        reader(itemwise._BOUND, fields, envelope, items_of, decode, boom, data, {}, 3)
                with pytest.raises(ValueError, match="boom"):
                    reader(itemwise._BOUND, fields, envelope, boom, decode, None, data, {}, 3)

    for depth in (3, 64):
        run(depth, 3)  # warm: caches, interned values
        gc.collect()  # a raised error's traceback and frame hold each other
        before = [sys.getrefcount(obj) for obj in watched]
        run(depth, 200)
        gc.collect()
        assert [sys.getrefcount(obj) for obj in watched] == before
