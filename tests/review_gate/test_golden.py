"""Golden tests: each fixture through the library, the in-process CLI and (for some) a real subprocess.

The three must give the same bytes, and those bytes must equal the golden file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from promptops.cli import run
from tests.review_gate.cases import BY_NAME, CASES, Case

UPDATE = os.environ.get("PROMPTOPS_UPDATE_GOLDEN") == "1"


def _golden_text(case: Case, produced: str) -> str:
    if UPDATE:
        case.golden.parent.mkdir(exist_ok=True)
        case.golden.write_text(produced + "\n", encoding="utf-8")
    return case.golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_library_matches_golden(case: Case) -> None:
    result = case.review()
    assert result.verdict.value == case.verdict
    assert result.exit_code == case.exit_code
    produced = result.dumps()
    assert _golden_text(case, produced) == produced + "\n"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_cli_prints_the_library_json(case: Case, capsys: pytest.CaptureFixture[str]) -> None:
    library = case.review().dumps()
    code = run(case.cli_args())
    out, err = capsys.readouterr()
    assert code == case.exit_code
    assert out == library + "\n"
    # Skipped warns on stderr, NotApplicable explains itself there; nothing else writes to stderr.
    if case.verdict == "Skipped":
        assert err.startswith("promptops: warning: review skipped: No consensus artifacts match")
    elif case.verdict == "NotApplicable":
        assert err == "promptops: note: Specify has no review checkpoint: Run /speckit.status or review Plan.\n"
    else:
        assert err == ""


@pytest.mark.parametrize(
    "name",
    ["conflict", "error_field_strict_warnings", "missing_artifacts_strict_artifacts", "custom_topology"],
)
def test_subprocess_output_is_byte_identical(name: str) -> None:
    """The real console entry point, run from inside the repo with the default --repo ."""
    case = BY_NAME[name]
    completed = subprocess.run(
        [sys.executable, "-m", "promptops", *case.cli_args(repo=".")],
        cwd=case.repo,
        capture_output=True,
        check=False,
        timeout=60,
    )
    assert completed.returncode == case.exit_code, completed.stderr
    assert completed.stdout == case.golden.read_bytes()
    assert completed.stdout == (case.review().dumps() + "\n").encode()


def test_golden_files_have_no_absolute_paths() -> None:
    for case in CASES:
        text = case.golden.read_text(encoding="utf-8")
        assert str(case.repo) not in text
        refs = json.loads(text)["evidence_refs"]
        for value in refs.values():
            for path in value if isinstance(value, list) else [value]:
                assert path is None or not path.startswith("/"), (case.name, path)


def test_every_golden_file_belongs_to_a_case() -> None:
    names = {path.stem for path in CASES[0].golden.parent.glob("*.json")}
    assert names == {case.name for case in CASES}
