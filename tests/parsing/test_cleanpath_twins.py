"""The clean path's C shortcuts against the Python code they skip: ChangedFiles' quick test of already-normal
paths, and the placement check's string and line comparisons."""

from __future__ import annotations

import json
import pickle
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptops import ChangedFiles
from promptops.parsing import reconcile
from promptops.parsing.typed import UNSET

_SLOTS = ("paths", "listed", "listed_plain", "normal", "normal_plain")
_PIECES = ["a", "b.py", ".", "..", "", ".git", "x.", "/", "\\", "c\\d", "é", "./", "//", "/abs", "a/../b", "\u2028"]


class _Str(str):
    """A str subclass: the C shortcuts leave it to the Python code."""


def _views(changed: ChangedFiles) -> dict[str, Any]:
    return {name: getattr(changed, name) for name in _SLOTS} | {"len": len(changed), "repr": repr(changed)}


def _python_only(paths: list[Any]) -> ChangedFiles:
    """ChangedFiles built by the pure-Python constructor (reconcile._Views), whatever the base in use."""
    changed = ChangedFiles.__new__(ChangedFiles)
    reconcile._Views.__init__(changed, paths)
    return changed


_path = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=4).map("".join),
    st.text(alphabet="ab./\\é", max_size=8),
    st.builds(_Str, st.sampled_from(["a.py", "b/c.py", "./d"])),
    st.sampled_from([1, None, b"a.py"]),
)


@settings(max_examples=800, deadline=None)
@given(st.lists(_path, max_size=6), st.lists(st.text(alphabet="ab./\\", max_size=6), max_size=3))
def test_changed_files_shortcut_matches_the_join_test(paths: list[Any], probes: list[str]) -> None:
    try:
        expected = _python_only(paths)
    except TypeError:
        with pytest.raises(TypeError):
            ChangedFiles(paths)
        return
    changed = ChangedFiles(paths)
    assert _views(changed) == _views(expected), paths
    assert _views(ChangedFiles(tuple(paths))) == _views(expected), paths
    assert _views(pickle.loads(pickle.dumps(changed))) == _views(expected), paths
    for probe in [*probes, *(p for p in paths if isinstance(p, str))]:
        assert (probe in changed) == (probe in expected), (paths, probe)


@pytest.mark.skipif(reconcile._plain_paths is None, reason="the C helpers are not built")
@pytest.mark.parametrize(
    ("paths", "plain"),
    [
        (["src/a.py", "b"], True),
        ([], False),
        (["./a"], False),
        (["a/../b"], False),
        (["a\\b"], False),
        (["/abs"], False),
        (["a/"], False),
        (["a//b"], False),
        ([".hidden"], False),
        (["a/.b"], False),
        (["ü/ß.py", "\U0001f600"], True),
        ([_Str("a")], False),
        ([1], False),
    ],
)
def test_plain_paths_answers(paths: list[Any], plain: bool) -> None:
    assert reconcile._plain_paths is not None
    assert reconcile._plain_paths(tuple(paths)) is plain


def _plain_expected(path: str) -> bool:
    return bool(path) and path[0] not in "/." and path[-1] != "/" and not any(s in path for s in ("\\", "//", "/."))


@pytest.mark.skipif(reconcile._plain_paths is None, reason="the C helpers are not built")
@pytest.mark.parametrize("length", range(1, 50))
def test_plain_paths_reads_long_paths_at_every_offset(length: int) -> None:
    """Paths long enough for the sixteen-byte steps, with each unwanted pair at every offset."""
    for fill in ("a", "é"):
        base = (fill + "b/c") * length
        base = base[:length]
        for where in range(length):
            for bad in ("\\", "//", "/.", "./", "a.", "/a"):
                path = base[:where] + bad + base[where:]
                assert reconcile._plain_paths is not None
                assert reconcile._plain_paths((path,)) is _plain_expected(path), path
                assert reconcile._plain_paths(("ok", path)) is _plain_expected(path), path


