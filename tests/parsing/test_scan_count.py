"""The scanner's member count (_scan.members) in both its builds: the one chosen for this CPU (AVX2 where it
can) and the portable one, against a plain reading of the contract and against each other, with strings,
escapes and multi-byte characters at every position relative to the 64-byte blocks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptops.parsing import scan

_scan = pytest.importorskip("promptops.parsing._scan", reason="the C scanner is not built")


def _expected(text: str) -> int:
    """Object members at any depth, or -1 when some string (key or value) has whitespace at an edge."""
    members = 0
    edgy = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal members, edgy
        members += len(items)
        edgy = edgy or any(key.strip() != key for key, _ in items)
        return dict(items)

    def walk(value: Any) -> bool:
        if isinstance(value, str):
            return value.strip() == value
        if isinstance(value, dict):
            return all(map(walk, value.values()))
        if isinstance(value, list):
            return all(map(walk, value))
        return True

    value = json.loads(text, object_pairs_hook=pairs)
    return -1 if edgy or not walk(value) else members


def _both(data: str | bytes) -> int:
    """The answer of both builds, which must agree."""
    chosen, portable = _scan.members(data), _scan.members_portable(data)
    assert chosen == portable, (data, chosen, portable)
    return int(chosen)


# Escapes (backslashes, quotes, \u), whitespace Python strips (ASCII and Unicode), multi-byte characters, colons.
_CHARS = st.sampled_from(["a", ":", "\\", '"', " ", "\t", "\n", "\u00a0", "\u2003", "\u0085", "é", "😀", "/", "x" * 20])
_STRING = st.lists(_CHARS, max_size=12).map("".join)
_JSON = st.recursive(
    st.one_of(_STRING, st.integers(-5, 5), st.none(), st.booleans()),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_STRING, inner, max_size=4),
    max_leaves=16,
)


def test_the_build_in_use_is_named() -> None:
    assert _scan.members_build in ("avx2", "portable")
    assert scan.native_members is None or scan.native_members is _scan.members


@settings(max_examples=2500, deadline=None)
@given(_JSON, st.integers(0, 130), st.sampled_from([None, 1]), st.booleans())
def test_both_builds_count_like_the_contract(value: Any, pad: int, indent: int | None, ascii_only: bool) -> None:
    text = " " * pad + json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    expected = _expected(text)
    assert _both(text) == expected, text
    assert _both(text.encode()) == expected, text


@settings(max_examples=2500, deadline=None)
@given(st.lists(st.sampled_from(['"', "\\", ":", " ", "a", "\n", "é", "\u3000", "{", "}", "x" * 31]), max_size=90))
def test_both_builds_agree_on_any_text(parts: list[str]) -> None:
    text = "".join(parts)
    _both(text)
    _both(text.encode())


@pytest.mark.parametrize("pad", range(140))
def test_escapes_and_edges_at_every_block_offset(pad: int) -> None:
    for body in ["\\\\", '\\"', "\\n", "a\\\\", "\\u00a0", "\\u0041", "x\\\\\\\\", "\\u2003", " ", "é", "\u3000"]:
        for template in ['{{"k": "{0}", "n:": 1}}', '["{0}", "{0}x", "x{0}", {{"{0}y": 2}}]']:
            for times in (1, 40):
                text = " " * pad + template.format(body * times)
                assert _both(text) == _expected(text), text
                assert _both(text.encode()) == _expected(text), text
