"""The results vocabulary is defined once: one Verdict, one ExitCode (promptops/core/outcomes.py), no ``to_json``, and
nothing reads a diagnostic's disposition back from its message text."""

from __future__ import annotations

import ast

from promptops.core.outcomes import ExitCode, Verdict, exit_code
from tests.helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "promptops"


def _offences(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ClassDef) and node.name in {"Verdict", "ExitCode"}:
            found.append(f"class {node.name}")
        elif isinstance(node, ast.FunctionDef) and node.name == "to_json":
            found.append("def to_json")
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant)
            and type(node.value.value) is int
            and any(
                isinstance(t, ast.Name) and t.id.removeprefix("EXIT_") in ExitCode.__members__ for t in node.targets
            )
        ):
            found.append("an exit code constant")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            read_back = node.func.attr in {"startswith", "removeprefix"}
            if read_back and any(isinstance(a, ast.Constant) and "finding dropped" in str(a.value) for a in node.args):
                found.append("a message prefix read back")
    return found


def _package_offences() -> dict[str, list[str]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "outcomes.py" and (offences := _offences(path.read_text(encoding="utf-8"))):
            found[path.relative_to(REPO_ROOT).as_posix()] = offences
    return found


def test_the_package_defines_the_vocabulary_once() -> None:
    assert _package_offences() == {}


def test_the_scan_sees_each_kind_of_second_definition() -> None:
    source = (
        "class Verdict: ...\nclass ExitCode: ...\nEXIT_FAILED = 2\n"
        "class R:\n    def to_json(self): ...\n"
        "m.startswith('finding dropped')\n"
    )
    assert sorted(_offences(source)) == [
        "a message prefix read back",
        "an exit code constant",
        "class ExitCode",
        "class Verdict",
        "def to_json",
    ]


def test_one_map_from_verdict_to_code() -> None:
    codes = {
        v: (exit_code(v), exit_code(v, strict_warnings=True), exit_code(v, strict_artifacts=True)) for v in Verdict
    }
    assert codes == {
        Verdict.PASSED: (0, 0, 0),
        Verdict.PASSED_WITH_WARNINGS: (0, 1, 0),
        Verdict.FAILED: (2, 2, 2),
        Verdict.ESCALATE: (2, 2, 2),
        Verdict.SKIPPED: (0, 0, 2),
        Verdict.NOT_APPLICABLE: (0, 0, 0),
    }
