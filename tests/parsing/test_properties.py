"""Property tests: over arbitrary text, arbitrary JSON and near-valid responses, every invariant holds and the
fast and diagnostic paths agree exactly."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptops import Contract
from tests.helpers import CHANGED
from tests.parsing.invariants import Checker

SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def checker(contract: Contract) -> Checker:
    return Checker(contract)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)

ODD_VALUES = st.sampled_from(
    [
        "",
        " ",
        " x ",
        "High",
        "high",
        "42",
        " 7 ",
        "4.0",
        "-1",
        "0",
        "1e2",
        "\u0663",
        "src\\api\\users.py",
        "./src/api/users.py",
        "/src/api/users.py",
        "other.py",
        "src/api/users.py",
        "F1",
        4.0,
        4.5,
        -1,
        0,
        1,
        10**20,
        None,
        True,
        False,
        [],
        {},
        ["x"],
        {"a": 1},
    ]
)
FIELDS = [
    "id",
    "severity",
    "category",
    "title",
    "file",
    "line",
    "end_line",
    "message",
    "suggestion",
    "confidence",
    "rule_id",
    "fix_hint",
]


@st.composite
def findings(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 9)) == 0:
        return draw(json_values)
    item: dict[str, Any] = {
        "id": draw(st.sampled_from(["F1", "F2", "F3", " F1 ", ""])),
        "severity": draw(st.sampled_from(["critical", "high", "medium", "low", "info"])),
        "category": draw(st.sampled_from(["correctness", "security", "style", "test"])),
        "title": "A title",
        "file": draw(st.sampled_from([*CHANGED, "./src/api/users.py", "src\\auth\\login.py", "elsewhere.py"])),
        "line": draw(st.integers(1, 60)),
        "message": "Something: wrong",
    }
    if draw(st.booleans()):
        item["end_line"] = draw(st.integers(1, 80))
    for _ in range(draw(st.integers(0, 3))):
        field = draw(st.sampled_from(FIELDS))
        if draw(st.booleans()):
            item.pop(field, None)
        else:
            item[field] = draw(ODD_VALUES)
    return item


@st.composite
def responses(draw: st.DrawFn) -> str:
    body: dict[str, Any] = {
        "schema_version": draw(st.sampled_from(["1.0", "1.0", "1.3", "2.0", " 1.0", "1", 1.0])),
        "prompt_version": draw(st.sampled_from(["1.0.0", "1.0.0", "1.0", "1.0.1", "1.1.0"])),
        "findings": draw(st.lists(findings(), max_size=6)),
    }
    if draw(st.booleans()):
        body["summary"] = draw(st.sampled_from(["ok", " padded ", "", 3]))
    if draw(st.integers(0, 4)) == 0:
        body["meta"] = draw(json_values)
    if draw(st.integers(0, 6)) == 0:
        body[draw(st.sampled_from(["verdict", "findings", "summary"]))] = draw(ODD_VALUES)
    keys = list(body)
    order = draw(st.permutations(keys))
    text = json.dumps({k: body[k] for k in order}, indent=draw(st.sampled_from([None, 2])))
    shape = draw(st.integers(0, 9))
    if shape == 0:
        text = f"```json\n{text}\n```"
    elif shape == 1:
        text = text[: draw(st.integers(0, len(text)))]
    elif shape == 2:
        text = text[:-1] + ', "summary": "dup"}'
    return text


@SETTINGS
@given(st.text(max_size=300))
def test_arbitrary_text(checker: Checker, text: str) -> None:
    checker.check(text, CHANGED)


@SETTINGS
@given(st.binary(max_size=300))
def test_arbitrary_bytes(checker: Checker, data: bytes) -> None:
    checker.check(data, CHANGED)


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
@SETTINGS
@given(json_values)
def test_arbitrary_json(checker: Checker, value: Any) -> None:
    checker.check(json.dumps(value), CHANGED)


@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(responses())
@pytest.mark.slow  # many generated responses
def test_near_valid_responses(checker: Checker, text: str) -> None:
    checker.check(text, CHANGED)


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
@SETTINGS
@given(responses(), st.lists(st.sampled_from([*CHANGED, "./src/api/users.py", "/abs.py", "a/../b.py"]), max_size=4))
def test_any_changed_files(checker: Checker, text: str, changed: list[str]) -> None:
    checker.check(text, changed)
