"""The C scanner against a plain reading of its contract, at every alignment of its 64-byte blocks."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from promptops.parsing import scan

pytestmark = pytest.mark.skipif(scan.native is None, reason="the C scanner is not built")


def native(data: str | bytes) -> bool:
    assert scan.native is not None
    return scan.native(data)


# Escapes (backslashes, quotes, \u), whitespace Python strips (ASCII and Unicode), multi-byte characters.
_CHARS = ["a", "b", ":", ",", "{", "]", "\\", '"', " ", "\t", "\n", "\u00a0", "\u2003", "\u0085", "\u00e9", "😀"]
_KEYS = ["a", "b", "id", "file", "long_key_name"]


def _expected(text: str) -> bool:
    """No string with whitespace at an edge, no object repeating a key (keys here are never escaped)."""
    clean = True

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal clean
        keys = [key for key, _ in items]
        clean = clean and len(set(keys)) == len(keys) and all(key.strip() == key for key in keys)
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
    return clean and walk(value)


def _string(rng: random.Random) -> str:
    return "".join(rng.choice(_CHARS) for _ in range(rng.choice([0, 1, 2, 3, 15, 16, 17, 63, 64, 65, 90])))


def _value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice([_string(rng), 7, None, True, "plain"])
    if roll < 0.6:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(_KEYS): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _repeat_a_key(text: str) -> str:
    return text[:-1] + ', "a": 1, "a": 2}' if text.endswith("}") and text != "{}" else text


def test_scanner_matches_its_contract_at_every_alignment() -> None:
    rng = random.Random(20261122)
    for _ in range(3000):
        value = _value(rng, 0)
        text = json.dumps(value, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 2]))
        for variant in (text, _repeat_a_key(text)):
            padded = " " * rng.randint(0, 70) + variant
            expected = _expected(padded)
            assert native(padded) is expected, padded
            assert native(padded.encode()) is expected, padded


@pytest.mark.parametrize("pad", range(0, 130, 7))
def test_escapes_and_repeats_across_block_edges(pad: int) -> None:
    for body in ["\\\\", '\\"', "\\n", "a\\\\", "\\u00a0", "\\u0041", "x\\\\\\\\"]:
        for template in ['{{"k": "{0}"}}', '["{0}", "{0}x", "x{0}"]']:
            text = " " * pad + template.format(body * 40)
            assert native(text) is _expected(text), text
    repeated = "{" + " " * pad + '"a": 1,' + " " * (pad % 67) + '"a": 2}'
    assert native(repeated) is False


@pytest.mark.skipif(scan.native_span_end is None, reason="the C scanner is not built")
def test_native_span_end_matches_its_twin() -> None:
    from promptops.parsing.jsontext import _span_end

    native_span_end = scan.native_span_end
    assert native_span_end is not None
    rng = random.Random(11)
    alphabet = ["{", "}", "[", "]", '"', "\\", "a", " ", ":", ",", "é", "ĳ", "\u20ac", "\U0001f600"]
    for _ in range(4000):
        text = "".join(rng.choice(alphabet[: rng.choice([10, 11, 13, 14])]) for _ in range(rng.randint(0, 40)))
        for start in [i for i, c in enumerate(text) if c in "{["] or [0]:
            assert native_span_end(text, start) == _span_end(text, start), (text, start)
    for _ in range(300):  # real documents, cut anywhere
        text = json.dumps(_value(rng, 0), ensure_ascii=rng.random() < 0.5)
        text = text[: rng.randint(0, len(text))]
        for start in [i for i, c in enumerate(text) if c in "{["][:5]:
            assert native_span_end(text, start) == _span_end(text, start), (text, start)