# Ids of every length around the C check's seven-byte shortcut, one-byte (é) and wider characters, near misses.
_IDS = ["F1", "F2", "G1", "F10", "é1", "F\U0001f600", "F1 ", "\x00", "F123456", "F1234567", "F123457", "F12345é"]
_LINES = st.one_of(st.integers(1, 40), st.integers(1, 2**70), st.sampled_from([2**30 - 1, 2**30, 2**30 + 1, 2**60]))


@pytest.mark.skipif(reconcile._plain_paths is None, reason="the C helpers are not built")
@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_IDS),
            st.sampled_from(["a.py", "b/c.py", "e\\f.py", "b/d.py", "é.py", "a.pz"]),
            _LINES,
            st.one_of(st.none(), _LINES),
        ),
        max_size=20,
    ),
    st.sampled_from([("a.py", "b/c.py"), ("a.py", "b/c.py", "é.py", "e\\f.py"), tuple(f"x/{n}.py" for n in range(40))]),
)
def test_native_placed_matches_its_twin(rows: list[tuple[str, str, int, int | None]], files: tuple[str, ...]) -> None:
    import msgspec

    from promptops.parsing.scan import native_placed
    from promptops.parsing.typed import UNSET
    from tests.parsing.test_speedup_twins import _typed

    assert native_placed is not None
    typed = _typed()
    changed = ChangedFiles(files)
    items = []
    for ident, path, line, end in rows:
        item: dict[str, Any] = {"id": ident, "severity": "low", "category": "test", "title": "t", "file": path}
        item |= {"line": line, "message": "m"} | ({} if end is None else {"end_line": end})
        items.append(msgspec.convert(item, typed.item_type))
    expected = typed.placed(items, changed)
    assert native_placed(items, *typed.place_fields, typed.listed(changed), UNSET) == expected, rows


@pytest.mark.skipif(reconcile._plain_paths is None, reason="the C helpers are not built")
def test_native_placed_tells_every_pair_of_ids() -> None:
    """Findings all in place, so only the ids decide: every pair (and triple) of ids, including those that
    differ in one character at any position, of one byte or more."""
    import itertools

    import msgspec

    from promptops.parsing.scan import native_placed
    from promptops.parsing.typed import UNSET
    from tests.parsing.test_speedup_twins import _typed

    assert native_placed is not None
    typed = _typed()
    changed = ChangedFiles(["a.py"])
    ids = [*_IDS, *(("F123456"[:i] + "X" + "F123456"[i + 1 :]) for i in range(7)), "X", "F12345", "F1234é"]
    for chosen in itertools.chain(itertools.combinations_with_replacement(ids, 2), itertools.combinations(ids, 3)):
        item = {"severity": "low", "category": "test", "title": "t", "file": "a.py", "line": 1, "message": "m"}
        items = [msgspec.convert(item | {"id": ident}, typed.item_type) for ident in chosen]
        expected = typed.placed(items, changed)
        assert native_placed(items, *typed.place_fields, typed.listed(changed), UNSET) == expected, chosen


@pytest.mark.skipif(reconcile._plain_paths is None, reason="the C helpers are not built")
def test_native_placed_tells_long_paths_apart_anywhere() -> None:
    """Paths of 1 to 30 characters that differ from a changed file in one character, at every position."""
    import msgspec

    from promptops.parsing.scan import native_placed
    from promptops.parsing.typed import UNSET
    from tests.parsing.test_speedup_twins import _typed

    assert native_placed is not None
    typed = _typed()
    for length in range(1, 31):
        listed = ("src/core/users/profile/views.py"[-length:], "é" * length)
        changed = ChangedFiles(listed)
        for base in listed:
            for where in range(length):
                variant = base[:where] + ("X" if base[where] != "X" else "Y") + base[where + 1 :]
                for path in (base, variant):
                    item = {"id": "F1", "severity": "low", "category": "test", "title": "t", "file": path}
                    items = [msgspec.convert(item | {"line": 1, "message": "m"}, typed.item_type)]
                    # C first: the reference hashes the strs, and known hashes would tell them apart anyway
                    native = native_placed(items, *typed.place_fields, typed.listed(changed), UNSET)
                    assert native == typed.placed(items, changed), path


