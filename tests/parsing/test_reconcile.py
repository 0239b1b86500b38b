"""Findings must name a changed file, after the same normalization on both sides."""

from __future__ import annotations

import json

import pytest

from promptops import ChangedFiles, Code, Parser
from promptops.parsing import normalize_repo_path
from tests.helpers import finding, response

NORMALIZE = [
    ("src/a.py", "src/a.py"),
    ("./src/a.py", "src/a.py"),
    ("././src/a.py", "src/a.py"),
    ("src/./a.py", "src/a.py"),
    ("src/a.py/.", "src/a.py"),
    ("/src/a.py", None),
    ("src/../src/a.py", None),
    ("../a.py", None),
    (".//a.py", None),
    ("", None),
    (".", None),
    ("a..b.py", "a..b.py"),
]


@pytest.mark.parametrize(("path", "normal"), NORMALIZE)
def test_normalization(path: str, normal: str | None) -> None:
    assert normalize_repo_path(path) == normal


MATCH = [
    ("src/api/users.py", ["src/api/users.py"], True),
    ("./src/api/users.py", ["src/api/users.py"], True),
    ("src/api/users.py", ["./src/api/users.py"], True),
    ("src/./api/users.py", ["src/api/users.py"], True),
    ("src\\api\\users.py", ["src/api/users.py"], True),  # separator coercion happens before reconciliation
    ("/src/api/users.py", ["src/api/users.py"], False),
    ("/src/api/users.py", ["/src/api/users.py"], False),
    ("src/../src/api/users.py", ["src/api/users.py"], False),
    ("SRC/api/users.py", ["src/api/users.py"], False),  # no case folding
    ("b/src/api/users.py", ["src/api/users.py"], False),  # no diff-prefix stripping
    ("caf\u00e9.py", ["cafe\u0301.py"], False),  # no Unicode normalization
    ("src/api/users.py", [], False),
]


@pytest.mark.parametrize(("path", "changed", "kept"), MATCH)
def test_reconciliation(both: Parser, path: str, changed: list[str], kept: bool) -> None:
    outcome = both.parse(json.dumps(response([finding(1, file=path)])), changed)
    assert outcome.findings_kept == (1 if kept else 0)
    if not kept:
        assert [d.code for d in outcome.diagnostics][-2:] == [Code.FILE_NOT_IN_CHANGED_FILES, Code.ALL_FINDINGS_DROPPED]


def test_kept_finding_keeps_its_path_as_written(both: Parser) -> None:
    outcome = both.parse(json.dumps(response([finding(1, file="./src/api/users.py")])), ["src/api/users.py"])
    assert outcome.result["findings"][0]["file"] == "./src/api/users.py"  # type: ignore[index]
    assert outcome.diagnostics == []


def test_changed_files_object_is_reusable_and_equivalent(both: Parser) -> None:
    changed = ChangedFiles(["src/api/users.py", "./src/auth/login.py"])
    body = json.dumps(response([finding(1), finding(2, file="src/auth/login.py"), finding(3, file="x.py")]))
    assert both.parse(body, changed).to_dict() == both.parse(body, list(changed.paths)).to_dict()
    assert "src/auth/login.py" in changed and "x.py" not in changed and 3 not in changed
