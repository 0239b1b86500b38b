"""The clean path's C shortcuts against the Python code they skip: ChangedFiles' quick test of already-normal
paths, and the placement check's string and line comparisons."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptops import ChangedFiles
from promptops.parsing import reconcile

_SLOTS = ("paths", "listed", "listed_plain", "normal", "normal_plain")
_PIECES = ["a", "b.py", ".", "..", "", ".git", "x.", "/", "\\", "c\\d", "é", "./", "//", "/abs", "a/../b", "\u2028"]


class _Str(str):
    pass


def _views(changed: ChangedFiles) -> dict[str, Any]:
    return {name: getattr(changed, name) for name in _SLOTS} | {"len": len(changed), "repr": repr(changed)}


def _python_only(paths: list[Any], monkeypatch: pytest.MonkeyPatch) -> ChangedFiles:
    with monkeypatch.context() as patch:
        patch.setattr(reconcile, "_plain_paths", None)
        return ChangedFiles(paths)


_path = st.one_of(
    st.lists(st.sampled_from(_PIECES), max_size=4).map("".join),
    st.text(alphabet="ab./\\é", max_size=8),
    st.builds(_Str, st.sampled_from(["a.py", "b/c.py", "./d"])),
    st.sampled_from([1, None, b"a.py"]),
)


@settings(max_examples=800, deadline=None)
@given(st.lists(_path, max_size=6), st.lists(st.text(alphabet="ab./\\", max_size=6), max_size=3))
def test_changed_files_shortcut_matches_the_join_test(paths: list[Any], probes: list[str]) -> None:
    monkeypatch = pytest.MonkeyPatch()
    try:
        expected = _python_only(paths, monkeypatch)
    except TypeError:
        with pytest.raises(TypeError):
            ChangedFiles(paths)
        return
    finally:
        monkeypatch.undo()
    changed = ChangedFiles(paths)
    assert _views(changed) == _views(expected), paths
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


_LINES = st.one_of(st.integers(1, 40), st.integers(1, 2**70), st.sampled_from([2**30 - 1, 2**30, 2**30 + 1, 2**60]))


@pytest.mark.skipif(reconcile._plain_paths is None, reason="the C helpers are not built")
@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["F1", "F2", "G1", "F10", "é1", "F\U0001f600", "F1 "]),
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