@settings(max_examples=1500, deadline=None)
@given(
    st.text(alphabet='{}[]"\\ a:,é\u0100\U0001f600', max_size=40),
    st.integers(0, 45),
)
def test_native_span_end_matches_its_twin_for_every_kind(text: str, start: int) -> None:
    from promptops.parsing.jsontext import _span_end
    from promptops.parsing.scan import native_span_end

    if native_span_end is None:
        pytest.skip("the C helpers are not built")
    for variant in (text, text.replace("é", "e").replace("\u0100", "a").replace("\U0001f600", "b")):
        if start < len(variant) and variant[start] in "{[":
            assert native_span_end(variant, start) == _span_end(variant, start), (variant, start)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(alphabet=' a:\\"é\u2028\t', max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.lists(st.tuples(st.text(alphabet=' b:é\\"', max_size=3), inner), max_size=3)
    ),
    max_leaves=12,
)


def _members_and_edges(value: Any) -> tuple[int, bool]:
    """Object members at any depth, and whether some string (key or value) has whitespace at an edge."""
    if isinstance(value, str):
        return 0, value.strip() != value
    if isinstance(value, list) and all(isinstance(p, tuple) for p in value) and value:  # an object, as pairs
        total, edgy = len(value), False
        for key, member in value:
            count, inner = _members_and_edges(member)
            total, edgy = total + count, edgy or inner or key.strip() != key
        return total, edgy
    if isinstance(value, list):
        results = [_members_and_edges(v) for v in value]
        return sum(r[0] for r in results), any(r[1] for r in results)
    return 0, False


def _dump(value: Any, indent: int | None, ascii_only: bool) -> str:
    if isinstance(value, list) and all(isinstance(p, tuple) for p in value) and value:
        sep = ",\n" if indent else ", "
        inner = sep.join(f"{json.dumps(k, ensure_ascii=ascii_only)}: {_dump(v, indent, ascii_only)}" for k, v in value)
        return "{" + inner + "}"  # keys may repeat: written as pairs
    if isinstance(value, list):
        return "[" + ", ".join(_dump(v, indent, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


@pytest.mark.skipif(reconcile._plain_paths is None, reason="the C helpers are not built")
@settings(max_examples=1500, deadline=None)
@given(_JSON, st.sampled_from([None, 2]), st.booleans())
def test_native_members_counts_members_or_finds_edges(value: Any, indent: int | None, ascii_only: bool) -> None:
    from promptops.parsing.scan import native, native_members

    assert native_members is not None and native is not None
    text = _dump(value, indent, ascii_only)
    members, edgy = _members_and_edges(value)
    for data in (text, text.encode()):
        assert native_members(data) == (-1 if edgy else members), text
        if native(data):  # the full gate passes only where the count does
            assert native_members(data) == members


def _finding(index: int, **extra: Any) -> dict[str, Any]:
    item = {"id": f"F{index}", "severity": "low", "category": "test", "title": "t", "file": "a.py", "line": 3}
    return item | {"message": "m"} | extra


_RESPONSES = [
    {"schema_version": "1.0", "prompt_version": "1.0.0", "findings": []},
    {"schema_version": "1.0", "prompt_version": "1.0.0", "findings": [_finding(1), _finding(2, end_line=4)]},
    {"schema_version": "1.0", "prompt_version": "1.0.0", "summary": "s", "findings": [_finding(1)], "meta": {}},
    {
        "schema_version": "1.0",
        "prompt_version": "1.0.0",
        "findings": [_finding(1, suggestion=None)],
        "meta": {"a": {"b": [1, {"c": {}}]}, "d": [[{"e": 1, "f": 2}]]},
    },
]


def _repeat_first_key(text: str, key: str) -> str:
    return text.replace(f'"{key}": ', f'"{key}": "x", "{key}": ', 1)


@pytest.mark.parametrize("body", _RESPONSES)
def test_the_count_gate_reads_like_the_diagnostic_path(body: dict[str, Any]) -> None:
    """Repeated keys at every depth, escaped spellings of keys, colons in strings: the fast path's member
    count must decline exactly where the outcome would differ."""
    from promptops import Parser, load_contract
    from promptops.parsing.scan import native_decoded_members
    from tests.parsing.invariants import _summary
    from tests.parsing.test_speedup_twins import ROOT, _typed

    contract = load_contract(ROOT, "review-result")
    parsers = [Parser(contract), Parser(contract, speedups=False)]
    slow = Parser(contract, fast_path=False)
    changed = ChangedFiles(["a.py"])
    text = json.dumps(body)
    variants = [text, json.dumps(body, indent=2), text.replace('"title": "t"', '"title": "a: b"')]
    variants += [_repeat_first_key(text, key) for key in ("summary", "id", "title", "a", "e", "c", "meta")]
    variants += [text.replace('"file"', '"\\u0066ile"'), text.replace('"a"', '"\\u0061"', 1)]
    variants += [text.replace('"file": "a.py"', '"file": "a.py", "file": "a.py"')]
    variants += [text.replace('{"e": 1', '{"e": 1, "e": 1')]
    typed = _typed()
    for variant in variants:
        expected = _summary(slow.parse(variant, changed))
        for parser in parsers:
            assert _summary(parser.parse(variant, changed)) == expected, variant
        try:
            obj = typed.decode_response(variant)
        except Exception:
            continue
        if native_decoded_members is not None:
            assert native_decoded_members(obj, *typed.member_slots, UNSET) == typed.members(obj)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(["<think>", "</think>", "<THINK>", "</Think>", "<thi", "nk>", "<", "a", "{}", "\n"])))
