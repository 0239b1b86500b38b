"""promptops.core.wording.count: the one way a number and its noun are written in messages (CLI and library)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from promptops.core.wording import count
from tests.helpers import REPO_ROOT

# (number, noun, plural, expected): the nouns are those the callers use (review gate, release, ingest, export,
# rates, validate, merge), each at 0, 1 and 2, plus the thousands separator and a noun that does not take an s.
CASES = [
    (0, "blocking signal", None, "0 blocking signals"),
    (1, "blocking signal", None, "1 blocking signal"),
    (2, "blocking signal", None, "2 blocking signals"),
    (0, "advisory signal", None, "0 advisory signals"),
    (1, "advisory signal", None, "1 advisory signal"),
    (2, "file", None, "2 files"),
    (1, "file", None, "1 file"),
    (0, "problem", None, "0 problems"),
    (1, "problem", None, "1 problem"),
    (2, "problem", None, "2 problems"),
    (9, "released file", None, "9 released files"),
    (1, "release", None, "1 release"),
    (14, "artifact", None, "14 artifacts"),
    (1, "re-ask run", None, "1 re-ask run"),
    (2, "jsonl file", None, "2 jsonl files"),
    (0, "more bad record", None, "0 more bad records"),
    (1, "unreadable record", None, "1 unreadable record"),
    (1, "reviewer output", None, "1 reviewer output"),
    (3, "reviewer output", None, "3 reviewer outputs"),
    (0, "duplicate", None, "0 duplicates"),
    (1, "finding", None, "1 finding"),
    (1_000, "bad record", None, "1,000 bad records"),
    (1_234_567, "response", None, "1,234,567 responses"),
    (-1, "response", None, "-1 responses"),
    (1, "entry", "entries", "1 entry"),
    (0, "entry", "entries", "0 entries"),
    (2, "entry", "entries", "2 entries"),
    (1_000, "analysis", "analyses", "1,000 analyses"),
]


@pytest.mark.parametrize(("number", "noun", "plural", "expected"), CASES)
def test_count(number: int, noun: str, plural: str | None, expected: str) -> None:
    assert count(number, noun, plural) == expected


def test_no_other_module_defines_a_plural_helper() -> None:
    """The rule lives in promptops/core/wording.py: a second ``plural``/``_plural`` elsewhere would drift from it."""
    names = {"plural", "_plural", "pluralize", "_pluralize"}
    found = [
        f"{path.relative_to(REPO_ROOT)}:{node.lineno} {node.name}"
        for path in sorted((REPO_ROOT / "promptops").rglob("*.py"))
        if path != REPO_ROOT / "promptops" / "core" / "wording.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name in names
    ]
    assert found == [], found


def test_the_cli_has_no_wording_module_of_its_own() -> None:
    assert not (Path(REPO_ROOT) / "promptops" / "cli" / "wording.py").exists()