def test_dropping_think_blocks_in_ascii_matches_the_regex(parts: list[str]) -> None:
    from promptops.parsing.thinking import drop_thinking_ascii, drop_thinking_re

    text = "".join(parts)
    assert drop_thinking_ascii(text) == drop_thinking_re(text), text


class _Item(msgspec.Struct, kw_only=True, gc=False):
    a: Any = UNSET
    b: Any = UNSET
    c: Any = UNSET


class _Top(msgspec.Struct, kw_only=True, gc=False):
    items: Any = UNSET
    meta: Any = UNSET


_SCALAR = st.sampled_from([UNSET, 1, "s", None, True])
_NESTED = st.recursive(
    _SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["k", "l"]), inner, max_size=2)
        | st.builds(_Item, a=inner, b=inner, c=inner)
    ),
    max_leaves=10,
)


@pytest.mark.skipif(reconcile._plain_paths is None, reason="the C helpers are not built")
@settings(max_examples=1500, deadline=None)
@given(st.lists(st.builds(_Item, a=_NESTED, b=_NESTED, c=_NESTED) | _NESTED, max_size=4), _NESTED, st.booleans())
def test_decoded_members_counts_any_nesting(items: list[Any], meta: Any, by_name: bool) -> None:
    """Findings whose slots hold lists, dicts and findings at any depth (no contract has such findings yet), their
    slots given as descriptors (read at offsets in C) or as names: the C count is TypedShape.members."""
    from types import SimpleNamespace

    from promptops.parsing.scan import native_decoded_members
    from promptops.parsing.typed import TypedShape

    assert native_decoded_members is not None
    item_slots: tuple[Any, ...] = ("a", "b", "c") if by_name else (_Item.a, _Item.b, _Item.c)
    slots = ((_Top.items, _Top.meta), _Item, item_slots)
    obj = _Top(items=items, meta=meta)
    expected = TypedShape.members(SimpleNamespace(member_slots=slots), obj)  # type: ignore[arg-type]
    assert native_decoded_members(obj, *slots, UNSET) == expected
